#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace fulgur {

/// A counter a loop keeps: `total` over the whole run, `current` since the
/// loop's last reset (its epoch). Saved in checkpoints for exact resume.
struct Progress {
  int64_t total = 0;
  int64_t current = 0;

  void increment() {
    ++total;
    ++current;
  }
  void reset_current() { current = 0; }

  std::map<std::string, int64_t> state_dict() const { return {{"total", total}, {"current", current}}; }
  void load_state_dict(const std::map<std::string, int64_t>& state) {
    total = state.at("total");
    current = state.at("current");
  }
};

}  // namespace fulgur
