#pragma once

#include <fulgur/callbacks/timer_duration.hpp>
#include <fulgur/trainer/callback.hpp>
#include <fulgur/trainer/cli/config_error.hpp>
#include <fulgur/trainer/cli/config_section.hpp>
#include <fulgur/trainer/cli/options_yaml.hpp>

#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

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

/// Builds a callback from its `init_args` section; reads every option it
/// knows through the section (so unknown keys can be reported).
using CallbackFactory = std::function<std::shared_ptr<Callback>(ConfigSection&)>;

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

  /// Adds (or replaces) a class whose options are declared with
  /// FULGUR_OPTIONS as `C::Options`; it is built as `C(options)`:
  ///
  ///   registry.add<MyCallback>("MyCallback");
  template <class C>
  void add(const std::string& class_name) {
    add(class_name, [](ConfigSection& section) -> std::shared_ptr<Callback> {
      const auto options = read_options<typename C::Options>(section);
      try {
        return std::make_shared<C>(options);
      } catch (const std::invalid_argument& e) {  // a check across fields
        throw ConfigError(section.path() + ": " + e.what());
      }
    });
  }

  /// Adds (or replaces) a class built by `factory`.
  void add(const std::string& class_name, CallbackFactory factory);
  std::vector<std::string> class_names() const;

  /// Builds the callbacks of `trainer.callbacks` (a list, one entry, or null).
  /// Throws ConfigError naming the entry for an unknown class, an unknown or
  /// mistyped key, or an invalid value. Records the resolved options back
  /// into `node`, so --print_config shows every default.
  std::vector<std::shared_ptr<Callback>> create(YAML::Node node, const std::string& path) const;

 private:
  std::shared_ptr<Callback> create_one(YAML::Node entry, const std::string& path) const;
  std::map<std::string, CallbackFactory> factories_;
};

}  // namespace fulgur::cli
