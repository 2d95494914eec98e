#pragma once
#include <cstdint>
#include <set>

namespace fulgur {

/// The messages of one client that a server rank holds, by the client's
/// number for them on that rank: every one numbered below `below`, and
/// those in `ahead` (arrived before an earlier one). What the rank
/// acknowledges (`below`), and how it knows a message sent again.
struct HeldMessages {
  uint64_t below = 0;
  std::set<uint64_t> ahead;

  bool holds(uint64_t message) const { return message < below || ahead.count(message) != 0; }
  void add(uint64_t message) {
    if (message != below) {
      ahead.insert(message);
      return;
    }
    ++below;
    while (!ahead.empty() && *ahead.begin() == below) {
      ahead.erase(ahead.begin());
      ++below;
    }
  }
};

}  // namespace fulgur
