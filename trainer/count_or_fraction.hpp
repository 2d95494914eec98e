#pragma once

#include <concepts>
#include <cstdint>
#include <string>

namespace fulgur {

/// A number of batches given either as a count (`10`) or as a fraction of the
/// loader's length (`0.25`), as Lightning's limit_*_batches and
/// val_check_interval accept. Integers are counts, floating values fractions.
class CountOrFraction {
 public:
  template <std::integral Int>
  CountOrFraction(Int count) : value_(static_cast<double>(count)), is_fraction_(false) {}  // NOLINT: implicit by design
  CountOrFraction(double fraction) : value_(fraction), is_fraction_(true) {}              // NOLINT: implicit by design

  bool is_fraction() const { return is_fraction_; }
  double value() const { return value_; }
  int64_t count() const { return static_cast<int64_t>(value_); }
  std::string to_string() const;

  /// Batches to run out of a loader of `length`: min(count, length), or
  /// floor(fraction * length). Throws naming `option` when a positive
  /// fraction of a non-empty loader rounds down to no batch at all.
  int64_t limit(int64_t length, const char* option) const;

  bool operator==(const CountOrFraction&) const = default;

 private:
  double value_;
  bool is_fraction_;
};

}  // namespace fulgur
