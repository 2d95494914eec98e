#pragma once

#include <fulgur/modules/lightning_module.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fulgur {

/// C++ LightningModules a YAML description (`model: {type: <name>}`) can
/// name, for programs that create their trainer through the C API or
/// Fortran: register before fulgur_online_create. A registered module
/// brings its own training_step and configure_optimizers (the file's
/// loss, optimizer and lr_scheduler sections are not used).
///
///   OnlineModelRegistry::add("heat_surrogate", [] { return std::make_shared<HeatSurrogate>(); });
class OnlineModelRegistry {
 public:
  using Factory = std::function<std::shared_ptr<LightningModule>()>;
  /// Throws std::invalid_argument for a built-in name (mlp, cnn,
  /// torchscript) or one registered already.
  static void add(const std::string& name, Factory factory);
  static std::optional<Factory> find(const std::string& name);
  /// The registered names, sorted.
  static std::vector<std::string> names();
};

}  // namespace fulgur
