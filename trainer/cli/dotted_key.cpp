#include <fulgur/trainer/cli/dotted_key.hpp>

#include <fulgur/trainer/cli/config_error.hpp>

#include <fmt/format.h>

#include <vector>

namespace fulgur::cli {

void set_dotted(YAML::Node root, const std::string& key, const YAML::Node& value) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t dot = key.find('.', start);
    parts.push_back(key.substr(start, dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  for (const auto& part : parts) {
    if (part.empty()) throw ConfigError(fmt::format("--{}: empty component in the dotted key", key));
  }
  std::vector<YAML::Node> chain{root};
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    YAML::Node child = chain.back()[parts[i]];
    if (child.IsDefined() && !child.IsNull() && !child.IsMap()) {
      throw ConfigError(fmt::format("--{}: '{}' is not a section", key, parts[i]));
    }
    if (!child.IsDefined() || child.IsNull()) {
      chain.back()[parts[i]] = YAML::Node(YAML::NodeType::Map);
      child = chain.back()[parts[i]];
    }
    chain.push_back(child);
  }
  chain.back()[parts.back()] = value;
}

}  // namespace fulgur::cli
