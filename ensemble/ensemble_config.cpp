#include <fulgur/ensemble/ensemble_config.hpp>

#include <fulgur/trainer/cli/config_section.hpp>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <stdexcept>

namespace fulgur {

namespace {

EnsembleOptions read_options(const YAML::Node& node) {
  if (node && !node.IsMap() && !node.IsNull()) throw cli::ConfigError("ensemble: expected a mapping");
  cli::ConfigSection section(node ? node : YAML::Node(YAML::NodeType::Null), "ensemble");
  EnsembleOptions o;
  o.run_dir = section.get<std::string>("run_dir", o.run_dir.string());
  o.expected_clients = section.get<int64_t>("expected_clients", o.expected_clients);
  o.min_steps = section.get<int64_t>("min_steps", o.min_steps);
  o.host = section.get<std::string>("host", o.host);
  o.port = section.get<int64_t>("port", o.port);
  o.max_message_bytes = section.get<int64_t>("max_message_bytes", o.max_message_bytes);
  o.time_limit_s = section.get<double>("time_limit_s", o.time_limit_s);
  o.drain_s = section.get<double>("drain_s", o.drain_s);
  o.client_timeout_s = section.get<double>("client_timeout_s", o.client_timeout_s);
  const std::vector<std::string> unread = section.unread_keys();
  if (!unread.empty()) throw cli::ConfigError(unread.front() + ": unknown key");
  return o;
}

}  // namespace

EnsembleConfig EnsembleConfig::from_yaml_file(const std::filesystem::path& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path.string());
  } catch (const YAML::Exception& e) {
    throw std::invalid_argument(fmt::format("cannot read {}: {}", path.string(), e.what()));
  }
  EnsembleConfig config;
  try {
    config.ensemble = read_options(root.IsMap() ? root["ensemble"] : YAML::Node());
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(fmt::format("{}: {}", path.string(), e.what()));
  }
  if (root.IsMap()) root.remove("ensemble");
  config.online = OnlineConfig::from_yaml(YAML::Dump(root), path.string());
  return config;
}

}  // namespace fulgur
