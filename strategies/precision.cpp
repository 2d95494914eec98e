#include <fulgur/strategies/precision.hpp>

#include <ATen/autocast_mode.h>

namespace fulgur {

namespace {

// torch.amp.GradScaler's defaults.
constexpr double kInitScale = 65536.0;
constexpr double kGrowthFactor = 2.0;
constexpr double kBackoffFactor = 0.5;
constexpr int64_t kGrowthInterval = 2000;

std::vector<torch::Tensor> gradients_of(torch::optim::Optimizer& optimizer) {
  std::vector<torch::Tensor> grads;
  for (auto& group : optimizer.param_groups()) {
    for (auto& p : group.params()) {
      if (p.grad().defined()) grads.push_back(p.mutable_grad());
    }
  }
  return grads;
}

}  // namespace

Precision::Precision(PrecisionMode mode, torch::Device device) : mode_(mode), device_(device) {
  if (uses_scaler()) {
    auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(device_);
    scale_ = torch::full({1}, kInitScale, f32);
    growth_tracker_ = torch::zeros({1}, f32.dtype(torch::kInt32));
    found_inf_ = torch::zeros({1}, f32);
  }
}

Precision::AutocastScope::AutocastScope(const Precision& precision) {
  if (precision.mode_ == PrecisionMode::Full32) return;
  device_type_ = precision.device_.type();
  was_enabled_ = at::autocast::is_autocast_enabled(*device_type_);
  previous_dtype_ = at::autocast::get_autocast_dtype(*device_type_);
  at::autocast::set_autocast_dtype(*device_type_,
                                   precision.mode_ == PrecisionMode::BF16Mixed ? at::kBFloat16 : at::kHalf);
  at::autocast::set_autocast_enabled(*device_type_, true);
  at::autocast::increment_nesting();
}

Precision::AutocastScope::~AutocastScope() {
  if (!device_type_) return;
  // Cached casts of the weights are only valid within one forward pass.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  at::autocast::set_autocast_enabled(*device_type_, was_enabled_);
  at::autocast::set_autocast_dtype(*device_type_, previous_dtype_);
}

void Precision::backward(const torch::Tensor& loss) const {
  if (uses_scaler()) {
    (loss.to(torch::kFloat32) * scale_.squeeze()).backward();
  } else {
    loss.backward();
  }
}

void Precision::unscale_gradients(torch::optim::Optimizer& optimizer) {
  if (!uses_scaler() || unscaled_) return;
  auto grads = gradients_of(optimizer);
  found_inf_.zero_();
  if (!grads.empty()) {
    at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf_, scale_.reciprocal());
  }
  unscaled_ = true;
}

bool Precision::optimizer_step(torch::optim::Optimizer& optimizer) {
  if (!uses_scaler()) {
    optimizer.step();
    return true;
  }
  unscale_gradients(optimizer);
  const bool finite = found_inf_.item<float>() == 0.0f;
  if (finite) optimizer.step();
  at::_amp_update_scale_(scale_, growth_tracker_, found_inf_, kGrowthFactor, kBackoffFactor, kGrowthInterval);
  unscaled_ = false;
  return finite;
}

double Precision::loss_scale() const { return uses_scaler() ? scale_.item<double>() : 1.0; }

c10::impl::GenericDict Precision::state_dict() const {
  auto state = c10::impl::GenericDict(c10::StringType::get(), c10::AnyType::get());
  if (!uses_scaler()) return state;
  state.insert("scale", scale_.item<double>());
  state.insert("growth_factor", kGrowthFactor);
  state.insert("backoff_factor", kBackoffFactor);
  state.insert("growth_interval", kGrowthInterval);
  state.insert("_growth_tracker", static_cast<int64_t>(growth_tracker_.item<int32_t>()));
  return state;
}

void Precision::load_state_dict(const c10::impl::GenericDict& state) {
  if (!uses_scaler() || !state.contains("scale")) return;
  scale_.fill_(state.at("scale").toDouble());
  growth_tracker_.fill_(state.at("_growth_tracker").toInt());
}

}  // namespace fulgur
