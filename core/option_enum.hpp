#pragma once

// Options that are a choice among fixed names (precision, mode, ...) are
// enums, each declared once beside its concept: the names in the order of
// the values 0, 1, ..., and optionally other names that read as a value.
//
//   enum class Mode { Min, Max };
//   inline std::vector<std::string> option_choices(Mode) { return {"min", "max"}; }
//   inline std::vector<std::pair<std::string, Mode>> option_aliases(Mode) { return {{"minimum", Mode::Min}}; }
//
// From that come to_string(Mode::Max) == "max" and parse_choice<Mode>("max"),
// the one parse the YAML/CLI reader and C++ callers share. check::OneOf is
// for choices known only at run time (a registry's names).

#include <fulgur/core/did_you_mean.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <concepts>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace fulgur {

/// An enum with `option_choices(E)` (found by ADL) listing its names.
template <class E>
concept OptionEnum = std::is_enum_v<E> && requires(E e) {
  { option_choices(e) } -> std::convertible_to<std::vector<std::string>>;
};

/// The name of `value`, as YAML, hparams.yaml and checkpoints store it.
template <OptionEnum E>
std::string to_string(E value) {
  return option_choices(value).at(static_cast<size_t>(value));
}

/// The value named `text` (a name or an alias); else throws
/// std::invalid_argument "must be one of a, b, got 'x'; did you mean 'a'?"
/// (the closest name or alias: 'bf61' suggests 'bf16').
template <OptionEnum E>
E parse_choice(const std::string& text) {
  const std::vector<std::string> names = option_choices(E{});
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == text) return static_cast<E>(i);
  }
  std::vector<std::string> candidates = names;
  if constexpr (requires { option_aliases(E{}); }) {
    for (const auto& [alias, value] : option_aliases(E{})) {
      if (alias == text) return value;
      candidates.push_back(alias);
    }
  }
  throw std::invalid_argument(
      fmt::format("must be one of {}, got '{}'{}", fmt::join(names, ", "), text, did_you_mean(text, candidates)));
}

}  // namespace fulgur
