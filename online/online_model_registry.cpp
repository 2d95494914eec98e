#include <fulgur/online/online_model_registry.hpp>

#include <fmt/format.h>

#include <map>
#include <mutex>
#include <stdexcept>

namespace fulgur {

namespace {

std::mutex& registry_mutex() {
  static std::mutex mutex;
  return mutex;
}

std::map<std::string, OnlineModelRegistry::Factory>& registry() {
  static std::map<std::string, OnlineModelRegistry::Factory> factories;
  return factories;
}

}  // namespace

void OnlineModelRegistry::add(const std::string& name, Factory factory) {
  if (name == "mlp" || name == "cnn" || name == "torchscript") {
    throw std::invalid_argument(fmt::format("[OnlineModelRegistry::add] '{}' is a built-in model type", name));
  }
  if (!factory) throw std::invalid_argument(fmt::format("[OnlineModelRegistry::add] '{}': the factory is empty", name));
  std::lock_guard lock(registry_mutex());
  if (!registry().emplace(name, std::move(factory)).second) {
    throw std::invalid_argument(fmt::format("[OnlineModelRegistry::add] '{}' is registered already", name));
  }
}

std::optional<OnlineModelRegistry::Factory> OnlineModelRegistry::find(const std::string& name) {
  std::lock_guard lock(registry_mutex());
  const auto it = registry().find(name);
  if (it == registry().end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> OnlineModelRegistry::names() {
  std::lock_guard lock(registry_mutex());
  std::vector<std::string> out;
  for (const auto& [name, factory] : registry()) out.push_back(name);
  return out;
}

}  // namespace fulgur
