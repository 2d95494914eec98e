#pragma once

// The checks an options field declares (see FULGUR_OPTIONS): each returns
// nothing when the value is fine, else the rule it breaks ("must be > 0"),
// which validate_options() completes into "[Options] name must be > 0, got -1".

#include <fulgur/core/did_you_mean.hpp>
#include <fulgur/core/option_enum.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <concepts>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace fulgur::check {

/// A value as messages and option tables show it.
template <class T>
std::string text(const T& value) {
  if constexpr (std::same_as<T, bool>) {
    return value ? "true" : "false";
  } else if constexpr (std::same_as<T, std::string>) {
    return value.empty() ? "\"\"" : value;
  } else if constexpr (requires { value.has_value(); }) {
    return value ? text(*value) : "null";
  } else if constexpr (requires { value.to_string(); }) {
    return value.to_string();
  } else if constexpr (std::is_enum_v<T>) {
    return to_string(value);  // an OptionEnum's name, or one declared beside the enum
  } else if constexpr (requires { typename T::mapped_type; }) {  // a std::map, as YAML writes it
    std::string items;
    for (const auto& [key, item] : value) items += (items.empty() ? "" : ", ") + text(key) + ": " + text(item);
    return "{" + items + "}";
  } else if constexpr (requires { value.begin(); }) {
    return fmt::format("[{}]", fmt::join(value, ", "));
  } else {
    return fmt::format("{}", value);
  }
}

using Result = std::optional<std::string>;

/// Runs `check` on `value`, or on what an optional field holds: an unset
/// optional (null) passes every check, so checks only see values.
template <class Check, class T>
Result apply(const Check& check, const T& value) {
  if constexpr (requires { value.has_value(); }) {
    return value ? check(*value) : std::nullopt;
  } else {
    return check(value);
  }
}

/// Anything goes.
struct Any {
  template <class T>
  Result operator()(const T&) const {
    return std::nullopt;
  }
};

/// A number > 0.
struct Positive {
  template <class T>
  Result operator()(const T& value) const {
    return value > 0 ? std::nullopt : Result("must be > 0");
  }
};

/// A number >= min.
struct AtLeast {
  double min;
  template <class T>
  Result operator()(const T& value) const {
    return static_cast<double>(value) >= min ? std::nullopt : Result(fmt::format("must be >= {}", min));
  }
};

/// A number in [min, max].
struct Between {
  double min;
  double max;
  template <class T>
  Result operator()(const T& value) const {
    const double v = static_cast<double>(value);
    return v >= min && v <= max ? std::nullopt : Result(fmt::format("must be in [{}, {}]", min, max));
  }
};

/// -1 (no limit, or all) or a number >= min.
struct NoLimitOrAtLeast {
  int64_t min;
  template <class T>
  Result operator()(const T& value) const {
    return value == -1 || value >= min ? std::nullopt : Result(fmt::format("must be -1 or >= {}", min));
  }
};

/// A string from a list known only at run time (a registry's names); a
/// fixed list is an enum (core/option_enum.hpp).
struct OneOf {
  std::vector<std::string> allowed;
  Result operator()(const std::string& value) const {
    if (std::find(allowed.begin(), allowed.end(), value) != allowed.end()) return std::nullopt;
    return fmt::format("must be one of {}", fmt::join(allowed, ", "));
  }
};

/// Empty (none), or the path of an existing file.
struct FileOrEmpty {
  Result operator()(const std::string& path) const {
    return path.empty() || std::filesystem::is_regular_file(path) ? std::nullopt : Result("must be an existing file");
  }
};

/// "auto" or a whole number >= 1, as a string.
struct AutoOrCount {
  Result operator()(const std::string& value) const {
    if (value == "auto") return std::nullopt;
    size_t used = 0;
    try {
      if (std::stoll(value, &used) >= 1 && used == value.size()) return std::nullopt;
    } catch (const std::exception&) {
    }
    return Result("must be auto or a whole number >= 1");
  }
};

/// A string that is not empty.
struct NotEmpty {
  Result operator()(const std::string& value) const {
    return value.empty() ? Result("must be given (it has no default)") : std::nullopt;
  }
};

/// How a broken check reads in an error: "<rule>, got <value>", and for a
/// choice the allowed value closest to it ("; did you mean 'max'?").
template <class Check, class T>
std::optional<std::string> failure(const Check& check, const T& value) {
  const Result rule = apply(check, value);
  if (!rule) return std::nullopt;
  std::string message = *rule + ", got " + text(value);
  if constexpr (std::same_as<Check, OneOf>) message += did_you_mean(text(value), check.allowed);
  return message;
}

}  // namespace fulgur::check
