#pragma once
#include <fulgur/ensemble/ensemble_account.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

namespace fulgur {

/// run_dir/ensemble_accounting.csv: one row per client (sent, received,
/// refused, lost, trained, untrained, evicted_untrained, goodbye, numbered;
/// docs/ensemble.md) and a `total` row, from the accounts summed over the
/// ranks.
class AccountingFile {
 public:
  /// Writes `path`; returns the one-line summary the server logs (clients,
  /// samples, refusals by reason). std::runtime_error names a file it cannot write.
  static std::string write(const std::filesystem::path& path, const std::map<uint64_t, EnsembleAccount>& totals,
                           const std::map<std::string, int64_t>& refusals);
};

}  // namespace fulgur
