#pragma once

#include <fulgur/modules/lightning_module.hpp>
#include <fulgur/modules/module_runtime.hpp>

namespace fulgur {

/// Attaches `runtime` to a module (and to every Metric among its children)
/// while it lives, and detaches it when it ends, on the error path too. The
/// Trainer holds one for each run: it is the one way a module reaches the
/// run (LightningModule::trainer() included).
class ScopedModuleRuntime {
 public:
  ScopedModuleRuntime(LightningModule& module, ModuleRuntime& runtime) : module_(module) {
    module_.attach_runtime(&runtime);
  }
  ~ScopedModuleRuntime() { module_.attach_runtime(nullptr); }
  ScopedModuleRuntime(const ScopedModuleRuntime&) = delete;
  ScopedModuleRuntime& operator=(const ScopedModuleRuntime&) = delete;

 private:
  LightningModule& module_;
};

}  // namespace fulgur
