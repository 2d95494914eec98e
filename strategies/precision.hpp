#pragma once

#include <fulgur/strategies/precision_mode.hpp>

#include <torch/torch.h>

#include <memory>
#include <optional>

namespace fulgur {

/// Mixed precision: autocast around the forward pass, and for float16 a
/// dynamic gradient scaler (scale the loss, unscale before clipping, skip the
/// step when gradients overflow) — what torch.amp's autocast + GradScaler do.
class Precision {
 public:
  Precision(PrecisionMode mode, torch::Device device);

  PrecisionMode mode() const { return mode_; }

  /// Enables autocast for the device while alive (no-op for 32-true).
  class AutocastScope {
   public:
    AutocastScope(const Precision& precision);
    ~AutocastScope();
    AutocastScope(const AutocastScope&) = delete;
    AutocastScope& operator=(const AutocastScope&) = delete;

   private:
    std::optional<c10::DeviceType> device_type_;
    bool was_enabled_ = false;
    at::ScalarType previous_dtype_ = at::kFloat;
  };

  /// Runs backward on `loss`, scaled first when a gradient scaler is active.
  void backward(const torch::Tensor& loss) const;
  /// Divides the gradients by the current scale (idempotent per step); call
  /// before reading or clipping gradients.
  void unscale_gradients(torch::optim::Optimizer& optimizer);
  /// Steps the optimizer unless the scaler found inf/NaN gradients; updates
  /// the scale. Returns whether the optimizer stepped.
  bool optimizer_step(torch::optim::Optimizer& optimizer);

  /// Current loss scale (1 when no scaler is used).
  double loss_scale() const;

  /// The gradient scaler's state with torch.amp.GradScaler's keys ("scale",
  /// "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker");
  /// empty without a scaler. For checkpoints.
  c10::impl::GenericDict state_dict() const;
  /// Restores state_dict(); an empty dict leaves the scaler as it is.
  void load_state_dict(const c10::impl::GenericDict& state);

 private:
  bool uses_scaler() const { return mode_ == PrecisionMode::FP16Mixed; }
  PrecisionMode mode_;
  torch::Device device_;
  torch::Tensor scale_;          // float32 [1] on the device
  torch::Tensor growth_tracker_;  // int32 [1]
  torch::Tensor found_inf_;       // float32 [1]
  bool unscaled_ = false;
};

}  // namespace fulgur
