#pragma once

#include <fulgur/trainer/cli/config_section.hpp>
#include <fulgur/trainer/trainer_options.hpp>

namespace fulgur::cli {

/// Reads every TrainerOptions field from the `trainer` section, with the
/// same names (`--trainer.max_epochs 3`). Types are checked here; values are
/// checked by TrainerConfig::resolve.
TrainerOptions read_trainer_options(ConfigSection& section);

/// `trainer.logger`: true (the default: CSV), false (none), a logger name
/// ("csv", "tensorboard"), names joined by commas ("csv,tensorboard"), or a
/// YAML list of names. Returns the names in order; empty means no logger.
std::vector<std::string> read_logger_names(ConfigSection& section);

}  // namespace fulgur::cli
