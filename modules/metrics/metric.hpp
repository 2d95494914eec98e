#pragma once

#include <fulgur/modules/module_runtime.hpp>

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace fulgur::metrics {

/// How a metric state combines across processes (and, in forward(), a
/// batch's state with the epoch's): torchmetrics' dist_reduce_fx.
enum class Reduction { Sum, Mean, Max, Min, Cat };

/// A stateful metric in torchmetrics' shape: update() adds a batch to the
/// states with device operations only, compute() turns the states of every
/// batch since reset() into the value, synchronised over every process
/// through the module's collectives, and reset() starts over. A Metric is a
/// torch::nn::Module: register it in a LightningModule with register_module
/// and it follows module.to(device) and receives the run's collectives
/// (LightningModule gives it its ModuleRuntime). States are not buffers:
/// DDP never broadcasts them, and only persistent ones (add_state's
/// `persistent`, or persistent(true)) go into the module's state_dict and
/// checkpoints, as "<module path>.<state>". Subclasses declare states in
/// their constructor with add_state, define their own update(...) and
/// forward(...), and compute_value().
class Metric : public torch::nn::Module {
 public:
  /// The value over every update since reset(), from states reduced over
  /// every process (every process must call it together). Cached until the
  /// next update or reset, so logging it and calling it again syncs once.
  torch::Tensor compute();
  /// States back to their defaults; forgets the cached value.
  void reset();

  /// Collectives for compute(); nullptr: this process's states only.
  void set_runtime(ModuleRuntime* runtime) { runtime_ = runtime; }
  ModuleRuntime* runtime() const { return runtime_; }

  /// The value of the last forward()'s batch alone (not synchronised);
  /// undefined after a plain update() or reset().
  const torch::Tensor& batch_value() const { return batch_value_; }
  /// update() calls since reset().
  int64_t update_count() const { return update_count_; }

  /// Every state persistent or not (torchmetrics' Metric.persistent(mode)).
  void persistent(bool mode);
  /// The persistent states by name, this process's (a Cat state: its rows
  /// so far joined), for state_dict(); empty when none is persistent.
  std::vector<std::pair<std::string, torch::Tensor>> persistent_states() const;
  /// Throws std::invalid_argument naming the state unless `value` fits the
  /// persistent state `name` (same shape; a Cat state: any number of rows).
  void check_state(const std::string& name, const torch::Tensor& value) const;
  /// Restores a persistent state from a checkpoint (after check_state); the
  /// cached value is forgotten.
  void load_state(const std::string& name, const torch::Tensor& value);

  /// States move with the module; a dtype change leaves them as declared.
  void to(torch::Device device, torch::Dtype dtype, bool non_blocking = false) override;
  void to(torch::Dtype dtype, bool non_blocking = false) override;
  void to(torch::Device device, bool non_blocking = false) override;

 protected:
  /// Declares a state. For Reduction::Cat, `default_value` is an empty
  /// tensor ([0, ...]) that fixes the dtype and the trailing shape; update()
  /// appends rows with append(). `persistent`: saved in the module's
  /// state_dict and checkpoints (torchmetrics' default is not).
  void add_state(const std::string& name, const torch::Tensor& default_value, Reduction reduction,
                 bool persistent = false);
  /// A Sum/Mean/Max/Min state (synced inside compute_value()).
  torch::Tensor& state(const std::string& name);
  /// Appends rows to a Cat state (no copy of what is there).
  void append(const std::string& name, const torch::Tensor& rows);
  /// A Cat state's rows so far as one tensor (in compute_value(): every process's).
  torch::Tensor cat_state(const std::string& name);

  /// Every update(...) starts with this: moves the states to `device` when
  /// the inputs live elsewhere, and marks cached values stale.
  void begin_update(const torch::Device& device);
  /// forward(): runs `update` on fresh states, computes that batch's value
  /// (this process only), then merges the batch into the epoch's states.
  torch::Tensor forward_with(const std::function<void()>& update);
  /// The value from the states (already synchronised when compute() calls it).
  virtual torch::Tensor compute_value() = 0;

  /// `name`: the class, for error messages ("[Accuracy::update] ...") and name().
  explicit Metric(const std::string& name) : torch::nn::Module(name) {}

 private:
  struct State {
    std::string name;
    torch::Tensor default_value;
    Reduction reduction;
    bool persistent;
    torch::Tensor value;              // Sum/Mean/Max/Min
    std::vector<torch::Tensor> rows;  // Cat
  };
  State& find(const std::string& name, const char* method);
  const State& find(const std::string& name, const char* method) const;
  void move_states(const torch::Device& device);
  /// Replaces every state by its reduction over the processes.
  void sync_states(ModuleRuntime& runtime);

  std::vector<State> states_;
  ModuleRuntime* runtime_ = nullptr;
  int64_t update_count_ = 0;
  torch::Tensor computed_;
  torch::Tensor batch_value_;
};

/// The zero_division = 0 rule of torchmetrics: num / den, 0 where den is 0.
torch::Tensor safe_divide(const torch::Tensor& num, const torch::Tensor& den);

}  // namespace fulgur::metrics
