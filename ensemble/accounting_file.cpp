#include <fulgur/ensemble/accounting_file.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace fulgur {

std::string AccountingFile::write(const std::filesystem::path& path, const std::map<uint64_t, EnsembleAccount>& totals,
                                  const std::map<std::string, int64_t>& refusals) {
  EnsembleAccount sum{0};
  int64_t no_goodbye = 0, lost = 0;
  std::ofstream csv(path);
  csv << "client,sent,received,refused,lost,trained,untrained,evicted_untrained,goodbye,numbered\n";
  for (const auto& [client, a] : totals) {
    csv << fmt::format("{},{},{},{},{},{},{},{},{},{}\n", client, a.sent < 0 ? "" : std::to_string(a.sent),
                       a.received, a.refused, a.lost(), a.trained, a.received - a.trained, a.evicted_untrained,
                       a.sent < 0 ? "no" : "yes", a.numbered);
    if (a.sent < 0) ++no_goodbye;
    sum.sent += std::max<int64_t>(a.sent, 0);
    sum.add_counts(a);
    lost += a.lost();
  }
  csv << fmt::format("total,{},{},{},{},{},{},{},{},\n", sum.sent, sum.received, sum.refused, lost, sum.trained,
                     sum.received - sum.trained, sum.evicted_untrained,
                     no_goodbye == 0 ? "all" : fmt::format("{} without", no_goodbye));
  csv.close();
  if (!csv) throw std::runtime_error("[EnsembleServer] cannot write " + path.string());
  std::vector<std::string> reasons;
  int64_t refused_messages = 0;
  for (const auto& [reason, count] : refusals) {
    reasons.push_back(fmt::format("{}: {}", reason, count));
    refused_messages += count;
  }
  return fmt::format("fulgur: ensemble: {} clients ({} without a goodbye): {} samples sent, {} received, {} "
                     "refused, {} lost, {} trained at least once; {} message(s) refused{}; {}",
                     totals.size(), no_goodbye, sum.sent, sum.received, sum.refused, lost, sum.trained,
                     refused_messages, reasons.empty() ? "" : fmt::format(" ({})", fmt::join(reasons, ", ")),
                     path.string());
}

}  // namespace fulgur
