#include <fulgur/ensemble/nonfinite_samples.hpp>

#include <cstring>
#include <stdexcept>

namespace fulgur {

namespace {

// A float32 is NaN or infinite exactly when its exponent bits are all set.
constexpr uint32_t kExponent = 0x7f800000u;

// True when some of the `count` floats at `data` is not finite; a branch-free loop the compiler vectorises.
bool any_nonfinite(const float* data, int64_t count) {
  uint32_t found = 0;
  for (int64_t i = 0; i < count; ++i) {
    uint32_t bits = 0;
    std::memcpy(&bits, data + i, sizeof bits);
    found |= static_cast<uint32_t>((bits & kExponent) == kExponent);
  }
  return found != 0;
}

}  // namespace

std::vector<int64_t> nonfinite_samples(const torch::Tensor& inputs, const torch::Tensor& targets) {
  if (inputs.scalar_type() != torch::kFloat32 || targets.scalar_type() != torch::kFloat32 ||
      !inputs.is_contiguous() || !targets.is_contiguous() || inputs.dim() < 1 || targets.dim() < 1 ||
      inputs.size(0) != targets.size(0)) {
    throw std::invalid_argument("[nonfinite_samples] needs contiguous float32 inputs and targets of one sample count");
  }
  const int64_t samples = inputs.size(0);
  const float* x = inputs.data_ptr<float>();
  const float* y = targets.data_ptr<float>();
  if (!any_nonfinite(x, inputs.numel()) && !any_nonfinite(y, targets.numel())) return {};
  const int64_t x_row = samples == 0 ? 0 : inputs.numel() / samples;
  const int64_t y_row = samples == 0 ? 0 : targets.numel() / samples;
  std::vector<int64_t> bad;
  for (int64_t s = 0; s < samples; ++s) {
    if (any_nonfinite(x + s * x_row, x_row) || any_nonfinite(y + s * y_row, y_row)) bad.push_back(s);
  }
  return bad;
}

}  // namespace fulgur
