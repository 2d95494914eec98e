#include <fulgur/online/online_trainer.hpp>
#include <fulgur/strategies/collectives/process_group.hpp>
#include <fulgur/strategies/data_parallel_strategy.hpp>
#include <fulgur/strategies/model_parallel/device_mesh.hpp>
#include <fulgur/strategies/mpi/mpi_runtime.hpp>

#include <fulgur/engine/step_engine.hpp>
#include <fulgur/trainer/run_settings.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <stdexcept>

namespace fulgur {

OnlineTrainer::OnlineTrainer(ModuleFactory make_module, OnlineOptions options, std::vector<std::shared_ptr<Logger>> loggers,
                             std::optional<Platform> platform)
    : options_(std::move(options)) {
  if (options_.publish_every_n_steps < 1) {
    throw std::invalid_argument(fmt::format("[OnlineOptions] publish_every_n_steps must be >= 1, got {}",
                                            options_.publish_every_n_steps));
  }
  if (options_.num_threads && *options_.num_threads < 1) {
    throw std::invalid_argument(fmt::format("[OnlineOptions] num_threads must be >= 1, got {}", *options_.num_threads));
  }
  stream_ = std::make_shared<SampleStream>(options_.stream);
  module_ = make_module();
  inference_module_ = make_module();
  if (!module_ || !inference_module_) throw std::invalid_argument("[OnlineTrainer] the module factory returned null");
  fabric_ = std::make_unique<Fabric>(options_.trainer, std::move(loggers), std::move(platform));
  fabric_->setup(*module_);
  // predict() runs the whole model on each rank: configured on a mesh of one.
  DeviceMesh whole;
  inference_module_->configure_model(whole);
  inference_module_->to(fabric_->device());
  inference_module_->eval();
  if (!options_.checkpoint_dir.empty()) {
    // A restarted simulation: continue where the stopped one saved.
    if (std::filesystem::exists(last_checkpoint())) {
      load_state(last_checkpoint());
      if (fabric_->is_global_zero()) {
        std::cout << "fulgur: resumed online training at step " << global_step() << " from "
                  << last_checkpoint().string() << std::endl;
      }
    }
  }
  publish();
  // Set up: from here on each step, checkpoint call and background thread is a run of its own.
  fabric_->run_.reset();
}

std::filesystem::path OnlineTrainer::last_checkpoint() const {
  return options_.checkpoint_dir.empty() ? std::filesystem::path() : options_.checkpoint_dir / "online_last.ckpt";
}

void OnlineTrainer::hold_stop_signals() {
  // For the run (an inline step, or start() to stop()). Only with
  // checkpoint_dir, where a signal has somewhere to save.
  if (!options_.checkpoint_dir.empty() && !signals_) signals_.emplace();
}

void OnlineTrainer::check_stop_signal() {
  if (!signals_) return;
  int signal = StopSignals::received();
  // Every rank stops at the same step, the one where any rank saw a signal.
  if (fabric_->world_size() > 1) signal = static_cast<int>(fabric_->strategy().max_over_ranks(signal));
  if (signal == 0) return;
  save_state(last_checkpoint());
  fabric_->finish_checkpoint_writes();  // on disk before the program may exit
  publish();
  stop_signal_ = signal;
  StopSignals::mark_acted();  // saved and stopped: nothing passes it on
}

OnlineTrainer::~OnlineTrainer() {
  stream_->end();
  if (thread_.joinable()) thread_.join();
}

namespace {

/// Every rank's rows of `tensor` over `group`, in rank order (the ranks may
/// hold different numbers of rows).
torch::Tensor rows_of_group(ProcessGroup& group, const torch::Tensor& tensor) {
  const torch::Tensor count = torch::full({1}, tensor.size(0), torch::dtype(torch::kLong).device(tensor.device()));
  std::vector<int64_t> counts;
  for (const torch::Tensor& c : group.all_gather(count)) counts.push_back(c.item<int64_t>());
  const int64_t most = *std::max_element(counts.begin(), counts.end());
  std::vector<int64_t> shape = tensor.sizes().vec();
  shape[0] = most;
  torch::Tensor padded = torch::zeros(shape, tensor.options());
  padded.narrow(0, 0, tensor.size(0)).copy_(tensor);
  std::vector<torch::Tensor> parts = group.all_gather(padded);
  for (size_t r = 0; r < parts.size(); ++r) parts[r] = parts[r].narrow(0, 0, counts[r]);
  return torch::cat(parts);
}

}  // namespace

Batch OnlineTrainer::block_batch(const Batch& batch) {
  DeviceMesh& mesh = fabric_->strategy().device_mesh();
  if (!mesh.spans("tp") && !mesh.spans("cp")) return batch;
  // The ranks of a tp x cp block compute one batch together: each trains on
  // the samples every rank of its block was given (tp's, then cp's).
  Batch joined = fabric_->to_device(batch);
  for (const char* dim : {"tp", "cp"}) {
    if (!mesh.spans(dim)) continue;
    joined = joined.map([&](const torch::Tensor& t) { return rows_of_group(mesh.group(dim), t); });
  }
  return joined;
}

double OnlineTrainer::step(const Batch& given) {
  const Batch batch = block_batch(given);
  const torch::Tensor loss = first_step_checked_ ? fabric_->training_loss(batch) : first_loss(batch);
  const double value = loss.detach().item<double>();
  last_loss_ = value;
  try {
    // Backward also with a non-finite loss: the other ranks wait in this
    // step's gradient exchange; the ranks then skip the step together.
    fabric_->backward(loss);
    const int64_t at = global_step() + 1;
    const std::string local = nonfinite_tensor(value, at);
    bool skip = !local.empty();
    // One small all-reduce: a sharded gradient (fsdp) or a NaN only one rank
    // saw reaches every rank's decision.
    if (fabric_->world_size() > 1) skip = fabric_->strategy().max_over_ranks(skip ? 1 : 0) != 0;
    if (skip) {
      for (auto& entry : fabric_->optimizers()) entry.optimizer->zero_grad();
      const std::string what = local.empty() ? fmt::format("step {} is not finite on another rank", at) : local;
      if (options_.on_nonfinite == OnNonFinite::Stop) {
        throw std::runtime_error(fmt::format("[OnlineTrainer] {}: no step was taken", what));
      }
      ++skipped_steps_;
      if (fabric_->is_global_zero()) {
        std::cerr << fmt::format("fulgur: warning: {}: step skipped (on_nonfinite: skip; {} so far)", what,
                                 skipped_steps_.load())
                  << std::endl;
      }
      return value;
    }
    fabric_->optimizer_step(0);
    const int64_t done = global_step();
    if (done % options_.publish_every_n_steps == 0) {
      publish();
      fabric_->save_logs();  // the loss history reaches log_dir while training goes on
    }
    check_stop_signal();
  } catch (const std::exception& e) {
    fail_keeping(e);
  }
  return value;
}

std::string OnlineTrainer::nonfinite_tensor(double loss, int64_t at) const {
  const int64_t rank = fabric_->global_rank();
  if (!std::isfinite(loss)) return fmt::format("the loss of step {} is {} on rank {}", at, loss, rank);
  // One read of the gradients for the common case; names the tensor only when one is bad.
  if (StepEngine::gradients_finite(*module_)) return "";
  for (const auto& entry : module_->named_parameters()) {
    const torch::Tensor& grad = entry.value().grad();
    if (grad.defined() && !torch::isfinite(grad).all().item<bool>()) {
      return fmt::format("the gradient of '{}' in step {} holds NaN or Inf on rank {} (loss {})", entry.key(), at,
                         rank, loss);
    }
  }
  return "";
}

void OnlineTrainer::fail_keeping(const std::exception& error) {
  throw std::runtime_error(fmt::format("{}; {}", error.what(), keep_trained_state()));
}

std::string OnlineTrainer::keep_trained_state() noexcept {
  try {
    if (fabric_->strategy().shards_parameters()) {  // the newer weights are whole on no rank, and a peer is gone
      return fmt::format("the weights published at step {} are kept for predict() (this rank holds only its part "
                         "of later ones)",
                         snapshot_.step());
    }
    publish();
    std::string kept = fmt::format("the weights after step {} are kept (published for predict()", global_step());
    if (options_.checkpoint_dir.empty()) return kept + ")";
    fabric_->write_checkpoint(last_checkpoint(), extra_state());
    return fmt::format("{} and saved to {}: a restart resumes there)", kept, last_checkpoint().string());
  } catch (const std::exception& e) {
    return fmt::format("keeping the weights after step {} failed too: {}", global_step(), e.what());
  }
}

double OnlineTrainer::train_step(const torch::Tensor& inputs, const torch::Tensor& targets) {
  if (running_) throw std::logic_error("[OnlineTrainer::train_step] background training is running; stop() it first");
  if (stop_signal_ != 0) throw_stopped("train_step");
  if (!inputs.defined() || !targets.defined() || inputs.dim() < 1 || inputs.size(0) != targets.size(0)) {
    throw std::invalid_argument("[OnlineTrainer::train_step] inputs and targets must be tensors with the same "
                                "first dimension (the batch)");
  }
  // One step is one run: the thread count, SIGPIPE and the stop handlers
  // hold during it only, so between steps the host's own handlers hear
  // Ctrl-C and SIGTERM. A signal during the step saves and stops at its end.
  const RunSettings settings({options_.num_threads, std::nullopt, std::nullopt});
  struct ReleaseSignals {
    std::optional<StopSignals>& held;
    ~ReleaseSignals() { held.reset(); }
  } release{signals_};
  hold_stop_signals();
  return step(Batch{inputs, targets, {}});
}

void OnlineTrainer::publish() {
  Strategy& strategy = fabric_->strategy();
  std::vector<torch::Tensor> tensors;
  // Split parameters (fsdp FULL_SHARD, tp) are gathered whole: a collective, one parameter at a time.
  for (const auto& p : module_->parameters()) tensors.push_back(strategy.whole_tensor(p, p));
  for (const auto& b : module_->buffers()) tensors.push_back(b);
  snapshot_.publish(tensors, global_step());
}

void OnlineTrainer::start() {
  if (running_ || thread_.joinable()) {
    throw std::logic_error("[OnlineTrainer::start] background training was started already (one run per object)");
  }
  // Over MPI, the training thread's collectives run beside the program's own MPI calls.
  if (auto* parallel = dynamic_cast<DataParallelStrategy*>(&fabric_->strategy());
      parallel != nullptr && fabric_->world_size() > 1 &&
      parallel->process_group().options().backend == ProcessGroupBackend::Mpi) {
    MpiRuntime::require_concurrent_calls("[OnlineTrainer::start] background training over process_group_backend 'mpi'");
  }
  hold_stop_signals();
  running_ = true;
  thread_ = std::thread([this] { run_background(); });
}

void OnlineTrainer::run_background() {
  try {
    const RunSettings settings({options_.num_threads, std::nullopt, std::nullopt});
    const bool several = fabric_->world_size() > 1;
    // A stop signal also ends a wait for samples (no producer may come).
    const auto signalled = [this] { return signals_ && StopSignals::received() != 0; };
    while ((options_.max_steps < 0 || global_step() < options_.max_steps) && stop_signal_ == 0) {
      if (pause_requested_) {
        park(signalled);
        if (signalled()) break;
        continue;
      }
      // (The stop predicate runs under the stream's lock: it must not call the stream.)
      std::optional<Batch> batch = stream_->next_batch([&] { return signalled() || pause_requested_.load(); });
      if (!batch && pause_requested_ && !stream_->ended() && !signalled()) continue;  // paused while waiting
      // Every rank steps while every rank has a batch: the first to run out
      // (its stream ended) stops them all at the same step.
      bool any_ended = false;
      try {
        any_ended = several && fabric_->strategy().max_over_ranks(batch ? 0 : 1) != 0;
      } catch (const std::exception& e) {
        fail_keeping(e);  // a peer died between steps
      }
      if (any_ended) break;
      if (!batch) break;
      step(*batch);
    }
    // Stopped by a signal while waiting for samples: save as after a step (every rank).
    if (stop_signal_ == 0 && signals_) check_stop_signal();
    publish();
    // A producer blocked in push() for room returns: nobody takes samples now.
    if (stop_signal_ != 0) stream_->end();
  } catch (...) {
    error_ = std::current_exception();
    failed_ = true;
    stream_->end();  // a producer waiting for room wakes up
  }
  running_ = false;
}

void OnlineTrainer::rethrow_training_error() {
  try {
    std::rethrow_exception(error_);
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("[OnlineTrainer] background training stopped at step {}: {}",
                                         global_step(), e.what()));
  }
}

