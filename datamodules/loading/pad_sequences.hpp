#pragma once

#include <torch/torch.h>

#include <vector>

namespace fulgur {

/// Variable-length sequences [L_i, ...] padded into one tensor [B, max L, ...]
/// with `padding_value`, and the mask [B, max L] (bool, true at real
/// positions) a model needs to ignore the padding. For Dataset::collate:
///
///   auto [tokens, mask] = pad_sequences(inputs, 0);
///   return Batch{tokens, targets, {{"mask", mask}}};
///
/// Throws std::invalid_argument when `sequences` is empty or the sequences
/// differ in anything but their first dimension.
struct PaddedSequences {
  torch::Tensor padded;
  torch::Tensor mask;
};
PaddedSequences pad_sequences(const std::vector<torch::Tensor>& sequences, double padding_value = 0.0);

}  // namespace fulgur
