#include <fulgur/datamodules/images/transforms/normalize.hpp>

#include <cmath>
#include <stdexcept>
#include <string>

namespace fulgur {

Normalize::Normalize(std::vector<double> mean, std::vector<double> std) {
  if (mean.empty() || mean.size() != std.size()) {
    throw std::invalid_argument("[Normalize::Normalize] mean and std need one entry per channel, got " +
                                std::to_string(mean.size()) + " and " + std::to_string(std.size()));
  }
  for (size_t c = 0; c < mean.size(); ++c) {
    if (!std::isfinite(mean[c]) || !std::isfinite(std[c]) || !(std[c] > 0)) {
      throw std::invalid_argument("[Normalize::Normalize] channel " + std::to_string(c) + ": mean " +
                                  std::to_string(mean[c]) + ", std " + std::to_string(std[c]) +
                                  "; expected finite values and std > 0");
    }
    mean_.push_back(static_cast<float>(mean[c]));
    std_.push_back(static_cast<float>(std[c]));
  }
}

torch::Tensor Normalize::operator()(const torch::Tensor& image_chw) const {
  if (image_chw.dim() != 3 || image_chw.size(0) != static_cast<int64_t>(channels()) ||
      image_chw.scalar_type() != torch::kFloat32) {
    throw std::invalid_argument("[Normalize::operator()] expected a float [" + std::to_string(channels()) +
                                ", H, W] image, got " + std::to_string(image_chw.dim()) + " dimensions");
  }
  torch::Tensor out = image_chw.to(torch::kCPU).contiguous().clone();
  float* data = out.data_ptr<float>();
  const int64_t plane = out.size(1) * out.size(2);
  for (size_t c = 0; c < channels(); ++c) {
    float* values = data + static_cast<int64_t>(c) * plane;
    for (int64_t i = 0; i < plane; ++i) values[i] = apply(c, values[i]);
  }
  return out.to(image_chw.device());
}

}  // namespace fulgur
