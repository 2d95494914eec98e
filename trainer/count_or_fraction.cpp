#include <fulgur/trainer/count_or_fraction.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace fulgur {

std::string CountOrFraction::to_string() const {
  if (!is_fraction_) return fmt::format("{}", count());
  // A fraction always shows a decimal point, so "1.0" never reads back as a count.
  const std::string text = fmt::format("{}", value_);
  return text.find_first_of(".eEn") == std::string::npos ? text + ".0" : text;
}

int64_t CountOrFraction::limit(int64_t length, const char* option) const {
  if (!is_fraction_) return std::min(count(), length);
  const auto n = static_cast<int64_t>(value_ * static_cast<double>(length));
  if (n == 0 && value_ > 0.0 && length > 0) {
    throw std::invalid_argument(fmt::format("[CountOrFraction::limit] {}={} of {} batches is less than one batch",
                                            option, value_, length));
  }
  return n;
}

}  // namespace fulgur
