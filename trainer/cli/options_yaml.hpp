#pragma once

// The YAML side of options declared with FULGUR_OPTIONS (core/options.hpp):
// reading a section into an options struct, writing one back, and the
// option tables in README.md and docs/. Every declared field is read the same way, so a
// new field needs its declaration line and nothing here.

#include <fulgur/core/did_you_mean.hpp>
#include <fulgur/core/option_enum.hpp>
#include <fulgur/core/options.hpp>
#include <fulgur/trainer/cli/config_section.hpp>
#include <fulgur/trainer/count_or_fraction.hpp>
#include <fulgur/trainer/yaml_value.hpp>

#include <yaml-cpp/yaml.h>

#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace fulgur::cli {

namespace detail {

/// A std::vector field (a YAML list).
template <class T>
concept ListOption = !std::is_same_v<T, std::string> && requires(T& t) {
  typename T::value_type;
  t.push_back(std::declval<typename T::value_type>());
};

/// A std::map field (a YAML mapping).
template <class T>
concept MapOption = requires {
  typename T::key_type;
  typename T::mapped_type;
};

std::string node_text(const YAML::Node& node);
bool decode_scalar(const YAML::Node& node, bool& out);
bool decode_scalar(const YAML::Node& node, int64_t& out);
bool decode_scalar(const YAML::Node& node, double& out);
bool decode_scalar(const YAML::Node& node, std::string& out);
bool decode_scalar(const YAML::Node& node, CountOrFraction& out);
const char* expected_of(const bool*);
const char* expected_of(const int64_t*);
const char* expected_of(const double*);
const char* expected_of(const std::string*);
const char* expected_of(const CountOrFraction*);

template <class T>
YAML::Node to_node(const T& value) {
  if constexpr (DeclaredOptions<T>) {
    YAML::Node map(YAML::NodeType::Map);
    T::visit_fields(value, [&](const char* name, const char*, const auto& field, const auto&) { map[name] = to_node(field); });
    return map;
  } else if constexpr (requires { value.has_value(); }) {
    return value ? to_node(*value) : YAML::Node(YAML::NodeType::Null);
  } else if constexpr (OptionEnum<T>) {
    return YAML::Node(to_string(value));
  } else if constexpr (std::is_same_v<T, CountOrFraction>) {
    // As text: yaml-cpp writes the double 1.0 as "1", which reads back as a count.
    return YAML::Node(value.to_string());
  } else {
    return yaml_value(value);
  }
}

template <class T>
bool decode(const YAML::Node& node, T& out) {
  if constexpr (OptionEnum<T>) {
    if (!node.IsScalar()) return false;
    out = parse_choice<T>(node.Scalar());  // an unknown name throws, naming the choices
    return true;
  } else if constexpr (ListOption<T>) {
    if (node.IsScalar()) {  // one value stands for a list of one, as Lightning takes `swa_lrs: 0.01`
      typename T::value_type v{};
      if (!decode(node, v)) return false;
      out = T{v};
      return true;
    }
    if (!node.IsSequence()) return false;
    T values;
    for (const auto& item : node) {
      typename T::value_type v{};
      if (!decode(item, v)) return false;
      values.push_back(v);
    }
    out = values;
    return true;
  } else if constexpr (MapOption<T>) {
    if (!node.IsMap()) return false;
    T values;
    for (const auto& item : node) {
      typename T::key_type key{};
      typename T::mapped_type value{};
      if (!decode(item.first, key) || !decode(item.second, value)) return false;
      values[key] = value;
    }
    out = values;
    return true;
  } else {
    return decode_scalar(node, out);
  }
}

template <class T>
std::string expected(const T* tag) {
  if constexpr (OptionEnum<T>) {
    std::string names;
    for (const auto& n : option_choices(T{})) names += (names.empty() ? "" : ", ") + n;
    return "one of " + names;
  } else if constexpr (ListOption<T>) {
    return std::string("a list of ") + expected(static_cast<const typename T::value_type*>(nullptr));
  } else if constexpr (MapOption<T>) {
    return std::string("a mapping from ") + expected(static_cast<const typename T::key_type*>(nullptr)) + " to " +
           expected(static_cast<const typename T::mapped_type*>(nullptr));
  } else {
    return expected_of(tag);
  }
}

/// decode(), with an enum's unknown name reported under the dotted key.
template <class T>
bool decode_at(const ConfigSection& section, const std::string& key, const YAML::Node& node, T& out) {
  try {
    return decode(node, out);
  } catch (const std::invalid_argument& e) {
    throw ConfigError(section.dotted(key) + ": " + e.what());
  }
}

}  // namespace detail

