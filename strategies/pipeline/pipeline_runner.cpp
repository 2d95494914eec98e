#include <fulgur/strategies/pipeline/pipeline_runner.hpp>

#include <fmt/format.h>

#include <stdexcept>

namespace fulgur {
namespace {

using Kind = PipelineAction::Kind;
constexpr int64_t kLayoutLength = 16;  // dtype, dimensions past the batch's, their sizes

}  // namespace

PipelineRunner::PipelineRunner(PipelineModule& module, ProcessGroup& pipeline, PipelineSchedule schedule,
                               Timeline* timeline)
    : module_(module),
      group_(pipeline),
      schedule_(std::move(schedule)),
      timeline_(timeline),
      zero_bubble_(schedule_.kind() == PipelineScheduleKind::ZeroBubble) {
  if (schedule_.ranks() != group_.size()) {
    throw std::logic_error(fmt::format("[PipelineRunner] a schedule for {} ranks on a group of {}", schedule_.ranks(),
                                       group_.size()));
  }
  if (module.num_layers() < schedule_.stages()) {
    throw std::invalid_argument(fmt::format("[PipelineRunner] a model of {} layers cannot be split into {} stages "
                                            "(pipeline_parallel_size {} x virtual_stages {})",
                                            module.num_layers(), schedule_.stages(), schedule_.ranks(),
                                            schedule_.stages() / schedule_.ranks()));
  }
  for (int64_t stage : schedule_.stages_of(group_.rank())) {
    const auto [first, last] = layers_of(stage);
    module.build_layers(first, last);
  }
}

std::pair<int64_t, int64_t> PipelineRunner::layers_of(int64_t stage) const {
  const int64_t layers = module_.num_layers(), stages = schedule_.stages();
  return {stage * layers / stages, (stage + 1) * layers / stages};
}

torch::Tensor PipelineRunner::train(const Batch& batch, double loss_scale) {
  return run(schedule_.actions(group_.rank()), batch, loss_scale, true);
}

torch::Tensor PipelineRunner::evaluate(const Batch& batch) {
  torch::NoGradGuard no_grad;
  return run(schedule_.forward_actions(group_.rank()), batch, 1.0, false);
}

torch::Tensor PipelineRunner::run(const std::vector<PipelineAction>& actions, const Batch& batch, double loss_scale,
                                  bool training) {
  const int64_t m = schedule_.microbatches();
  if (batch.size() < m) {
    throw std::invalid_argument(fmt::format("[pipeline] a batch of {} samples cannot be split into {} micro-batches "
                                            "(model_parallel.microbatches)",
                                            batch.size(), m));
  }
  ++step_;
  batch_size_ = batch.size();
  loss_scale_ = loss_scale;
  // Each tensor split once into m views (sizes differing by at most one).
  microbatches_.assign(static_cast<size_t>(m), Batch{});
  auto split = [&](const torch::Tensor& whole, auto&& place) {
    const std::vector<torch::Tensor> parts =
        whole.defined() ? whole.tensor_split(m, 0) : std::vector<torch::Tensor>(static_cast<size_t>(m));
    for (size_t i = 0; i < parts.size(); ++i) place(microbatches_[i], parts[i]);
  };
  split(batch.input, [](Batch& b, const torch::Tensor& t) { b.input = t; });
  split(batch.target, [](Batch& b, const torch::Tensor& t) { b.target = t; });
  for (const auto& entry : batch.tensors) {  // not a structured binding: clang 14 cannot capture one
    split(entry.second, [&](Batch& b, const torch::Tensor& t) { b.tensors[entry.first] = t; });
  }
  device_ = batch.input.defined() ? batch.input.device() : torch::Device(torch::kCPU);
  loss_sum_ = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat).device(device_));
  layouts_.clear();
  for (size_t k = 0; k < actions.size(); ++k) {
    if (k + 1 < actions.size()) post_receive(actions[k + 1]);  // travels while this pass computes
    const PipelineAction& a = actions[k];
    ready_ = Timeline::Clock::now();  // a receive moves it to when its data arrived
    switch (a.kind) {
      case Kind::Forward: forward(a, training); break;
      case Kind::Backward: backward(a); break;
      case Kind::BackwardInput: backward_input(a); break;
      case Kind::BackwardWeight: backward_weight(a); break;
    }
    record(a, ready_);
  }
  for (auto& [tensor, work] : sends_) group_.wait(work, "pipeline send");
  sends_.clear();
  passes_.clear();
  receives_.clear();
  // The loss lives on the last stage; every stage logs it.
  torch::Tensor loss = loss_sum_;
  group_.broadcast(loss, schedule_.rank_of(schedule_.stages() - 1));
  return loss;
}

