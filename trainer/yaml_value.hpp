#pragma once

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

namespace fulgur {

/// A floating-point number as YAML text: the shortest form that reads back
/// exactly (0.05, not yaml-cpp's 0.050000000000000003), whole numbers with
/// ".0" so they read back as floats, YAML's spellings of infinity and NaN.
inline std::string yaml_float(double value) {
  if (std::isnan(value)) return ".nan";
  if (std::isinf(value)) return value > 0 ? ".inf" : "-.inf";
  std::string text = fmt::format("{}", value);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

/// `value` as a YAML node, floating-point numbers (also in lists) through yaml_float.
template <class T>
YAML::Node yaml_value(const T& value) {
  if constexpr (std::is_floating_point_v<T>) {
    return YAML::Node(yaml_float(static_cast<double>(value)));
  } else if constexpr (requires { typename T::value_type; value.push_back(value.front()); } &&
                       !std::is_same_v<T, std::string>) {
    YAML::Node list(YAML::NodeType::Sequence);
    for (const auto& item : value) list.push_back(yaml_value(item));
    return list;
  } else {
    return YAML::Node(value);
  }
}

}  // namespace fulgur
