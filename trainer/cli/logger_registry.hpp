#pragma once

#include <fulgur/trainer/cli/class_registry.hpp>
#include <fulgur/loggers/logger.hpp>
#include <fulgur/loggers/run_folder.hpp>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace fulgur::cli {

/// Logger classes `trainer.logger` can name, as LightningCLI does, plus
/// fulgur's short names:
///
///   trainer:
///     logger: [csv, {class_path: WandbLogger, init_args: {project: digits}}]
///
/// Built-ins: `csv` / `CSVLogger`, `tensorboard` / `TensorBoardLogger`,
/// `wandb` / `WandbLogger`. A program's own logger type is added with
/// `add<MyLogger>("MyLogger")`: its options declared with FULGUR_OPTIONS as
/// `MyLogger::Options`, built as `MyLogger(options, run_folder)`.
class LoggerRegistry : public ClassRegistry<Logger, RunFolder> {
 public:
  LoggerRegistry() : ClassRegistry("logger") {}
  /// The registry with fulgur's built-in loggers.
  static LoggerRegistry with_builtins();

  /// Builds the loggers of `trainer.logger` (at `path`): true (CSVLogger),
  /// false or null (none), a name, names joined by commas
  /// ("csv,tensorboard"), a `{class_path, init_args}` entry, or a list of
  /// names and entries. All write into `<root_dir>/<name>/version_<N>/`, one
  /// version decided here for all of them; creates no file. Throws
  /// ConfigError naming the entry for an unknown class, a bad option, or a
  /// logger class given twice (they would write the same files).
  std::vector<std::shared_ptr<Logger>> create(YAML::Node node, const std::string& path,
                                              const std::filesystem::path& root_dir,
                                              const std::string& name = "fulgur_logs") const;
};

}  // namespace fulgur::cli
