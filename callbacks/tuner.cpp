#include <fulgur/callbacks/tuner.hpp>

#include <fulgur/datamodules/loading/dataset_loader.hpp>
#include <fulgur/trainer/trainer.hpp>

#include <c10/util/Exception.h>
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>

namespace fulgur {
namespace {

// cuDNN and cuBLAS report a failed allocation as their own status, not as
// c10::OutOfMemoryError (the strings Lightning's is_oom_error matches).
bool is_out_of_memory(const std::string& message) {
  for (const char* sign : {"CUDA out of memory", "CUDA error: out of memory", "CUBLAS_STATUS_ALLOC_FAILED",
                           "CUDNN_STATUS_ALLOC_FAILED", "cuDNN error: CUDNN_STATUS_NOT_SUPPORTED"}) {
    if (message.find(sign) != std::string::npos) return true;
  }
  return false;
}


// Runs `search` and then puts the module's parameters and buffers and the
// CPU random generator back as they were, whether it returned or threw.
template <class Search>
auto restoring(LightningModule& module, Search&& search) {
  std::map<std::string, torch::Tensor> saved;
  for (const auto& item : module.named_parameters()) saved[item.key()] = item.value().detach().clone();
  for (const auto& item : module.named_buffers()) saved[item.key()] = item.value().detach().clone();
  const torch::Tensor rng = at::detail::getDefaultCPUGenerator().get_state();
  auto restore = [&] {
    torch::NoGradGuard no_grad;
    for (const auto& item : module.named_parameters()) item.value().detach().copy_(saved.at(item.key()));
    for (const auto& item : module.named_buffers()) item.value().detach().copy_(saved.at(item.key()));
    auto generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(rng);
  };
  try {
    auto result = search();
    restore();
    return result;
  } catch (...) {
    restore();
    throw;
  }
}

// A search's fits leave nothing behind and print nothing of their own.
TrainerOptions search_options(TrainerOptions options, int64_t max_steps) {
  options.max_steps(max_steps)
      .max_epochs(-1)
      .num_sanity_val_steps(0)
      .enable_checkpointing(false)
      .logger(false)
      .enable_progress_bar(false)
      .enable_model_summary(false);
  return options;
}

}  // namespace

std::shared_ptr<LRFinder> Tuner::lr_find(LightningModule& module, DataModule& data, LRFinderOptions options) const {
  auto finder = std::make_shared<LRFinder>(options);
  const TrainerOptions sweep = search_options(options_, options.num_training_steps()).limit_val_batches(int64_t{0});
  return restoring(module, [&] {
    Trainer trainer(sweep, {finder}, {}, std::nullopt, launcher_);
    trainer.fit(module, data);
    return finder;
  });
}

int64_t Tuner::scale_batch_size(LightningModule& module, DataModule& data, ScaleBatchSizeOptions options) const {
  constexpr const char* where = "[Tuner::scale_batch_size]";
  options.validate();
  int64_t* batch_size = data.batch_arg(options.batch_arg_name());
  if (batch_size == nullptr) {
    throw std::invalid_argument(fmt::format("{} the data module has no batch size option '{}' (batch_arg_name; "
                                            "DataModule::batch_arg)",
                                            where, options.batch_arg_name()));
  }
  const TrainerConfig config = TrainerConfig::resolve(options_, Platform::detect_for(options_));
  if (config.world_size > 1) {
    throw std::invalid_argument(
        fmt::format("{} searches in one process; the options ask for {} (devices * num_nodes)", where, config.world_size));
  }
  if (config.accelerator == AcceleratorKind::Cpu && !options.max_val()) {
    throw std::invalid_argument(fmt::format(
        "{} max_val must be set on the CPU: no out-of-memory error ends the search there", where));
  }
  // Lightning's trial: the whole training set available, validation cut to as many batches.
  const TrainerOptions trial_options = search_options(options_, options.steps_per_trial())
                                           .limit_train_batches(1.0)
                                           .limit_val_batches(options.steps_per_trial());
  std::optional<int64_t> train_size;  // examples per epoch, once a trial's loader told
  auto report = [](int64_t size, const char* outcome, int64_t next) {
    std::cout << fmt::format("fulgur: scale_batch_size: batch size {} {}, trying {}", size, outcome, next) << std::endl;
  };
  // Whether a fit at `size` ran; false where it ran out of memory (or would, above max_val).
  auto trial = [&](int64_t size) {
    *batch_size = size;
    if (options.max_val() && size > *options.max_val()) return false;
    try {
      Trainer trainer(trial_options);
      trainer.fit(module, data);
      if (const auto* loader = dynamic_cast<const DatasetLoader*>(trainer.train_dataloader())) {
        train_size = loader->shard_examples();
      }
      return true;
    } catch (const c10::OutOfMemoryError&) {
      // The caching allocator keeps the freed blocks for the next trial to reuse.
      return false;
    } catch (const std::exception& e) {  // cuDNN's and cuBLAS's, which the Trainer gave a location
      if (!is_out_of_memory(e.what())) throw;
      return false;
    }
  };
  // Never beyond the training set (Lightning clamps to len(dataset)).
  auto bounded = [&](int64_t size) { return train_size ? std::min(size, *train_size) : size; };

  const int64_t original = *batch_size;
  std::optional<int64_t> found;
  try {
    found = restoring(module, [&]() -> std::optional<int64_t> {
      std::optional<int64_t> ran;  // the last size that ran
      int64_t size = options.init_val();
      if (options.mode() == ScaleBatchSizeMode::Power) {
        for (int64_t i = 0; i < options.max_trials(); ++i) {
          if (trial(size)) {
            ran = size;
            const int64_t next = bounded(size * 2);
            if (next == size || i + 1 == options.max_trials()) break;
            report(size, "succeeded", next);
            size = next;
          } else {
            // Back to the last size that ran; with none yet, halve.
            if (ran || size == 1) break;
            report(size, "failed", size / 2);
            size /= 2;
          }
        }
        return ran;
      }
      int64_t low = 0;              // largest size that ran (0: none yet)
      std::optional<int64_t> high;  // smallest size that failed
      int64_t ran_trials = 0;
      while (true) {
        if (trial(size)) {
          ran = low = size;
          if (++ran_trials >= options.max_trials()) break;
          if (high && *high - low <= 1) break;
          const int64_t next = high ? (low + *high) / 2 : bounded(size * 2);
          if (next == size) break;
          report(size, "succeeded", next);
          size = next;
        } else {
          // Every size above max_val fails: bisect below it, not below the size tried.
          high = options.max_val() && size > *options.max_val() ? *options.max_val() + 1 : size;
          if (*high - low <= 1) break;
          report(size, "failed", (low + *high) / 2);
          size = (low + *high) / 2;
        }
      }
      return ran;
    });
  } catch (...) {
    *batch_size = original;
    throw;
  }
  if (!found) {
    *batch_size = original;
    throw std::runtime_error(fmt::format("{} no batch size from {} down to 1 trained without running out of memory",
                                         where, options.init_val()));
  }
  *batch_size = *found;
  std::cout << fmt::format("fulgur: scale_batch_size: batch size {} found", *found) << std::endl;
  return *found;
}

}  // namespace fulgur
