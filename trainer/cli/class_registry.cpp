#include <fulgur/trainer/cli/class_registry.hpp>

#include <fulgur/core/did_you_mean.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace fulgur::cli::detail {

ClassEntry parse_class_entry(const YAML::Node& entry, const std::string& path, const std::string& kind) {
  ClassEntry parsed;
  if (entry.IsScalar()) {
    parsed.class_path = entry.Scalar();
  } else if (entry.IsMap()) {
    for (const auto& item : entry) {
      const std::string key = item.first.as<std::string>();
      if (key != "class_path" && key != "init_args") {
        throw ConfigError(fmt::format("{}: unknown key '{}' (expected class_path, init_args)", path, key));
      }
    }
    // Through a non-const handle: a const lookup of a missing key gives an
    // invalid node, a non-const one an undefined node (what ConfigSection takes).
    YAML::Node handle = entry;
    const YAML::Node class_path = handle["class_path"];
    if (!class_path.IsDefined() || !class_path.IsScalar()) {
      throw ConfigError(fmt::format("{}.class_path: expected the class name of the {}", path, kind));
    }
    parsed.class_path = class_path.Scalar();
    parsed.init_args = handle["init_args"];
  } else {
    throw ConfigError(fmt::format("{}: expected {{class_path: NAME, init_args: {{...}}}} or a class name", path));
  }
  parsed.class_name = parsed.class_path.substr(parsed.class_path.rfind('.') + 1);
  return parsed;
}

void unknown_class(const ClassEntry& entry, const std::string& path, const std::string& kind,
                   const std::vector<std::string>& known) {
  throw ConfigError(fmt::format("{}.class_path: unknown {} class '{}' (known: {}){}", path, kind, entry.class_path,
                                fmt::join(known, ", "), did_you_mean(entry.class_name, known)));
}

void check_all_read(const ConfigSection& section, const std::string& class_name) {
  const auto unread = section.unread_keys();
  if (unread.empty()) return;
  std::vector<std::string> known;
  for (const auto& item : section.resolved()) known.push_back(section.dotted(item.first.as<std::string>()));
  throw ConfigError(
      fmt::format("unknown key '{}' for {}{}", unread.front(), class_name, did_you_mean(unread.front(), known)));
}

}  // namespace fulgur::cli::detail