int PipelineRunner::tag(int64_t stage, int64_t microbatch, bool gradient) const {
  // Per receiving stage: its layout, then each micro-batch's activation and gradient.
  const int64_t per_stage = 1 + 2 * schedule_.microbatches();
  return static_cast<int>(stage * per_stage + (microbatch < 0 ? 0 : 1 + 2 * microbatch + (gradient ? 1 : 0)));
}

void PipelineRunner::send(torch::Tensor tensor, int64_t stage, int tag) {
  torch::Tensor data = tensor.contiguous();
  sends_.emplace_back(data, group_.send_async(data, schedule_.rank_of(stage), tag));
}

void PipelineRunner::receive_layout(int64_t stage) {
  if (layouts_.count(stage) != 0) return;
  torch::Tensor layout = torch::empty({kLayoutLength}, torch::TensorOptions().dtype(torch::kLong).device(device_));
  try {
    group_.wait(group_.recv_async(layout, schedule_.rank_of(stage - 1), tag(stage, -1, false)), "pipeline receive");
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("[pipeline] stage {} got no activation from stage {} (pipeline rank {}): {}",
                                         stage, stage - 1, schedule_.rank_of(stage - 1), e.what()));
  }
  const torch::Tensor values = layout.cpu();
  const auto* v = values.data_ptr<int64_t>();
  layouts_[stage] = {std::vector<int64_t>(v + 2, v + 2 + v[1]), static_cast<c10::ScalarType>(v[0])};
}

std::optional<std::tuple<int64_t, int, std::vector<int64_t>>> PipelineRunner::incoming(const PipelineAction& a) const {
  const int64_t last = schedule_.stages() - 1;
  const int64_t samples = microbatches_[static_cast<size_t>(a.microbatch)].size();
  // A forward's input from the stage before; a backward's output gradient from the stage after.
  const bool gradient = a.kind == Kind::Backward || a.kind == Kind::BackwardInput;
  const int64_t receiving = gradient ? a.stage + 1 : a.stage;
  if ((!gradient && (a.kind != Kind::Forward || a.stage == 0)) || (gradient && a.stage == last)) return std::nullopt;
  const auto found = layouts_.find(receiving);
  if (found == layouts_.end()) return std::nullopt;
  std::vector<int64_t> shape{samples};
  shape.insert(shape.end(), found->second.first.begin(), found->second.first.end());
  return std::make_tuple(schedule_.rank_of(gradient ? a.stage + 1 : a.stage - 1), tag(a.stage, a.microbatch, gradient),
                         shape);
}

void PipelineRunner::post_receive(const PipelineAction& a) {
  const auto what = incoming(a);
  const bool gradient = a.kind != Kind::Forward;
  const auto key = std::make_pair(Key{a.stage, a.microbatch}, gradient);
  if (!what || receives_.count(key) != 0) return;
  const auto& [peer, message, shape] = *what;
  const c10::ScalarType dtype = layouts_.at(gradient ? a.stage + 1 : a.stage).second;
  torch::Tensor buffer = torch::empty(shape, torch::TensorOptions().dtype(dtype).device(device_));
  receives_.emplace(key, std::make_pair(buffer, group_.recv_async(buffer, peer, message)));
}

torch::Tensor PipelineRunner::receive(const PipelineAction& a) {
  const bool gradient = a.kind != Kind::Forward;
  if (!gradient) receive_layout(a.stage);
  post_receive(a);
  const auto key = std::make_pair(Key{a.stage, a.microbatch}, gradient);
  auto found = receives_.find(key);
  auto [buffer, work] = found->second;
  receives_.erase(found);
  const int64_t peer = gradient ? a.stage + 1 : a.stage - 1;
  try {
    group_.wait(work, "pipeline receive");
    ready_ = Timeline::Clock::now();
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("[pipeline] stage {} got no {} of micro-batch {} from stage {} (pipeline rank "
                                         "{}): {}",
                                         a.stage, gradient ? "gradient" : "activation", a.microbatch, peer,
                                         schedule_.rank_of(peer), e.what()));
  }
  return buffer;
}

