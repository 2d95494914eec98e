#pragma once

#include <fulgur/modules/reduce_op.hpp>

#include <cstdint>
#include <optional>

namespace fulgur {

/// Options of LightningModule::log(), with Lightning's names. on_step and
/// on_epoch default by where log() is called: training_step logs per step,
/// validation/test steps per epoch. Logged with both, a metric appears as
/// `<name>_step` and `<name>_epoch`.
struct LogOptions {
  bool prog_bar = false;
  bool logger = true;
  std::optional<bool> on_step;
  std::optional<bool> on_epoch;
  /// How the epoch value combines the steps' (Mean: weighted by batch size).
  ReduceOp reduce = ReduceOp::Mean;
  /// Reduce the epoch value across processes before it is used anywhere.
  bool sync_dist = false;
  /// Weight of this value in the epoch mean; defaults to the batch's size.
  std::optional<int64_t> batch_size;
};

}  // namespace fulgur