void OnlineTrainer::push(const torch::Tensor& inputs, const torch::Tensor& targets, int64_t source) {
  if (failed_) rethrow_training_error();
  if (stop_signal_ != 0) throw_stopped("push");
  const SampleStreamOptions& o = stream_->options();
  if (!running_ && !thread_.joinable() && o.when_full == WhenFull::Block && inputs.defined() && inputs.dim() > 0 &&
      stream_->buffered() + inputs.size(0) > o.capacity) {
    throw std::logic_error(fmt::format(
        "[OnlineTrainer::push] the blocking stream holds {} of {} samples and background training has not started: "
        "this push would wait forever; call start() first",
        stream_->buffered(), o.capacity));
  }
  try {
    stream_->push(inputs, targets, source);
  } catch (const std::logic_error&) {
    if (failed_) rethrow_training_error();  // the stream ended because training failed
    if (stop_signal_ != 0) throw_stopped("push");  // ... or stopped on a signal
    throw;
  }
}

torch::Tensor OnlineTrainer::first_loss(const Batch& batch) {
  // LibTorch's losses warn when they broadcast the target to the output
  // (torch::nn::functional::mse_loss and friends): at the first step that
  // warning is the refusal, before backward, on every rank alike. A model
  // whose prediction differs from its target (several heads averaged, a
  // mean and a variance) is not refused: only the loss decides.
  struct BroadcastWarning : c10::WarningHandler {
    explicit BroadcastWarning(c10::WarningHandler* previous) : previous(previous) {}
    void process(const c10::Warning& warning) override {
      if (warning.msg().find("Using a target size") != std::string::npos) {
        seen = warning.msg();
      } else {
        previous->process(warning);
      }
    }
    c10::WarningHandler* previous;
    std::string seen;
  } handler(c10::WarningUtils::get_warning_handler());
  torch::Tensor loss;
  {
    const c10::WarningUtils::WarningHandlerGuard guard(&handler);
    loss = fabric_->training_loss(batch);
  }
  if (!handler.seen.empty()) {
    throw std::invalid_argument(fmt::format("[OnlineTrainer] the loss would broadcast the targets of shape [{}]: {} "
                                            "Give each sample a target shaped like the model's output",
                                            fmt::join(batch.target.sizes(), ", "), handler.seen));
  }
  first_step_checked_ = true;
  return loss;
}

