#pragma once

#include <fulgur/modules/batch.hpp>

#include <torch/torch.h>

#include <functional>

namespace fulgur {

/// How a loader page-locks its batches (`pin_memory`): only the tensors
/// still in CPU memory are pinned. Tensors a dataset already put on a
/// device (GPU JPEG decoding returns batches on the GPU) pass through
/// unchanged, since LibTorch refuses to pin them ("only dense CPU tensors
/// can be pinned") and they need no host-to-device copy anyway. The pinning
/// of one tensor is a function so that the rule is testable without a GPU.
class BatchPinner {
 public:
  using PinTensor = std::function<torch::Tensor(const torch::Tensor&)>;

  /// LibTorch's pin_memory() when CUDA is available in this process, else
  /// inactive (a batch is returned as it is).
  BatchPinner();
  /// `pin_tensor` page-locks one CPU tensor (a test passes its own).
  explicit BatchPinner(PinTensor pin_tensor);

  /// The batch with every dense CPU tensor pinned and every other tensor
  /// (on a device, sparse, undefined) as it was.
  Batch pin(const Batch& batch) const;
  /// Whether pin() pins anything (false without CUDA).
  bool active() const { return static_cast<bool>(pin_tensor_); }

  /// The rule itself: a tensor is pinned when it is a dense CPU tensor.
  static bool pinnable(const torch::Tensor& tensor);

 private:
  PinTensor pin_tensor_;
};

}  // namespace fulgur
