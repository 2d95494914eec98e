#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace fulgur {

/// What the hooked gradient synchronisers (ddp's GradientReducer, horovod's
/// HorovodController, fsdp's ShardedReducer) share: a post-accumulate-grad
/// hook on each trainable parameter that reports its slot once per step
/// (the ready bitmap makes it once), and the error for a parameter that
/// received no gradient, naming the option that allows one.
class GradientReadyHooks {
 public:
  /// Slot i is `parameters[i]`; `on_ready(i)` runs when autograd has
  /// accumulated its gradient (parameters that need none get no hook).
  /// Without `install` nobody is hooked: the owner marks slots itself.
  /// `unused_option` is the option's key, e.g. "ddp.find_unused_parameters".
  GradientReadyHooks(std::vector<torch::Tensor> parameters, std::function<void(size_t)> on_ready,
                     std::string unused_option, bool install = true);
  /// Removes the hooks.
  ~GradientReadyHooks();
  GradientReadyHooks(const GradientReadyHooks&) = delete;
  GradientReadyHooks& operator=(const GradientReadyHooks&) = delete;

  /// A new step: no slot is ready.
  void reset();
  bool is_ready(size_t slot) const { return ready_[slot]; }
  /// Marks `slot` ready; false when it already was this step.
  bool mark_ready(size_t slot);
  /// A slot nobody marked by the end of backward: marks it when unused
  /// parameters are `allowed`, else throws "[who] parameter 'name' received
  /// no gradient in this step (rank r); set <option>=true ...".
  void mark_missing(size_t slot, bool allowed, const char* who, const std::string& name, int64_t rank);

 private:
  std::vector<torch::Tensor> hooked_;
  std::vector<bool> ready_;
  std::string unused_option_;
};

}  // namespace fulgur
