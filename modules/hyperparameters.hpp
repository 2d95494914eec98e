#pragma once

// Hyper-parameters as a module records them: string keys, values of bool,
// int64, double, string, lists and nested sections — the checkpoint's
// `hyper_parameters` and the run folder's hparams.yaml come from them.
// Built from an options struct (FULGUR_OPTIONS) or a flat map; no YAML here.

#include <fulgur/core/option_checks.hpp>
#include <fulgur/core/options.hpp>

#include <ATen/core/Dict.h>
#include <ATen/core/ivalue.h>

#include <concepts>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <type_traits>
#include <variant>

namespace fulgur {

/// One flat hyper-parameter: `{{"lr", 0.1}, {"layers", 3}, {"name", "gan"}}`.
using HParamValue = std::variant<bool, int64_t, double, std::string>;

/// String keys, IValue values (nested sections are dicts of the same kind).
using HParams = c10::impl::GenericDict;

inline HParams empty_hparams() { return HParams(c10::StringType::get(), c10::AnyType::get()); }

template <DeclaredOptions Options>
HParams to_hparams(const Options& options);

/// One field's value as an IValue: numbers, strings and booleans as they
/// are, optionals as None or their value, sequences as lists, nested
/// options as sections, anything else as the text option tables show.
template <class T>
c10::IValue hparam_value(const T& value) {
  if constexpr (std::same_as<T, bool>) {
    return value;
  } else if constexpr (std::integral<T>) {
    return static_cast<int64_t>(value);
  } else if constexpr (std::floating_point<T>) {
    return static_cast<double>(value);
  } else if constexpr (std::same_as<T, std::string>) {
    return value;
  } else if constexpr (std::same_as<T, std::filesystem::path>) {
    return value.string();
  } else if constexpr (DeclaredOptions<T>) {
    return to_hparams(value);
  } else if constexpr (requires { value.has_value(); }) {
    return value ? hparam_value(*value) : c10::IValue();
  } else if constexpr (requires { typename T::mapped_type; }) {
    HParams dict = empty_hparams();
    for (const auto& [key, item] : value) dict.insert(check::text(key), hparam_value(item));
    return dict;
  } else if constexpr (requires { value.begin(); } && !requires { value.to_string(); }) {
    c10::impl::GenericList list(c10::AnyType::get());
    for (const auto& item : value) list.push_back(hparam_value(item));
    return list;
  } else {
    return check::text(value);
  }
}

/// Every field of an options struct, in declaration order.
template <DeclaredOptions Options>
HParams to_hparams(const Options& options) {
  HParams out = empty_hparams();
  Options::visit_fields(options, [&](const char* name, const char*, const auto& value, const auto&) {
    out.insert(name, hparam_value(value));
  });
  return out;
}

/// A flat map, in key order.
inline HParams to_hparams(const std::map<std::string, HParamValue>& values) {
  HParams out = empty_hparams();
  for (const auto& [name, value] : values) {
    std::visit([&, &key = name](const auto& v) { out.insert(key, hparam_value(v)); }, value);
  }
  return out;
}

}  // namespace fulgur
