#pragma once

#include <fulgur/modules/sharded_unit_hooks.hpp>

#include <torch/torch.h>

#include <utility>

namespace fulgur {

/// Wraps a submodule as one unit of the fully sharded strategy (FSDP's
/// `wrap`): under FULL_SHARD its parameters are all-gathered just before
/// its forward, freed after it, gathered again just before its backward
/// and freed once its gradients are reduce-scattered, so a rank holds whole
/// parameters of about one unit at a time. Under any other strategy it is
/// the module itself. The wrapped module's parameters are named
/// `<name>.module.<parameter>`.
///
///   blocks->push_back(fulgur::ShardedUnit<Block>(Block(options)));
template <class Holder>
class ShardedUnitImpl : public torch::nn::Module, public ShardedUnitBase {
 public:
  explicit ShardedUnitImpl(Holder inner) : module(register_module("module", std::move(inner))) {}

  /// The wrapped module's forward of one tensor, between the hooks (a
  /// plain member, so the unit also goes into a Sequential).
  torch::Tensor forward(torch::Tensor input) {
    if (hooks_ != nullptr) hooks_->before_forward(*this);
    torch::Tensor out = module->forward(std::move(input));
    if (hooks_ != nullptr) hooks_->after_forward(*this, {out});
    return out;
  }

  Holder module;
};

/// The holder of ShardedUnitImpl<Holder> (the TORCH_MODULE pattern for a template).
template <class Holder>
class ShardedUnit : public torch::nn::ModuleHolder<ShardedUnitImpl<Holder>> {
 public:
  using torch::nn::ModuleHolder<ShardedUnitImpl<Holder>>::ModuleHolder;
};

}  // namespace fulgur
