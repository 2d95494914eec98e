#include <fulgur/trainer/connectors/hook_dispatcher.hpp>

#include <c10/util/Type.h>

#include <typeinfo>

namespace fulgur {

void HookDispatcher::start_run(Profiler* profiler, LightningModule& module) {
  profiler_ = profiler;
  module_ = &module;
  module_name_ = c10::demangle(typeid(module).name());
  const auto scope = module_name_.rfind("::");
  if (scope != std::string::npos) module_name_ = module_name_.substr(scope + 2);
}

}  // namespace fulgur
