#pragma once

#include <fulgur/datamodules/data_module.hpp>
#include <fulgur/modules/lightning_module.hpp>
#include <fulgur/trainer/cli/callback_registry.hpp>
#include <fulgur/trainer/cli/config_section.hpp>
#include <fulgur/trainer/cli/logger_registry.hpp>
#include <fulgur/trainer/cli/optimizer_registry.hpp>
#include <fulgur/trainer/cli/options_yaml.hpp>
#include <fulgur/trainer/cli/scheduler_registry.hpp>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace fulgur::cli {

/// The command line, parsed but not yet interpreted.
struct Arguments {
  Stage subcommand = Stage::Fit;  // fit, validate, test or predict
  bool lr_find = false;           // the lr_find subcommand: Tuner::lr_find on the fit configuration
  bool scale_batch_size = false;  // the scale_batch_size subcommand: Tuner::scale_batch_size, likewise
  std::vector<std::string> config_files;                         // --config, in order
  std::vector<std::pair<std::string, std::string>> overrides;  // --a.b value, in order
  bool print_config = false;
  bool help = false;
  bool version = false;  // --version: print version_line() and exit 0
};

/// What `--version` prints: "fulgur " and fulgur::kVersion, such as "fulgur 0.1.0".
std::string version_line();

/// Parses `prog <fit|validate|test|predict|lr_find|scale_batch_size> [--config f.yaml]... [--key value]...
/// [--print_config]`, or `prog --help` / `prog --version`. Throws ConfigError naming the offending argument.
Arguments parse_arguments(int argc, const char* const* argv);

/// Merges the config files (later ones win) and then the dotted overrides
/// (values parsed as YAML scalars/lists) into one tree. Throws ConfigError
/// naming the file or the key.
YAML::Node merge_configuration(const Arguments& arguments);

/// How the CLI builds the user's types from their config sections, the
/// callback and logger classes `trainer.callbacks` and `trainer.logger` may
/// name, and the classes of the `optimizer:` and `lr_scheduler:` sections.
struct Factories {
  std::function<std::shared_ptr<LightningModule>(ConfigSection&)> model;
  std::function<std::shared_ptr<DataModule>(ConfigSection&)> data;
  CallbackRegistry callbacks = CallbackRegistry::with_builtins();
  LoggerRegistry loggers = LoggerRegistry::with_builtins();
  OptimizerRegistry optimizers = OptimizerRegistry::with_builtins();
  SchedulerRegistry schedulers = SchedulerRegistry::with_builtins();
};

/// Runs a main()'s work and ends it as the command line does: an exception
/// becomes one line on stderr ("error: <message>", no backtrace) and exit
/// code 2 for bad input (invalid options or values, missing data, a bad
/// checkpoint) or 1 for anything else; otherwise `body`'s return value.
///
///   int main() {
///     return fulgur::cli::run_guarded([] { ...; trainer.fit(model, data); return trainer.exit_code(); });
///   }
int run_guarded(const std::function<int()>& body);

/// Runs a whole command line; returns the process exit code: 0 success,
/// 2 bad input (unknown key, wrong type, invalid value, missing data), 1 any
/// other failure. Prints one error message to stderr.
int run(int argc, const char* const* argv, const Factories& factories);

/// LightningCLI for C++: the `model:` and `data:` sections are read into
/// `Model::Options` and `Data::Options` (structs declared with
/// FULGUR_OPTIONS, see core/options.hpp), and the objects are built from
/// them (`Model(const Model::Options&)`, `Data(const Data::Options&)`).
///
///   int main(int argc, char** argv) { return fulgur::cli::run<MyModel, MyData>(argc, argv); }
///
/// Callback and logger types of the program's own are named in YAML like the
/// built-ins once registered (`callbacks.add<MyCallback>("MyCallback")`,
/// `loggers.add<MyLogger>("MyLogger")`, see CallbackRegistry and
/// LoggerRegistry) and the registries are passed here.
template <class Model, class Data>
int run(int argc, const char* const* argv, CallbackRegistry callbacks = CallbackRegistry::with_builtins(),
        LoggerRegistry loggers = LoggerRegistry::with_builtins()) {
  return run(argc, argv,
             Factories{[](ConfigSection& s) -> std::shared_ptr<LightningModule> {
                         return std::make_shared<Model>(read_options<typename Model::Options>(s));
                       },
                       [](ConfigSection& s) -> std::shared_ptr<DataModule> {
                         return std::make_shared<Data>(read_options<typename Data::Options>(s));
                       },
                       std::move(callbacks), std::move(loggers)});
}

}  // namespace fulgur::cli
