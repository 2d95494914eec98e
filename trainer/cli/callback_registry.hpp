#pragma once

#include <fulgur/callbacks/timer_duration.hpp>
#include <fulgur/trainer/callback.hpp>
#include <fulgur/trainer/cli/class_registry.hpp>
#include <fulgur/trainer/cli/options_yaml.hpp>

namespace fulgur {

// Timer's duration in YAML: seconds, "DD:HH:MM:SS" or {days, hours, minutes,
// seconds}. read_options finds these by argument-dependent lookup.
bool decode_scalar(const YAML::Node& node, TimerDuration& out);
const char* expected_of(const TimerDuration*);

}  // namespace fulgur

namespace YAML {
template <>
struct convert<fulgur::TimerDuration> {
  static Node encode(const fulgur::TimerDuration& duration);
};
}  // namespace YAML

namespace fulgur::cli {

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
/// A program's own class is added with `add<MyCallback>("MyCallback")` (its
/// options declared with FULGUR_OPTIONS as `MyCallback::Options`, built as
/// `MyCallback(options)`). create() builds `trainer.callbacks`.
class CallbackRegistry : public ClassRegistry<Callback> {
 public:
  CallbackRegistry() : ClassRegistry("callback") {}
  /// The registry with fulgur's built-in callbacks.
  static CallbackRegistry with_builtins();
};

}  // namespace fulgur::cli
