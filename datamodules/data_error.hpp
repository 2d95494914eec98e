#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>

namespace fulgur {

/// Bad input data rather than a bad program: a missing folder, an empty
/// class folder, a missing, truncated or corrupt image. It is its own type
/// so the command line can report it as bad input (exit code 2), and it
/// stays a std::runtime_error for code that only knows the standard types.
/// Loader threads rethrow it unchanged in the consumer thread.
class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A path in single quotes, as DataError messages name files. Appended, not
/// `"'" + path.string()`: g++ 12 warns (-Wstringop-overflow, a false
/// positive) on a one-character literal before a temporary string.
inline std::string quoted(const std::filesystem::path& path) {
  std::string out;
  out.reserve(path.native().size() + 2);
  out += '\'';
  out += path.native();
  out += '\'';
  return out;
}

}  // namespace fulgur
