#include <fulgur/core/did_you_mean.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace fulgur {
namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), 0);
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string did_you_mean(const std::string& key, const std::vector<std::string>& candidates) {
  const std::string* best = nullptr;
  // Short keys: fewer edits than letters ("64" is not a typo of "32").
  size_t best_distance = std::min(std::max<size_t>(2, key.size() / 3), std::max<size_t>(key.size(), 1) - 1) + 1;
  for (const auto& candidate : candidates) {
    const size_t distance = edit_distance(key, candidate);
    if (distance < best_distance) {
      best = &candidate;
      best_distance = distance;
    }
  }
  return best == nullptr ? "" : fmt::format("; did you mean '{}'?", *best);
}

}  // namespace fulgur
