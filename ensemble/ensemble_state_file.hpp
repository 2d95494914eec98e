#pragma once
#include <fulgur/ensemble/ensemble_account.hpp>
#include <fulgur/ensemble/held_messages.hpp>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

namespace fulgur {

/// One server rank's counts as text: each client's account, the refusals
/// by reason and which messages of each client the rank holds. It is what
/// the ranks gather at the end of a run (table()), and what a rank stopped
/// by a signal keeps on disk for the server that resumes the run
/// (run_dir/ensemble_state_rank<r>.txt):
///
///   # fulgur ensemble state 1          (the format's version)
///   a CLIENT SENT RECEIVED REFUSED TRAINED EVICTED NUMBERED RANKS
///   r REASON COUNT
///   d CLIENT BELOW AHEAD_COUNT M1 M2 ...
///   crc32 0123abcd                     (of every byte above this line)
///
/// The file is written to a temporary file beside it, flushed to disk and
/// renamed, so a kill leaves the old file or the new one, never half of
/// one; a file that is damaged, edited or of another version is refused
/// with one line naming it.
class EnsembleStateFile {
 public:
  static constexpr int kVersion = 1;

  std::map<uint64_t, EnsembleAccount> accounts;
  std::map<std::string, int64_t> refusals;
  std::map<uint64_t, HeldMessages> held;

  /// The 'a', 'r' and 'd' lines above.
  std::string table() const;
  /// Reads table() text ('#' lines skipped); std::invalid_argument names `where`, the line and what is wrong.
  static EnsembleStateFile parse(const std::string& text, const std::string& where);
  /// Writes `path` atomically; std::runtime_error names the file and the system's error.
  void write(const std::filesystem::path& path) const;
  /// Reads and checks `path` (version, checksum, every line); std::invalid_argument names the file.
  static EnsembleStateFile read(const std::filesystem::path& path);
};

}  // namespace fulgur
