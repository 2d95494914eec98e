#pragma once

#include <fulgur/core/options.hpp>
#include <fulgur/loggers/logger.hpp>
#include <fulgur/loggers/run_folder.hpp>

#include <sys/types.h>

#include <string>

namespace fulgur {

/// Options of WandbLogger: Lightning's names where it has them; `python` is
/// fulgur's own (the interpreter that runs the `wandb` package).
#define FULGUR_WANDB_LOGGER_OPTIONS(X)                                                                      \
  X(std::string, project, "", "W&B project; empty: wandb's default (uncategorized)", fulgur::check::Any{}) \
  X(std::string, name, "", "display name of the run; empty: a random name chosen by wandb",               \
    fulgur::check::Any{})                                                                                   \
  X(std::string, id, "", "run id (letters, digits, - and _); empty: a random id chosen by wandb",         \
    fulgur::check::Any{})                                                                                   \
  X(std::string, python, "python3", "Python interpreter with the wandb package", fulgur::check::NotEmpty{})

struct WandbLoggerOptions {
  FULGUR_OPTIONS(WandbLoggerOptions, FULGUR_WANDB_LOGGER_OPTIONS)
};

/// Logs to Weights & Biases as an offline run, through the real `wandb`
/// package: on first use a Python process (`options.python()`) is started
/// with WANDB_MODE=offline; it calls `wandb.init(mode="offline")` and, for
/// each row, `run.log(metrics | {"trainer/global_step": step})` with
/// "trainer/global_step" as the step metric of every key, as Lightning's
/// WandbLogger does; the hyper-parameters go to `run.config`. The run is
/// written under `<run folder>/wandb/offline-run-<time>-<id>/`;
/// `wandb sync <that folder>` uploads it from a machine with network.
///
/// Rows travel as JSON lines over a socket, so logging does not wait for
/// wandb. The W&B run stays open across fit and a test after it (one run
/// per logger, as with Lightning); it is finished, with finalize()'s status
/// as its exit code, when the logger is destroyed, which waits for the
/// Python process to write everything and exit.
class WandbLogger : public Logger {
 public:
  using Options = WandbLoggerOptions;
  WandbLogger(WandbLoggerOptions options, RunFolder folder);
  ~WandbLogger() override;
  WandbLogger(const WandbLogger&) = delete;
  WandbLogger& operator=(const WandbLogger&) = delete;

  std::string name() const override { return folder_.name; }
  std::optional<std::filesystem::path> open_versions_dir() override {
    return folder_.open_versions_dir();
  }
  void set_version(int64_t version) override { folder_.version = version; }
  std::filesystem::path log_dir() override;
  void log_hyperparams(const YAML::Node& hparams) override;
  void log_metrics(const std::map<std::string, double>& metrics, int64_t step) override;
  /// Remembers the status: "success" finishes the W&B run with exit code 0,
  /// anything else with 1.
  void finalize(const std::string& status) override;

  const WandbLoggerOptions& options() const { return options_; }

 private:
  void start();
  void send(const std::string& line);
  int finish();

  WandbLoggerOptions options_;
  RunFolder folder_;
  pid_t child_ = -1;
  int socket_ = -1;
  int exit_code_ = 0;
};

}  // namespace fulgur
