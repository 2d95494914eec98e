#pragma once

#include <fulgur/trainer/cli/config_section.hpp>
#include <fulgur/trainer/trainer_options.hpp>

namespace fulgur::cli {

/// Reads every TrainerOptions field from the `trainer` section `section`
/// views (`--trainer.max_epochs 3`, `--trainer.ddp.bucket_cap_mb 50`), each
/// checked as declared; `trainer` is that section's node, in which the old
/// spellings `trainer.bucket_cap_mb`, `find_unused_parameters` and
/// `broadcast_buffers` are moved under `ddp` with a deprecation line first.
/// `logger` is left to the LoggerRegistry and `callbacks` to the
/// CallbackRegistry.
TrainerOptions read_trainer_options(ConfigSection& section, YAML::Node trainer);

}  // namespace fulgur::cli