void OnlineTrainer::throw_stopped(const char* call) const {
  throw StoppedError(stop_signal_.load(),
                     fmt::format("[OnlineTrainer::{}] training stopped on {} and saved {} at step {}; exit (128 + the "
                                 "signal), and restart to resume",
                                 call, StopSignals::name(stop_signal_.load()), last_checkpoint().string(),
                                 global_step()));
}

void OnlineTrainer::park(const std::function<bool()>& signalled) {
  std::unique_lock lock(pause_mutex_);
  parked_ = true;
  pause_changed_.notify_all();
  // A signal handler cannot notify: look every 50 ms.
  while (pause_requested_ && !stream_->ended() && !signalled()) {
    pause_changed_.wait_for(lock, std::chrono::milliseconds(50));
  }
  parked_ = false;
}

void OnlineTrainer::pause() {
  pause_requested_ = true;
  std::unique_lock lock(pause_mutex_);
  // The training thread finishes its step and parks, or is gone.
  while (!parked_ && running_.load()) pause_changed_.wait_for(lock, std::chrono::milliseconds(50));
}

void OnlineTrainer::resume() {
  {
    const std::lock_guard lock(pause_mutex_);
    pause_requested_ = false;
  }
  pause_changed_.notify_all();
}

void OnlineTrainer::stop() {
  resume();  // a paused thread wakes to see the stream end
  stream_->end();
  if (thread_.joinable()) thread_.join();
  const RunSettings scope(RunSettings::Wanted{});  // the saving below may write to a dead peer
  // A signal that came after the last step: save now, as at a step boundary.
  if (!failed_ && stop_signal_ == 0 && signals_ && StopSignals::received() != 0) check_stop_signal();
  signals_.reset();  // the program's handlers are back
  if (failed_) rethrow_training_error();
}

