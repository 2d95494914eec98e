#include <fulgur/trainer/hparams_yaml.hpp>

#include <fulgur/trainer/yaml_value.hpp>

#include <fmt/format.h>

namespace fulgur {
namespace {

YAML::Node to_yaml(const c10::IValue& value) {
  if (value.isGenericDict()) return hparams_to_yaml(value.toGenericDict());
  if (value.isList()) {
    YAML::Node list(YAML::NodeType::Sequence);
    for (const auto& item : value.toListRef()) list.push_back(to_yaml(item));
    return list;
  }
  if (value.isBool()) return YAML::Node(value.toBool());
  if (value.isInt()) return YAML::Node(value.toInt());
  if (value.isDouble()) return yaml_value(value.toDouble());
  if (value.isString()) return YAML::Node(value.toStringRef());
  if (value.isNone()) return YAML::Node(YAML::NodeType::Null);
  return YAML::Node(fmt::format("<{}>", value.tagKind()));
}

c10::IValue from_yaml(const YAML::Node& node) {
  if (node.IsMap()) return hparams_from_yaml(node);
  if (node.IsSequence()) {
    c10::impl::GenericList list(c10::AnyType::get());
    for (const auto& item : node) list.push_back(from_yaml(item));
    return list;
  }
  if (!node.IsScalar()) return c10::IValue();
  int64_t i = 0;
  double d = 0;
  bool b = false;
  if (YAML::convert<int64_t>::decode(node, i)) return i;
  if (YAML::convert<double>::decode(node, d)) return d;
  if (YAML::convert<bool>::decode(node, b)) return b;
  return node.as<std::string>();
}

}  // namespace

YAML::Node hparams_to_yaml(const HParams& hparams) {
  YAML::Node map(YAML::NodeType::Map);
  for (const auto& entry : hparams) map[entry.key().toStringRef()] = to_yaml(entry.value());
  return map;
}

HParams hparams_from_yaml(const YAML::Node& node) {
  HParams out = empty_hparams();
  if (!node.IsMap()) return out;
  for (const auto& item : node) out.insert(item.first.as<std::string>(), from_yaml(item.second));
  return out;
}

}  // namespace fulgur
