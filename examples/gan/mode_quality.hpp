#pragma once

// The GAN's sample-quality metric as a fulgur Metric: two Sum states (good
// samples per mode, and samples), so compute() sums them over every rank
// before dividing and 2 processes report what 1 process does.
#include "ring_data.hpp"

#include <fulgur/fulgur.hpp>

namespace examples {

/// Mode coverage and quality of generated points: a point is good within 4
/// standard deviations of its nearest mode; a mode is covered when it holds
/// at least a quarter of its fair share (samples / modes) of good points.
/// compute() returns {modes covered, share of good samples} as float64 [2]
/// (one synchronisation gives both numbers the example logs).
class ModeQuality : public fulgur::metrics::Metric {
 public:
  ModeQuality() : Metric("ModeQuality") {
    add_state("per_mode", torch::zeros({kModes}, torch::kLong), fulgur::metrics::Reduction::Sum);
    add_state("samples", torch::zeros({}, torch::kLong), fulgur::metrics::Reduction::Sum);
  }
  /// `points` [N, 2]; device operations only (no host read).
  void update(const torch::Tensor& points) {
    begin_update(points.device());
    const torch::Tensor p = points.detach();
    const torch::Tensor distances = torch::cdist(p, ring_centres().to(p.device()));
    const auto [nearest, mode] = distances.min(1);
    const torch::Tensor good = nearest < 4 * kModeStd;
    state("per_mode") = state("per_mode").index_add(0, mode, good.to(torch::kLong));
    state("samples") = state("samples") + p.size(0);
  }

 protected:
  torch::Tensor compute_value() override {
    const torch::Tensor per_mode = state("per_mode");
    const torch::Tensor samples = state("samples").to(torch::kDouble);
    const torch::Tensor modes = (per_mode >= state("samples") / (4 * kModes)).sum().to(torch::kDouble);
    return torch::stack({modes, fulgur::metrics::safe_divide(per_mode.sum(), samples)});
  }
};

}  // namespace examples
