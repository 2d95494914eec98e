#pragma once

#include <torch/torch.h>

#include <map>
#include <string>

namespace fulgur {

/// One batch as the steps see it: `input` (first dimension = batch size) and
/// `target` for the common case, plus any other tensors a model needs by name
/// (a padding mask, lengths, a second input, boxes). Every tensor moves to
/// the device together and is collated and sharded with the others:
///
///   Batch b{tokens, labels, {{"mask", mask}}};
///   auto logits = net->forward(b.input, b["mask"]);
struct Batch {
  torch::Tensor input;
  torch::Tensor target;
  /// The named tensors beside input and target.
  std::map<std::string, torch::Tensor> tensors;

  int64_t size() const { return input.defined() ? input.size(0) : 0; }

  bool contains(const std::string& name) const { return tensors.count(name) != 0; }
  /// The named tensor; throws std::out_of_range naming it and the names there are.
  const torch::Tensor& operator[](const std::string& name) const;

  /// Applies `f` to every defined tensor (input, target and the named ones).
  template <class F>
  Batch map(F&& f) const {
    Batch out;
    out.input = input.defined() ? f(input) : input;
    out.target = target.defined() ? f(target) : target;
    for (const auto& [name, tensor] : tensors) out.tensors.emplace(name, tensor.defined() ? f(tensor) : tensor);
    return out;
  }

  /// Moves every tensor; non_blocking only matters for pinned CPU -> CUDA copies.
  Batch to(const torch::Device& device, bool non_blocking = false) const {
    return map([&](const torch::Tensor& t) { return t.to(device, non_blocking); });
  }
  /// Page-locks every tensor, so copies to a GPU can be non_blocking.
  Batch pin_memory() const {
    return map([](const torch::Tensor& t) { return t.pin_memory(); });
  }
};

}  // namespace fulgur
