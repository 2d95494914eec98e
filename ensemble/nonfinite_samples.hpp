#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace fulgur {

/// The samples (rows of the first dimension) of a message that hold a NaN
/// or an infinity in their inputs or targets, in order; empty when every
/// value is finite. `inputs` and `targets` are contiguous float32 tensors of
/// the same sample count, as the server holds a message once converted (a
/// float64 value beyond float32's range is an infinity by then).
///
/// The server refuses these samples before they reach the reservoir
/// (refusal reason `nonfinite`): one client's NaN never reaches a step.
/// One pass over the bits when all are finite (the common case), a second
/// per sample only when some are not.
std::vector<int64_t> nonfinite_samples(const torch::Tensor& inputs, const torch::Tensor& targets);

}  // namespace fulgur
