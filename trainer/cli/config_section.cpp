#include <fulgur/trainer/cli/config_section.hpp>

#include <fulgur/trainer/cli/options_yaml.hpp>

#include <fmt/format.h>

namespace fulgur::cli {
namespace {

std::string describe(const YAML::Node& node) { return detail::node_text(node); }

template <class T>
struct Decoder;

template <>
struct Decoder<bool> {
  static constexpr const char* expected = "a boolean (true/false)";
  static bool decode(const YAML::Node& n, bool& out) { return detail::decode_scalar(n, out); }
};

template <>
struct Decoder<int64_t> {
  static constexpr const char* expected = "an integer";
  static bool decode(const YAML::Node& n, int64_t& out) { return detail::decode_scalar(n, out); }
};

template <>
struct Decoder<int> {
  static constexpr const char* expected = "an integer";
  static bool decode(const YAML::Node& n, int& out) {
    int64_t wide = 0;
    if (!detail::decode_scalar(n, wide) || wide != static_cast<int>(wide)) return false;
    out = static_cast<int>(wide);
    return true;
  }
};

template <>
struct Decoder<double> {
  static constexpr const char* expected = "a number";
  static bool decode(const YAML::Node& n, double& out) { return detail::decode_scalar(n, out); }
};

template <>
struct Decoder<std::string> {
  static constexpr const char* expected = "a string";
  static bool decode(const YAML::Node& n, std::string& out) { return detail::decode_scalar(n, out); }
};

template <class T>
struct Decoder<std::vector<T>> {
  static std::string expected_text() { return fmt::format("a list of {}", Decoder<T>::expected); }
  static constexpr const char* expected = "a list";
  static bool decode(const YAML::Node& n, std::vector<T>& out) {
    if (!n.IsSequence()) return false;
    out.clear();
    for (const auto& item : n) {
      T v{};
      if (!Decoder<T>::decode(item, v)) return false;
      out.push_back(v);
    }
    return true;
  }
};

template <class T>
std::string expected_of() {
  if constexpr (requires { Decoder<T>::expected_text(); }) {
    return Decoder<T>::expected_text();
  } else {
    return Decoder<T>::expected;
  }
}

}  // namespace

ConfigSection::ConfigSection(YAML::Node node, std::string path)
    : node_(std::move(node)), path_(std::move(path)), resolved_(YAML::NodeType::Map) {
  if (node_.IsDefined() && !node_.IsNull() && !node_.IsMap()) {
    throw ConfigError(fmt::format("{}: expected a mapping of options, got '{}'", path_, describe(node_)));
  }
}

std::string ConfigSection::dotted(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

YAML::Node ConfigSection::lookup(const std::string& key) {
  read_.insert(key);
  if (!node_.IsDefined() || node_.IsNull()) return YAML::Node();
  return node_[key];
}

void ConfigSection::fail(const std::string& key, const std::string& expected, const std::string& got) const {
  throw ConfigError(fmt::format("{}: expected {}, got '{}'", dotted(key), expected, got));
}

template <class T>
T ConfigSection::get(const std::string& key, const T& default_value) {
  const YAML::Node value = lookup(key);
  if (!value.IsDefined() || value.IsNull()) {
    resolved_[key] = yaml_value(default_value);
    return default_value;
  }
  T out{};
  if (!Decoder<T>::decode(value, out)) fail(key, expected_of<T>(), describe(value));
  resolved_[key] = yaml_value(out);
  return out;
}

template <class T>
T ConfigSection::require(const std::string& key) {
  const YAML::Node value = lookup(key);
  if (!value.IsDefined() || value.IsNull()) fail(key, expected_of<T>() + " (required)", "null");
  T out{};
  if (!Decoder<T>::decode(value, out)) fail(key, expected_of<T>(), describe(value));
  resolved_[key] = yaml_value(out);
  return out;
}

bool ConfigSection::has(const std::string& key) {
  const YAML::Node value = lookup(key);
  return value.IsDefined() && !value.IsNull();
}

YAML::Node ConfigSection::raw(const std::string& key, const YAML::Node& default_value) {
  YAML::Node value = lookup(key);
  if (!value.IsDefined() || value.IsNull()) value = default_value;
  resolved_[key] = value;
  return value;
}

std::vector<std::string> ConfigSection::unread_keys() const {
  std::vector<std::string> unread;
  if (!node_.IsMap()) return unread;
  for (const auto& item : node_) {
    const std::string key = item.first.as<std::string>();
    if (!read_.count(key)) unread.push_back(dotted(key));
  }
  return unread;
}

template bool ConfigSection::get<bool>(const std::string&, const bool&);
template int ConfigSection::get<int>(const std::string&, const int&);
template int64_t ConfigSection::get<int64_t>(const std::string&, const int64_t&);
template double ConfigSection::get<double>(const std::string&, const double&);
template std::string ConfigSection::get<std::string>(const std::string&, const std::string&);
template std::vector<int64_t> ConfigSection::get<std::vector<int64_t>>(const std::string&, const std::vector<int64_t>&);
template std::vector<double> ConfigSection::get<std::vector<double>>(const std::string&, const std::vector<double>&);
template std::vector<std::string> ConfigSection::get<std::vector<std::string>>(const std::string&,
                                                                               const std::vector<std::string>&);
template bool ConfigSection::require<bool>(const std::string&);
template int ConfigSection::require<int>(const std::string&);
template int64_t ConfigSection::require<int64_t>(const std::string&);
template double ConfigSection::require<double>(const std::string&);
template std::string ConfigSection::require<std::string>(const std::string&);

}  // namespace fulgur::cli
