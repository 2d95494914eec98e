#include <fulgur/strategies/collectives/gradient_ready_hooks.hpp>

#include <torch/csrc/autograd/function_hook.h>

#include <fmt/format.h>

#include <stdexcept>

namespace fulgur {
namespace {

/// Calls back once a parameter's .grad holds this step's sum.
class ReadyHook : public torch::autograd::PostAccumulateGradHook {
 public:
  explicit ReadyHook(std::function<void()> on_ready) : on_ready_(std::move(on_ready)) {}
  void operator()(const torch::autograd::Variable&) override { on_ready_(); }

 private:
  std::function<void()> on_ready_;
};

}  // namespace

GradientReadyHooks::GradientReadyHooks(std::vector<torch::Tensor> parameters, std::function<void(size_t)> on_ready,
                                       std::string unused_option, bool install)
    : ready_(parameters.size(), false), unused_option_(std::move(unused_option)) {
  if (!install) return;
  for (size_t i = 0; i < parameters.size(); ++i) {
    if (!parameters[i].requires_grad()) continue;
    torch::autograd::impl::set_post_acc_grad_hooks(parameters[i],
                                                   std::make_unique<ReadyHook>([on_ready, i] { on_ready(i); }));
    hooked_.push_back(parameters[i]);
  }
}

GradientReadyHooks::~GradientReadyHooks() {
  for (auto& p : hooked_) torch::autograd::impl::set_post_acc_grad_hooks(p, nullptr);
}

void GradientReadyHooks::reset() { std::fill(ready_.begin(), ready_.end(), false); }

bool GradientReadyHooks::mark_ready(size_t slot) {
  if (ready_[slot]) return false;
  ready_[slot] = true;
  return true;
}

void GradientReadyHooks::mark_missing(size_t slot, bool allowed, const char* who, const std::string& name,
                                      int64_t rank) {
  if (!allowed) {
    throw std::runtime_error(fmt::format(
        "[{}] parameter '{}' received no gradient in this step (rank {}); set {}=true if the model does not use "
        "every parameter every step",
        who, name, rank, unused_option_));
  }
  ready_[slot] = true;
}

}  // namespace fulgur