void PipelineRunner::forward(const PipelineAction& a, bool training) {
  const Batch& micro = microbatches_[static_cast<size_t>(a.microbatch)];
  const int64_t last_stage = schedule_.stages() - 1;
  const auto [first, last] = layers_of(a.stage);
  Pass pass;
  torch::Tensor x = a.stage == 0 ? module_.layer_input(micro) : receive(a);
  if (a.stage > 0 && training) x.requires_grad_(true);
  pass.input = x;
  for (int64_t j = first; j < last; ++j) {
    if (zero_bubble_ && training) {
      // Each layer its own graph, so its weight gradient can be taken alone later.
      if (j > first || a.stage > 0) x = x.detach().requires_grad_(true);
      pass.inputs.push_back(x);
    }
    x = module_.forward_layer(j, x);
    if (a.stage == last_stage && j == last - 1) {
      const torch::Tensor loss = module_.loss(x, micro);
      const double weight = static_cast<double>(micro.size()) / static_cast<double>(batch_size_);
      loss_sum_ += loss.detach().to(torch::kFloat) * weight;
      x = training ? loss * (weight * loss_scale_) : loss;
    }
    if (zero_bubble_ && training) pass.outputs.push_back(x);
  }
  if (a.stage < last_stage) {
    const int64_t next = a.stage + 1;
    if (layouts_.count(next) == 0) {  // the first micro-batch of the step tells the next stage the shape
      if (x.dim() + 1 > kLayoutLength) {
        throw std::invalid_argument(fmt::format("[pipeline] stage {} passes on a tensor of {} dimensions; at most {}",
                                                a.stage, x.dim(), kLayoutLength - 1));
      }
      torch::Tensor layout = torch::zeros({kLayoutLength}, torch::kLong);
      layout[0] = static_cast<int64_t>(x.scalar_type());
      layout[1] = x.dim() - 1;
      for (int64_t d = 1; d < x.dim(); ++d) layout[d + 1] = x.size(d);
      send(layout.to(device_), next, tag(next, -1, false));
      layouts_[next] = {std::vector<int64_t>(x.sizes().begin() + 1, x.sizes().end()), x.scalar_type()};
    }
    send(x.detach(), next, tag(next, a.microbatch, false));
  }
  if (!training) return;
  if (!zero_bubble_) pass.outputs.push_back(x);
  passes_.emplace(Key{a.stage, a.microbatch}, std::move(pass));
  peak_in_flight_ = std::max(peak_in_flight_, ++held_);
}

void PipelineRunner::backward(const PipelineAction& a) {
  auto found = passes_.find({a.stage, a.microbatch});
  Pass& pass = found->second;
  if (a.stage == schedule_.stages() - 1) {
    pass.outputs.back().backward();
  } else {
    torch::autograd::backward({pass.outputs.back()}, {receive(a)});
  }
  if (a.stage > 0) send(pass.input.grad(), a.stage - 1, tag(a.stage - 1, a.microbatch, true));
  passes_.erase(found);
  --held_;
}

void PipelineRunner::backward_input(const PipelineAction& a) {
  Pass& pass = passes_.at({a.stage, a.microbatch});
  const bool last_stage = a.stage == schedule_.stages() - 1;
  torch::Tensor grad = last_stage ? torch::ones_like(pass.outputs.back()) : receive(a);
  pass.output_grads.assign(pass.outputs.size(), torch::Tensor());
  // Layer by layer back to the stage's input: gradients of activations
  // only, no weight's (nothing asks for them yet).
  for (size_t j = pass.outputs.size(); j-- > 0;) {
    pass.output_grads[j] = grad;
    if (j == 0 && a.stage == 0) break;
    grad = torch::autograd::grad({pass.outputs[j]}, {pass.inputs[j]}, {grad}, /*retain_graph=*/true)[0];
  }
  if (a.stage > 0) send(grad, a.stage - 1, tag(a.stage - 1, a.microbatch, true));
}

void PipelineRunner::backward_weight(const PipelineAction& a) {
  auto found = passes_.find({a.stage, a.microbatch});
  Pass& pass = found->second;
  const auto [first, last] = layers_of(a.stage);
  std::vector<torch::Tensor> params;
  for (int64_t j = first; j < last; ++j) {
    for (const auto& p : module_.layer_parameters(j)) {
      if (p.requires_grad()) params.push_back(p);
    }
  }
  if (!params.empty()) {
    torch::autograd::backward(pass.outputs, pass.output_grads, /*retain_graph=*/false, /*create_graph=*/false, params);
  }
  passes_.erase(found);
  --held_;
}

void PipelineRunner::record(const PipelineAction& a, Timeline::Clock::time_point start) {
  if (timeline_ == nullptr) return;
  const char* phase = a.kind == Kind::Forward          ? "forward"
                      : a.kind == Kind::Backward       ? "backward"
                      : a.kind == Kind::BackwardInput  ? "backward_input"
                                                       : "backward_weight";
  timeline_->record(phase, a.microbatch, fmt::format("stage {} step {}", a.stage, step_), 0, start,
                    Timeline::Clock::now());
}

}  // namespace fulgur
