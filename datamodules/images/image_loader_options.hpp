#pragma once

#include <fulgur/datamodules/loading/dataset_loader.hpp>
#include <fulgur/datamodules/loading/default_num_workers.hpp>
#include <fulgur/core/options.hpp>

#include <cstdint>
#include <optional>

namespace fulgur {

// The loader fields every image data module (CINIC10, CIFAR10, ImageNet)
// declares, once: each module's option list names them with its own
// defaults, so its YAML keys stay flat (data.batch_size, data.num_workers).
// num_workers defaults to SLURM_CPUS_PER_TASK under SLURM.
// clang-format off
#define FULGUR_IMAGE_LOADER_OPTIONS(X, BATCH_SIZE, NUM_WORKERS, PERSISTENT_WORKERS, PIN_MEMORY)                    \
  X(int64_t, batch_size, BATCH_SIZE, "samples per batch", check::AtLeast{1})                                     \
  X(int64_t, num_workers, default_num_workers(NUM_WORKERS), "loader threads per split (0: in the training thread)", \
    check::AtLeast{0})                                                                                           \
  X(bool, shuffle, true, "reshuffle the training split every epoch", check::Any{})                               \
  X(bool, persistent_workers, PERSISTENT_WORKERS, "keep loader threads alive across epochs", check::Any{})       \
  X(bool, pin_memory, PIN_MEMORY, "page-locked batches for an asynchronous copy to the GPU", check::Any{})       \
  X(bool, skip_bad_samples, false, "log, count and replace unreadable images instead of stopping", check::Any{}) \
  X(std::optional<int64_t>, seed, std::nullopt, "seed of the training order and crops; null: from torch's seed", \
    check::AtLeast{0})
// clang-format on

/// The DatasetLoader options of one split of an image data module, from its
/// FULGUR_IMAGE_LOADER_OPTIONS fields: the training split (`train_seed`
/// given) shuffles as the options say; evaluation splits never shuffle and
/// take seed 0, since drawing one would advance torch's default generator
/// as a side effect.
template <class Options>
DatasetLoaderOptions image_loader_options(const Options& options, std::optional<uint64_t> train_seed) {
  return DatasetLoaderOptions(options.batch_size())
      .shuffle(train_seed.has_value() && options.shuffle())
      .num_workers(options.num_workers())
      .persistent_workers(options.persistent_workers())
      .pin_memory(options.pin_memory())
      .skip_bad_samples(options.skip_bad_samples())
      .seed(train_seed.value_or(0));
}

}  // namespace fulgur
