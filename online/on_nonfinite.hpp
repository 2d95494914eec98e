#pragma once

namespace fulgur {

/// What the online trainer does with a step whose loss or gradients are not
/// finite (NaN or Inf, from the data or the model). Either way the step is
/// not taken, on every rank together, so the weights, the published weights
/// and the checkpoints never hold a NaN or Inf.
enum class OnNonFinite {
  /// Training stops with one error naming the step, the rank and the tensor.
  Stop,
  /// The step is skipped and counted (OnlineTrainer::skipped_steps(), the
  /// `skipped_steps` logged value); training goes on.
  Skip,
};

}  // namespace fulgur
