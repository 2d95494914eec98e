#pragma once
// Small helpers the benchmark programs share: `--name value` flags and the
// median of repeated timings.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace fulgur::bench {

/// The value after `name` on the command line, or `fallback`.
inline std::string flag(int argc, char** argv, const char* name, const std::string& fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  }
  return fallback;
}

inline int64_t flag(int argc, char** argv, const char* name, int64_t fallback) {
  return std::stoll(flag(argc, argv, name, std::to_string(fallback)));
}

/// The upper median: the middle element, or the later of the two middle ones.
inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace fulgur::bench
