#pragma once

#include <torch/torch.h>

#include <vector>

namespace fulgur {

/// Buffers a sharded step needs again at every step (the all-gathers' and
/// reduce-scatters' flat inputs and outputs), kept between uses instead of
/// allocated and freed per unit per step. A buffer is handed back only once
/// no collective uses it, so the pool holds at most what was in use at once
/// (the units in flight), never one buffer per unit.
class TensorPool {
 public:
  /// A 1-D tensor of `numel` elements of `options`' type and device: a
  /// returned one when there is one, else a new one (uninitialised).
  torch::Tensor take(int64_t numel, const torch::TensorOptions& options);
  /// Hands `tensor` back (undefined: nothing happens); nothing else may
  /// hold or use it afterwards.
  void give(torch::Tensor& tensor);

 private:
  std::vector<torch::Tensor> free_;
};

}  // namespace fulgur
