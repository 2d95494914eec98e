#pragma once

#include <fulgur/core/option_enum.hpp>
#include <fulgur/core/options.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fulgur {

/// How scale_batch_size searches: doubling only, or doubling then bisecting.
enum class ScaleBatchSizeMode { Power, BinSearch };
inline std::vector<std::string> option_choices(ScaleBatchSizeMode) { return {"power", "binsearch"}; }

/// Options of Tuner::scale_batch_size, with Lightning's names and defaults
/// (Tuner.scale_batch_size, BatchSizeFinder), plus max_val: a CPU has no
/// out-of-memory error to stop the search at, so there the bound is given.
#define FULGUR_SCALE_BATCH_SIZE_OPTIONS(X)                                                                       \
  X(fulgur::ScaleBatchSizeMode, mode, fulgur::ScaleBatchSizeMode::Power,                                         \
    "power: double until a trial fails; binsearch: then bisect between the last size that ran and the failed one", \
    fulgur::check::Any{})                                                                                        \
  X(int64_t, steps_per_trial, 3, "optimizer steps of each trial fit", fulgur::check::AtLeast{1})                 \
  X(int64_t, init_val, 2, "batch size of the first trial", fulgur::check::AtLeast{1})                           \
  X(int64_t, max_trials, 25, "trials at most (binsearch: trials that ran)", fulgur::check::AtLeast{1})          \
  X(std::string, batch_arg_name, "batch_size", "the data module's option that holds the batch size",           \
    fulgur::check::Any{})                                                                                        \
  X(std::optional<int64_t>, max_val, std::nullopt,                                                               \
    "largest batch size to try: a larger one fails as an out-of-memory would; required on the CPU",             \
    fulgur::check::AtLeast{1})

struct ScaleBatchSizeOptions {
  FULGUR_OPTIONS(ScaleBatchSizeOptions, FULGUR_SCALE_BATCH_SIZE_OPTIONS)
};

}  // namespace fulgur
