#include <fulgur/modules/activation_checkpoint.hpp>

#include <ATen/autocast_mode.h>
#include <torch/csrc/autograd/custom_function.h>

#include <optional>
#include <stdexcept>

namespace fulgur {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// What the recomputation needs besides the saved inputs: the forward, the
/// random generators' states and the autocast state of the first run.
struct Recompute : torch::CustomClassHolder {
  CheckpointedForward forward;
  size_t num_inputs = 0;
  std::vector<torch::Tensor> parameters;
  torch::Tensor cpu_rng;
  std::optional<c10::Device> cuda_device;
  torch::Tensor cuda_rng;
  struct Autocast {
    c10::DeviceType device;
    bool enabled;
    c10::ScalarType dtype;
  };
  std::vector<Autocast> autocast;
};

at::Generator cpu_generator() { return at::detail::getDefaultCPUGenerator(); }

std::vector<Recompute::Autocast> autocast_state() {
  std::vector<Recompute::Autocast> state;
  for (const auto device : {c10::DeviceType::CPU, c10::DeviceType::CUDA}) {
    state.push_back({device, at::autocast::is_autocast_enabled(device), at::autocast::get_autocast_dtype(device)});
  }
  return state;
}

void set_autocast(const std::vector<Recompute::Autocast>& state) {
  for (const auto& s : state) {
    at::autocast::set_autocast_enabled(s.device, s.enabled);
    at::autocast::set_autocast_dtype(s.device, s.dtype);
  }
}

/// Puts the generators and autocast as they were at the first run, and back after.
class ReplayScope {
 public:
  explicit ReplayScope(const Recompute& r)
      : cuda_(r.cuda_device),
        cpu_rng_(cpu_generator().get_state()),
        autocast_(autocast_state()) {
    cpu_generator().set_state(r.cpu_rng);
    if (cuda_) {
      cuda_rng_ = generator().get_state();
      generator().set_state(r.cuda_rng);
    }
    set_autocast(r.autocast);
    at::autocast::increment_nesting();
  }
  ~ReplayScope() {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    set_autocast(autocast_);
    cpu_generator().set_state(cpu_rng_);
    if (cuda_) generator().set_state(cuda_rng_);
  }
  ReplayScope(const ReplayScope&) = delete;
  ReplayScope& operator=(const ReplayScope&) = delete;

 private:
  at::Generator generator() const { return at::globalContext().defaultGenerator(*cuda_); }
  std::optional<c10::Device> cuda_;
  torch::Tensor cpu_rng_;
  torch::Tensor cuda_rng_;
  std::vector<Recompute::Autocast> autocast_;
};

struct CheckpointFunction : torch::autograd::Function<CheckpointFunction> {
  // Arguments: the state, then the inputs and the parameters (both as
  // tensors of this node, so its outputs need a gradient when they do).
  static variable_list forward(AutogradContext* ctx, const c10::intrusive_ptr<Recompute>& state,
                               at::TensorList inputs_and_parameters) {
    const std::vector<torch::Tensor> inputs(inputs_and_parameters.begin(),
                                            inputs_and_parameters.begin() + static_cast<int64_t>(state->num_inputs));
    ctx->save_for_backward(inputs);
    ctx->saved_data["state"] = c10::IValue::make_capsule(state);
    // Grad mode is off here: no graph, no activations kept. Autocast must not
    // cache its casts of the parameters meanwhile: LibTorch up to 2.10 would
    // keep those graph-less copies, and the recomputation would reuse them and
    // give the parameters no gradient.
    const bool caching = at::autocast::is_autocast_cache_enabled();
    at::autocast::set_autocast_cache_enabled(false);
    struct RestoreCache {
      bool caching;
      ~RestoreCache() { at::autocast::set_autocast_cache_enabled(caching); }
    } restore{caching};
    return state->forward(inputs);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto state = c10::static_intrusive_pointer_cast<Recompute>(ctx->saved_data["state"].toCapsule());
    const variable_list saved = ctx->get_saved_variables();
    std::vector<torch::Tensor> inputs;
    for (const auto& t : saved) inputs.push_back(t.detach().requires_grad_(t.requires_grad()));
    std::vector<torch::Tensor> outputs;
    {
      torch::AutoGradMode grad(true);
      ReplayScope replay(*state);
      outputs = state->forward(inputs);
    }
    // Gradients for the inputs and parameters that need one, through the recomputed graph.
    std::vector<torch::Tensor> roots, root_grads, wrt;
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (outputs[i].requires_grad() && grad_outputs[i].defined()) {
        roots.push_back(outputs[i]);
        root_grads.push_back(grad_outputs[i]);
      }
    }
    // By tensor argument; the result has a slot for the state too. Whether a
    // gradient is needed comes from the tensors themselves.
    std::vector<size_t> wrt_index;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].requires_grad()) {
        wrt.push_back(inputs[i]);
        wrt_index.push_back(i);
      }
    }
    variable_list result(1 + inputs.size() + state->parameters.size());
    for (size_t p = 0; p < state->parameters.size(); ++p) {
      if (state->parameters[p].requires_grad()) {
        wrt.push_back(state->parameters[p]);
        wrt_index.push_back(inputs.size() + p);
      }
    }
    if (roots.empty() || wrt.empty()) return result;
    const variable_list grads = torch::autograd::grad(roots, wrt, root_grads, /*retain_graph=*/false,
                                                      /*create_graph=*/false, /*allow_unused=*/true);
    for (size_t k = 0; k < grads.size(); ++k) result[1 + wrt_index[k]] = grads[k];
    return result;
  }
};

}  // namespace

std::vector<torch::Tensor> checkpoint(const CheckpointedForward& forward, const std::vector<torch::Tensor>& inputs,
                                      const std::vector<torch::Tensor>& parameters) {
  if (!torch::GradMode::is_enabled()) return forward(inputs);
  auto state = c10::make_intrusive<Recompute>();
  state->forward = forward;
  state->num_inputs = inputs.size();
  state->parameters = parameters;
  state->cpu_rng = cpu_generator().get_state();
  for (const auto& t : inputs) {
    if (t.defined() && t.is_cuda()) {
      state->cuda_device = c10::Device(c10::DeviceType::CUDA, t.device().index());
      state->cuda_rng = at::globalContext().defaultGenerator(*state->cuda_device).get_state();
      break;
    }
  }
  state->autocast = autocast_state();
  std::vector<torch::Tensor> all(inputs);
  all.insert(all.end(), parameters.begin(), parameters.end());
  for (const auto& t : all) {
    if (!t.defined()) throw std::invalid_argument("[checkpoint] an input or parameter is an undefined tensor");
  }
  return CheckpointFunction::apply(state, at::TensorList(all));
}

}  // namespace fulgur
