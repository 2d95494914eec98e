#include <fulgur/trainer/profilers/simple_profiler.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <stdexcept>

namespace fulgur {

void SimpleProfiler::start(const std::string& action) { started_[action].push_back(Clock::now()); }

void SimpleProfiler::stop(const std::string& action) {
  const auto now = Clock::now();
  auto found = started_.find(action);
  if (found == started_.end() || found->second.empty()) return;  // never started: nothing to time
  Entry& entry = entries_[action];
  entry.calls += 1;
  entry.total_s += std::chrono::duration<double>(now - found->second.back()).count();
  found->second.pop_back();
}

std::string SimpleProfiler::report() const {
  const double total = std::chrono::duration<double>(Clock::now() - created_).count();
  std::vector<std::pair<std::string, Entry>> rows(entries_.begin(), entries_.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.total_s > b.second.total_s; });
  size_t width = 6;
  for (const auto& [name, entry] : rows) width = std::max(width, name.size());
  std::string out = "Profiler Report\n\n";
  const std::string header = fmt::format("| {:<{}} | {:>17} | {:>9} | {:>14} | {:>12} |", "Action", width,
                                         "Mean duration (s)", "Num calls", "Total time (s)", "Percentage %");
  const std::string rule(header.size(), '-');
  out += rule + "\n" + header + "\n" + rule + "\n";
  out += fmt::format("| {:<{}} | {:>17} | {:>9} | {:>14.5f} | {:>12.1f} |\n", "Total", width, "-", "-", total, 100.0);
  out += rule + "\n";
  for (const auto& [name, entry] : rows) {
    out += fmt::format("| {:<{}} | {:>17.5g} | {:>9} | {:>14.5f} | {:>12.1f} |\n", name, width,
                       entry.total_s / static_cast<double>(entry.calls), entry.calls, entry.total_s,
                       total > 0 ? 100.0 * entry.total_s / total : 0.0);
  }
  out += rule + "\n";
  return out;
}

std::filesystem::path SimpleProfiler::write(const std::filesystem::path& dir, int64_t rank) {
  if (entries_.empty()) return {};
  const std::string text = report();
  std::filesystem::create_directories(dir);
  const auto path = rank_file(dir, "profile", ".txt", rank);
  std::ofstream out(path);
  out << text;
  if (!out) throw std::runtime_error(fmt::format("[SimpleProfiler] cannot write {}", path.string()));
  if (rank == 0) std::cout << text << "fulgur: profile written to " << path.string() << std::endl;
  return path;
}

}  // namespace fulgur
