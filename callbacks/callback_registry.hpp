#pragma once

#include <fulgur/trainer/callback.hpp>
#include <fulgur/trainer/cli/config_section.hpp>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace fulgur {

/// Builds a callback from its `init_args` section; reads every option it
/// knows through the section (so unknown keys can be reported).
using CallbackFactory = std::function<std::shared_ptr<Callback>(cli::ConfigSection&)>;

/// Callback classes the YAML config and the command line can name, as
/// LightningCLI does:
///
///   trainer:
///     callbacks:
///       - class_path: EarlyStopping
///         init_args: {monitor: val_loss, patience: 3}
///
/// A dotted class_path (`lightning.pytorch.callbacks.EarlyStopping`) is
/// matched by its last component; a bare name stands for `{class_path: name}`.
class CallbackRegistry {
 public:
  /// The registry with fulgur's built-in callbacks.
  static CallbackRegistry with_builtins();

  /// Adds (or replaces) a class.
  void add(const std::string& class_name, CallbackFactory factory);
  std::vector<std::string> class_names() const;

  /// Builds the callbacks of `trainer.callbacks` (a list, one entry, or null).
  /// Throws cli::ConfigError naming the entry for an unknown class, an unknown
  /// or mistyped key, or an invalid value. Records the resolved options back
  /// into `node`, so --print_config shows every default.
  std::vector<std::shared_ptr<Callback>> create(YAML::Node node, const std::string& path) const;

 private:
  std::shared_ptr<Callback> create_one(YAML::Node entry, const std::string& path) const;
  std::map<std::string, CallbackFactory> factories_;
};

}  // namespace fulgur
