#pragma once

#include <torch/torch.h>

#include <vector>

namespace fulgur {

/// What a sharding strategy does around the forward of a module wrapped in
/// ShardedUnit (FSDP's forward pre- and post-hooks, which LibTorch modules
/// lack): gather the unit's parameters before, free them after and arrange
/// their gathering again before the unit's backward. The strategy installs
/// itself at setup and removes itself at teardown; a unit without hooks
/// (any other strategy) runs its forward as it is.
class ShardedUnitHooks {
 public:
  virtual ~ShardedUnitHooks() = default;
  virtual void before_forward(const torch::nn::Module& unit) = 0;
  virtual void after_forward(const torch::nn::Module& unit, const std::vector<torch::Tensor>& outputs) = 0;
};

/// The non-template part of every ShardedUnit: where the strategy finds it
/// (a dynamic_cast over the module tree) and installs its hooks.
class ShardedUnitBase {
 public:
  virtual ~ShardedUnitBase() = default;
  void set_sharded_unit_hooks(ShardedUnitHooks* hooks) { hooks_ = hooks; }
  /// Activation checkpointing (fulgur::checkpoint): the unit's forward runs
  /// again during backward instead of keeping its activations, under any
  /// strategy. The Trainer's activation_checkpointing option sets it on
  /// every unit of the module.
  void set_activation_checkpointing(bool on) { checkpointing_ = on; }
  bool activation_checkpointing() const { return checkpointing_; }

 protected:
  ShardedUnitHooks* hooks_ = nullptr;
  bool checkpointing_ = false;
};

}  // namespace fulgur