torch::Tensor OnlineTrainer::predict(const torch::Tensor& inputs) {
  std::lock_guard lock(predict_mutex_);
  inference_step_ = snapshot_.copy_to(*inference_module_, inference_step_);
  torch::NoGradGuard no_grad;
  Precision::AutocastScope autocast(fabric_->strategy().precision());
  Batch batch{inputs.to(fabric_->device()), {}, {}};
  return inference_module_->predict_step(batch, 0).to(torch::kCPU);
}

void OnlineTrainer::save_checkpoint(const std::filesystem::path& path) {
  if (running_) throw std::logic_error("[OnlineTrainer::save_checkpoint] background training is running; stop() it first");
  const RunSettings scope(RunSettings::Wanted{});  // a collective between runs is a run
  save_state(path);
}

void OnlineTrainer::load_checkpoint(const std::filesystem::path& path) {
  if (running_) throw std::logic_error("[OnlineTrainer::load_checkpoint] background training is running; stop() it first");
  const RunSettings scope(RunSettings::Wanted{});
  load_state(path);
  publish();
}

void OnlineTrainer::save_state(const std::filesystem::path& path) { fabric_->save_checkpoint(path, extra_state()); }

Checkpoint OnlineTrainer::extra_state() const {
  Checkpoint extra = new_state_dict();
  if (options_.checkpoint_buffer) {
    // The rank that writes the file (rank 0, or a survivor) keeps its own samples.
    const auto [inputs, targets] = stream_->buffered_samples();
    if (inputs.defined()) {
      Checkpoint buffer = new_state_dict();
      buffer.insert("inputs", inputs);
      buffer.insert("targets", targets);
      extra.insert("stream_buffer", buffer);
    }
  }
  return extra;
}

void OnlineTrainer::load_state(const std::filesystem::path& path) {
  const Checkpoint checkpoint = fabric_->load_checkpoint(path);
  if (options_.checkpoint_buffer && checkpoint.contains("stream_buffer")) {
    const auto buffer = checkpoint.at("stream_buffer").toGenericDict();
    stream_->push(buffer.at("inputs").toTensor(), buffer.at("targets").toTensor());
  }
}

}  // namespace fulgur
