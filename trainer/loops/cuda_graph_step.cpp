#include <fulgur/trainer/loops/cuda_graph_step.hpp>

#include <fulgur/core/first_line.hpp>
#include <fulgur/modules/lightning_module.hpp>
#include <fulgur/modules/scoped_metric_sink.hpp>
#include <fulgur/strategies/cuda/cuda_runtime.hpp>
#include <fulgur/trainer/trainer_config.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>
#include <stdexcept>

namespace fulgur {
namespace {

using detail::first_line;

using CaptureFn = void (*)(int64_t, const std::function<void()>&, std::shared_ptr<void>&, std::string&);
using ReplayFn = void (*)(const std::shared_ptr<void>&);

void say(const std::string& line) { std::cerr << "fulgur: cuda_graph: " << line << std::endl; }

// Passes log() calls on, noting whether a Metric object is logged: its
// update keeps state on the host, which a replayed graph would not update.
struct WatchingSink : MetricSink {
  explicit WatchingSink(MetricSink& target) : target(target) {}
  void log(const std::string& name, const torch::Tensor& value, const LogOptions& options) override {
    target.log(name, value, options);
  }
  void log(const std::string& name, metrics::Metric& metric, const LogOptions& options) override {
    if (metric_name.empty()) metric_name = name;
    target.log(name, metric, options);
  }
  MetricSink& target;
  std::string metric_name;
};

// Records log() calls during the capture without acting on them: the
// values are the graph's static outputs, logged after each replay.
template <class Logged>
struct RecordingSink : MetricSink {
  void log(const std::string& name, const torch::Tensor& value, const LogOptions& options) override {
    logged.push_back({name, value.detach(), options});
  }
  void log(const std::string& name, metrics::Metric& /*metric*/, const LogOptions& /*options*/) override {
    throw std::runtime_error(fmt::format("training_step logs the Metric object '{}'", name));
  }
  std::vector<Logged> logged;
};

std::vector<double> learning_rates(const torch::optim::Optimizer& optimizer) {
  std::vector<double> lrs;
  for (const auto& group : optimizer.param_groups()) lrs.push_back(group.options().get_lr());
  return lrs;
}

// Compared in place: this runs before every replay, where host time is what
// the graph saves.
bool same_learning_rates(const torch::optim::Optimizer& optimizer, const std::vector<double>& lrs) {
  const auto& groups = optimizer.param_groups();
  if (groups.size() != lrs.size()) return false;
  for (size_t i = 0; i < groups.size(); ++i) {
    if (groups[i].options().get_lr() != lrs[i]) return false;
  }
  return true;
}

std::vector<const torch::Tensor*> tensors_of(const Batch& batch) {
  std::vector<const torch::Tensor*> out{&batch.input, &batch.target};
  for (const auto& [name, tensor] : batch.tensors) out.push_back(&tensor);
  return out;
}

}  // namespace

GraphCapture GraphCapture::cuda(int64_t device) {
  const auto capture_fn = reinterpret_cast<CaptureFn>(CudaRuntime::symbol("fulgur_cuda_graph_capture"));
  const auto replay_fn = reinterpret_cast<ReplayFn>(CudaRuntime::symbol("fulgur_cuda_graph_replay"));
  if (capture_fn == nullptr || replay_fn == nullptr) {
    throw std::runtime_error("[GraphCapture::cuda] the fulgur_cuda module is not loaded: " + CudaRuntime::status());
  }
  GraphCapture g;
  g.capture = [capture_fn, device](const std::function<void()>& body, std::string& error) {
    std::shared_ptr<void> graph;
    capture_fn(device, body, graph, error);
    return graph;
  };
  g.replay = replay_fn;
  return g;
}

CudaGraphStep::CudaGraphStep(GraphCapture capture, int64_t warmup) : capture_(std::move(capture)), warmup_(warmup) {
  if (warmup_ < 1) throw std::invalid_argument(fmt::format("[CudaGraphStep] warmup must be >= 1, got {}", warmup_));
}

std::optional<std::string> CudaGraphStep::refusal(const TrainerConfig& config, const LightningModule& module,
                                                  const std::vector<OptimizerConfig>& optimizers) {
  const TrainerOptions& o = config.options;
  if (config.accelerator != AcceleratorKind::Cuda) return "needs a GPU (accelerator is cpu)";
  if (config.strategy != StrategyKind::SingleDevice) {
    return fmt::format("needs strategy single_device; {} reduces gradients with work on the host between kernels",
                       to_string(config.strategy));
  }
  if (config.precision == PrecisionMode::FP16Mixed) {
    return "16-mixed's gradient scaler reads the device to skip steps with inf gradients; use bf16-mixed";
  }
  if (!module.automatic_optimization()) return "manual optimization steps inside training_step";
  if (o.accumulate_grad_batches() != 1) {
    return fmt::format("accumulate_grad_batches={}: the step differs from batch to batch", o.accumulate_grad_batches());
  }
  if (config.gradient_clip()) return "gradient clipping reads the total norm on the host";
  for (const auto& entry : optimizers) {
    if (entry.lr_scheduler && entry.lr_scheduler->interval == Interval::Step) {
      return "an LR scheduler with interval step changes the learning rate every step, and a graph holds the "
             "learning rate it was captured with";
    }
    if (dynamic_cast<const torch::optim::SGD*>(entry.optimizer.get()) == nullptr) {
      return "the optimizer keeps its step count on the host (only SGD's step can be captured)";
    }
  }
  return std::nullopt;
}

CudaGraphStep CudaGraphStep::for_run(const TrainerConfig& config, const LightningModule& module,
                                     const std::vector<OptimizerConfig>& optimizers, const torch::Device& device,
                                     bool verbose) {
  if (const auto why = refusal(config, module, optimizers)) {
    if (verbose) say(*why + "; the step runs eager");
    return {};
  }
  return {GraphCapture::cuda(device.index() >= 0 ? device.index() : 0), config.options.cuda_graph_warmup()};
}

void CudaGraphStep::disable(const std::string& why) {
  if (!enabled()) return;
  say(why + "; the step runs eager");
  capture_ = {};
  graph_.reset();
  static_grads_.clear();
  logged_.clear();
}

bool CudaGraphStep::same_shapes(const Batch& batch) const {
  const auto now = tensors_of(batch);
  const auto then = tensors_of(static_batch_);
  if (now.size() != then.size() || batch.tensors.size() != static_batch_.tensors.size()) return false;
  for (size_t i = 0; i < now.size(); ++i) {
    if (now[i]->defined() != then[i]->defined()) return false;
    if (!now[i]->defined()) continue;
    if (now[i]->sizes() != then[i]->sizes() || now[i]->scalar_type() != then[i]->scalar_type() ||
        now[i]->device() != then[i]->device()) {
      return false;
    }
  }
  auto a = batch.tensors.begin();
  for (auto b = static_batch_.tensors.begin(); b != static_batch_.tensors.end(); ++a, ++b) {
    if (a->first != b->first) return false;
  }
  return true;
}

CudaGraphStep::Result CudaGraphStep::step(const Batch& batch, LightningModule& module, MetricSink& results,
                                          torch::optim::Optimizer& optimizer,
                                          const std::function<torch::Tensor(const Batch&)>& body) {
  // An epoch scheduler changed the learning rate: the graph holds the old one.
  if (captured() && !same_learning_rates(optimizer, captured_lrs_)) {
    graph_.reset();
    static_grads_.clear();
    ++recaptures_;
  }
  if (enabled() && !captured() && eager_steps_ >= warmup_) capture(batch, module, optimizer, body);
  if (captured()) {
    if (same_shapes(batch)) return {replay(batch, results), true};
    if (!warned_shapes_) {
      say(fmt::format("a batch of input shape [{}] differs from the captured [{}]: such batches run eager",
                      fmt::join(batch.input.sizes(), ","), fmt::join(static_batch_.input.sizes(), ",")));
      warned_shapes_ = true;
    }
    return {body(batch), false};
  }
  if (!enabled()) return {body(batch), false};
  WatchingSink watcher(results);
  torch::Tensor loss;
  {
    const ScopedMetricSink scope(module, &watcher);
    loss = body(batch);
  }
  ++eager_steps_;
  if (!watcher.metric_name.empty()) {
    disable(fmt::format("training_step logs the Metric object '{}', whose update keeps state on the host",
                        watcher.metric_name));
  }
  return {loss, false};
}

void CudaGraphStep::capture(const Batch& batch, LightningModule& module, torch::optim::Optimizer& optimizer,
                            const std::function<torch::Tensor(const Batch&)>& body) {
  static_batch_ = batch.map([](const torch::Tensor& t) { return t.clone(); });
  // Gradients made inside the capture live in the graph's memory pool, at
  // addresses every replay writes again.
  optimizer.zero_grad(/*set_to_none=*/true);
  RecordingSink<Logged> recorder;
  std::string error;
  {
    const ScopedMetricSink scope(module, &recorder);
    graph_ = capture_.capture([&] { static_loss_ = body(static_batch_).detach(); }, error);
  }
  if (graph_ == nullptr) {
    optimizer.zero_grad(/*set_to_none=*/true);
    disable(fmt::format("the step could not be captured ({})", first_line(error)));
    return;
  }
  logged_ = std::move(recorder.logged);
  captured_lrs_ = learning_rates(optimizer);
  for (const auto& group : optimizer.param_groups()) {
    for (const auto& p : group.params()) {
      if (p.grad().defined()) static_grads_.push_back(p.grad());
    }
  }
  // An eager step (another batch shape) must not add to the graph's gradients.
  optimizer.zero_grad(/*set_to_none=*/true);
  if (recaptures_ == 0) {
    say(fmt::format("captured the training step after {} eager steps; it is replayed for batches of input shape [{}]",
                    eager_steps_, fmt::join(static_batch_.input.sizes(), ",")));
  }
}

torch::Tensor CudaGraphStep::replay(const Batch& batch, MetricSink& results) {
  auto copy = [](torch::Tensor& to, const torch::Tensor& from) {
    if (from.defined()) to.copy_(from, /*non_blocking=*/true);
  };
  copy(static_batch_.input, batch.input);
  copy(static_batch_.target, batch.target);
  for (const auto& [name, tensor] : batch.tensors) copy(static_batch_.tensors.at(name), tensor);
  capture_.replay(graph_);
  for (const auto& entry : logged_) results.log(entry.name, entry.value, entry.options);
  return static_loss_;
}

}  // namespace fulgur
