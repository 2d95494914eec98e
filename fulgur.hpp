#pragma once

// The one header a fulgur user includes.

#include <fulgur/callbacks/callback.hpp>
#include <fulgur/callbacks/callback_registry.hpp>
#include <fulgur/callbacks/early_stopping.hpp>
#include <fulgur/callbacks/gradient_accumulation_scheduler.hpp>
#include <fulgur/callbacks/learning_rate_monitor.hpp>
#include <fulgur/callbacks/model_checkpoint.hpp>
#include <fulgur/callbacks/loggers/csv_logger.hpp>
#include <fulgur/callbacks/loggers/logger.hpp>
#include <fulgur/callbacks/loggers/make_loggers.hpp>
#include <fulgur/callbacks/loggers/tensor_board_logger.hpp>
#include <fulgur/callbacks/progress_bar.hpp>
#include <fulgur/callbacks/timer.hpp>
#include <fulgur/datamodules/batch.hpp>
#include <fulgur/datamodules/data_loader.hpp>
#include <fulgur/datamodules/data_module.hpp>
#include <fulgur/modules/lightning_module.hpp>
#include <fulgur/modules/log_options.hpp>
#include <fulgur/modules/metrics/accuracy.hpp>
#include <fulgur/modules/models/basic_block.hpp>
#include <fulgur/modules/models/bottleneck.hpp>
#include <fulgur/modules/models/create_model.hpp>
#include <fulgur/modules/models/mlp.hpp>
#include <fulgur/modules/models/resnet.hpp>
#include <fulgur/modules/models/small_cnn.hpp>
#include <fulgur/modules/optimizer_config.hpp>
#include <fulgur/modules/state_dict.hpp>
#include <fulgur/modules/weights_file.hpp>
#include <fulgur/strategies/strategy.hpp>
#include <fulgur/trainer/cli/cli.hpp>
#include <fulgur/trainer/seed.hpp>
#include <fulgur/trainer/trainer.hpp>
#include <fulgur/trainer/trainer_options.hpp>
