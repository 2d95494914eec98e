#include <fulgur/callbacks/ema_weight_averaging.hpp>

namespace fulgur {

EMAWeightAveraging::EMAWeightAveraging(EMAWeightAveragingOptions options)
    : WeightAveraging((options.validate(), options.use_buffers())), options_(std::move(options)) {}

bool EMAWeightAveraging::should_update(std::optional<int64_t> step_idx, std::optional<int64_t> epoch_idx) const {
  if (step_idx) {
    const auto start = options_.update_starting_at_step();
    const int64_t every = options_.update_every_n_steps();
    if ((!start || *step_idx >= *start) && every > 0 && *step_idx % every == 0) return true;
  }
  if (epoch_idx) {
    const auto start = options_.update_starting_at_epoch();
    if (start && *epoch_idx >= *start) return true;
  }
  return false;
}

void EMAWeightAveraging::average(torch::Tensor& averaged, const torch::Tensor& current, int64_t) const {
  averaged.mul_(options_.decay()).add_(current, 1.0 - options_.decay());
}

}  // namespace fulgur