template <DeclaredOptions Options>
Options read_options(ConfigSection& section, Options options = {}, const std::set<std::string>& skip = {});

/// Reads `key` of `section` into `value`, which holds the default.
template <class T>
void read_option(ConfigSection& section, const std::string& key, T& value) {
  if constexpr (DeclaredOptions<T>) {
    ConfigSection nested(section.raw(key, YAML::Node(YAML::NodeType::Null)), section.dotted(key));
    value = read_options(nested, value);
    section.record(key, nested.resolved());
  } else if constexpr (requires { value.has_value(); }) {
    using Inner = typename T::value_type;
    const YAML::Node node = section.raw(key, detail::to_node(value));
    if (node.IsNull()) {
      value = std::nullopt;
      return;
    }
    Inner inner{};
    if (!detail::decode_at(section, key, node, inner)) {
      section.fail(key, detail::expected(static_cast<const Inner*>(nullptr)) + " or null", detail::node_text(node));
    }
    value = inner;
  } else {
    const YAML::Node node = section.raw(key, detail::to_node(value));
    T decoded = value;
    if (!detail::decode_at(section, key, node, decoded)) {
      section.fail(key, detail::expected(static_cast<const T*>(nullptr)), detail::node_text(node));
    }
    value = decoded;
  }
}

/// Reads every declared field of `options` from `section` (absent keys keep
/// the value `options` has, the declared default unless set), fails on keys
/// that no field has, and checks the result. Every error is one ConfigError
/// naming the dotted key: "trainer.ddp.bucket_cap_mb: must be > 0, got -1".
/// Keys in `skip` are left to the caller.
template <DeclaredOptions Options>
Options read_options(ConfigSection& section, Options options, const std::set<std::string>& skip) {
  Options::visit_fields(options, [&](const char* name, const char*, auto& field, const auto& check) {
    if (skip.count(name)) return;
    const bool given = section.has(name);
    read_option(section, name, field);
    using Field = std::decay_t<decltype(field)>;
    if constexpr (!DeclaredOptions<Field>) {
      if (auto broken = check::failure(check, field)) {
        if (!given && section.shows_missing_as_required()) return section.mark_required(name);
        throw ConfigError(section.dotted(name) + ": " + *broken);
      }
    }
  });
  std::vector<std::string> known;
  Options::visit_fields(options, [&](const char* name, const char*, const auto&, const auto&) {
    known.push_back(section.dotted(name));
  });
  std::vector<std::string> unread = section.unread_keys();
  for (const auto& key : unread) {
    if (!skip.count(key.substr(key.rfind('.') + 1))) {
      throw ConfigError("unknown key '" + key + "'" + did_you_mean(key, known));
    }
  }
  return options;
}

/// The options as a YAML mapping (nested options as nested mappings).
template <DeclaredOptions Options>
YAML::Node to_yaml(const Options& options) {
  return detail::to_node(options);
}

/// Markdown rows "| `prefix.name` | `default` | doc |", one per declared field,
/// nested options included: what the option tables in docs/ must say.
template <DeclaredOptions Options>
std::string options_table(const Options& options = {}, const std::string& prefix = "") {
  std::string rows;
  Options::visit_fields(options, [&](const char* name, const char* doc, const auto& field, const auto&) {
    using Field = std::decay_t<decltype(field)>;
    if constexpr (DeclaredOptions<Field>) {
      rows += options_table(field, prefix + name + ".");
    } else {
      rows += "| `" + prefix + name + "` | `" + check::text(field) + "` | " + doc + " |\n";
    }
  });
  return rows;
}

}  // namespace fulgur::cli
