#include <fulgur/trainer/loops/training_epoch_loop.hpp>

#include <fulgur/trainer/connectors/hook_dispatcher.hpp>
#include <fulgur/trainer/connectors/logger_connector.hpp>
#include <fulgur/trainer/connectors/module_runtime_connector.hpp>
#include <fulgur/trainer/connectors/signal_connector.hpp>
#include <fulgur/trainer/loops/run_context.hpp>
#include <fulgur/engine/step_engine.hpp>
#include <fulgur/modules/scoped_metric_sink.hpp>
#include <fulgur/datamodules/exhaustible.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>
#include <optional>
#include <stdexcept>

namespace fulgur {

TrainingEpochLoop::TrainingEpochLoop(RunContext& context)
    : context_(context), val_loop_(context, RunningStage::Validate) {}

bool TrainingEpochLoop::done() const {
  const TrainerOptions& o = context_.config().options;
  if (o.max_steps() != -1 && context_.global_step() >= o.max_steps()) return true;
  if (context_.stop_signal() != 0) return true;  // min_epochs does not hold back a signal
  return context_.should_stop() && context_.current_epoch() >= o.min_epochs();
}

bool TrainingEpochLoop::should_validate(int64_t batch_idx, bool is_last_batch) const {
  const TrainerOptions& o = context_.config().options;
  if (o.check_val_every_n_epoch() && (context_.current_epoch() + 1) % *o.check_val_every_n_epoch() != 0) return false;
  if (o.val_check_interval().is_fraction()) {
    if (o.val_check_interval().value() == 1.0) return is_last_batch;
    const int64_t every = std::max<int64_t>(1, static_cast<int64_t>(num_batches_ * o.val_check_interval().value()));
    return (batch_idx + 1) % every == 0;
  }
  // A count: within the epoch, or across epochs when check_val_every_n_epoch is null.
  const int64_t position = o.check_val_every_n_epoch() ? batch_idx + 1 : batch_progress_.total;
  return position % o.val_check_interval().count() == 0;
}

void TrainingEpochLoop::run(DataLoader& train, int64_t num_batches, const std::vector<std::shared_ptr<DataLoader>>& val,
                            const std::vector<int64_t>& num_val_batches) {
  const bool validates = !val.empty();
  num_batches_ = num_batches;
  running_ = true;
  // A graph belongs to one fit's module and optimizer (each fit configures its own).
  const torch::optim::Optimizer* optimizer =
      context_.optimizers().empty() ? nullptr : context_.optimizers().front().optimizer.get();
  if (context_.config().options.cuda_graph() && graph_optimizer_ != optimizer) {
    graph_ = CudaGraphStep::for_run(context_.config(), context_.module(), context_.optimizers(),
                                    context_.strategy().root_device(), context_.is_global_zero());
    graph_optimizer_ = optimizer;
  }
  // A resumed run continues the epoch where its checkpoint was taken.
  const int64_t first_batch = restarting_ ? std::min(batch_progress_.current, num_batches_) : 0;
  if (!restarting_) batch_progress_.reset_current();
  restarting_ = false;
  results_.reset();
  const ScopedMetricSink sink(context_.module(), &results_);  // the validation loop routes to its own meanwhile
  context_.hooks().call_hook("on_train_epoch_start", &Callback::on_train_epoch_start, &LightningModule::on_train_epoch_start);

  auto validate_if_due = [&](int64_t batch_idx, bool is_last_batch) {
    if (validates && should_validate(batch_idx, is_last_batch)) {
      val_loop_.run(val, num_val_batches);
      validated_at_batch_total_ = batch_progress_.total;
    }
  };
  // A checkpoint taken in on_train_batch_end comes before that batch's validation.
  if (first_batch > 0 && validated_at_batch_total_ != batch_progress_.total) {
    validate_if_due(first_batch - 1, first_batch == num_batches_);
  }

  Profiler* profiler = context_.profiler();
  ProfileScope epoch_scope(profiler, "run_training_epoch");
  auto batches = train.iterate(first_batch);
  Strategy& strategy = context_.strategy();
  // On CUDA the next batch's copy starts before the current step runs (a
  // side stream); elsewhere each batch moves when its step starts.
  const bool ahead = strategy.copies_batches_ahead();
  std::optional<DeviceBatch> next_batch;
  auto fetch = [&]() -> std::optional<DeviceBatch> {
    std::optional<Batch> host;
    {
      ProfileScope scope(profiler, "[_TrainingEpochLoop].train_dataloader_next");
      host = batches->next();
    }
    if (!host) return std::nullopt;
    return strategy.start_batch_to_device(*host);
  };
  if (ahead && first_batch < num_batches_ && !done()) next_batch = fetch();
  int64_t batch_idx = first_batch;
  for (; batch_idx < num_batches_ && !done(); ++batch_idx) {
    std::optional<DeviceBatch> current = ahead ? std::move(next_batch) : fetch();
    if (!current) break;
    const bool is_last_batch = batch_idx + 1 == num_batches_;
    if (ahead && !is_last_batch) next_batch = fetch();
    if (profiler != nullptr) profiler->on_train_batch_start(context_.global_step());
    advance(strategy.finish_batch_to_device(std::move(*current)), batch_idx, is_last_batch);
    if (profiler != nullptr) profiler->on_train_batch_end(context_.global_step());
    validate_if_due(batch_idx, is_last_batch);
    // A step boundary (never inside an accumulation window): stop here on a signal?
    // The ranks agree (a collective) only where a check is due.
    const bool boundary = (batch_idx + 1) % context_.accumulate_grad_batches() == 0 || is_last_batch;
    if (boundary && context_.stop_check_due(is_last_batch) &&
        context_.signals().agree_to_stop(strategy, context_.global_step())) {
      context_.request_stop();
    }
  }
  batches.reset();
  epoch_complete_ = batch_idx >= num_batches_;
  if (!epoch_complete_) {  // a stream that ended: no epoch after this one
    const auto* source = dynamic_cast<const Exhaustible*>(&train);
    if (source != nullptr && source->exhausted()) context_.request_stop();
  }

  // Callbacks that monitor metrics (EarlyStopping, ModelCheckpoint) run last,
  // so they see what the module logs in its hook and the epoch aggregates.
  context_.hooks().call_callback_hook_where(false, "on_train_epoch_end", &Callback::on_train_epoch_end);
  context_.module().on_train_epoch_end();
  context_.logging().report_epoch(results_.epoch_metrics(context_.strategy(), &context_.module()));
  context_.hooks().call_callback_hook_where(true, "on_train_epoch_end", &Callback::on_train_epoch_end);

  // An epoch cut short by a stop does not step epoch schedulers: a resumed
  // run finishes that epoch and steps them then, as an uninterrupted run would.
  if (epoch_complete_) step_schedulers(Interval::Epoch, context_.current_epoch() + 1);
  running_ = false;
}

c10::impl::GenericDict TrainingEpochLoop::state_dict() const {
  auto state = c10::impl::GenericDict(c10::StringType::get(), c10::AnyType::get());
  state.insert("batches_total", batch_progress_.total);
  state.insert("optimizer_steps", context_.global_step());
  state.insert("validated_at_batch_total", validated_at_batch_total_);
  return state;
}

void TrainingEpochLoop::load_state_dict(const c10::impl::GenericDict& state, int64_t batches_done) {
  batch_progress_.total = state.at("batches_total").toInt();
  batch_progress_.current = batches_done;
  context_.steps().restore(state.at("optimizer_steps").toInt());
  validated_at_batch_total_ = state.at("validated_at_batch_total").toInt();
  restarting_ = true;
}

void TrainingEpochLoop::advance(const Batch& batch, int64_t batch_idx, bool is_last_batch) {
  LightningModule& module = context_.module();
  Strategy& strategy = context_.strategy();
  const TrainerOptions& o = context_.config().options;

  Profiler* profiler = context_.profiler();
  ProfileScope batch_scope(profiler, "run_training_batch");
  results_.set_batch_size(batch.size());
  context_.hooks().call_hook("on_train_batch_start", &Callback::on_train_batch_start, &LightningModule::on_train_batch_start,
                     batch, batch_idx);

  strategy.before_training_step();
  const bool manual = !module.automatic_optimization();
  if (manual) {
    // A GradientAccumulationScheduler may raise it during the fit.
    ModuleRuntimeConnector::check_manual_accumulation(context_.accumulate_grad_batches());
    // training_step does backward and steps; the Trainer only reports.
    const torch::Tensor loss = training_step(batch, batch_idx);
    batch_progress_.increment();
    context_.logging().report_step(results_.step_values(), batch_progress_.total % o.log_every_n_steps() == 0);
    context_.hooks().call_hook("on_train_batch_end", &Callback::on_train_batch_end, &LightningModule::on_train_batch_end,
                       loss.defined() ? loss.detach() : loss, batch, batch_idx);
    results_.reset_step();
    return;
  }

  // The optimizer steps once per accumulation window and at the epoch's end.
  const int64_t accumulate = context_.accumulate_grad_batches();
  const bool step_now = (batch_idx + 1) % accumulate == 0 || is_last_batch;
  auto step = [&](const Batch& b) { return forward_backward_step(b, batch_idx, accumulate, step_now); };
  torch::optim::Optimizer& optimizer = *context_.optimizers().front().optimizer;
  if (accumulate != 1) {  // a GradientAccumulationScheduler can raise it during the fit
    graph_.disable(fmt::format("accumulate_grad_batches={}: the step differs from batch to batch", accumulate));
  }
  const CudaGraphStep::Result result =
      graph_.enabled() ? graph_.step(batch, module, results_, optimizer, step) : CudaGraphStep::Result{step(batch)};
  if (step_now) {
    // A replayed graph zeroed the gradients inside itself.
    StepEngine::after_optimizer_step(
        context_.optimizers().front(), /*zero_grad=*/!result.replayed,
        context_.steps(), nullptr,  // the same counter as a manual step's
        [this](const LRSchedulerConfig& config) { step_scheduler(config); });
  }

  batch_progress_.increment();
  const bool send_to_loggers = batch_progress_.total % o.log_every_n_steps() == 0;
  context_.logging().report_step(results_.step_values(), send_to_loggers);
  context_.hooks().call_hook("on_train_batch_end", &Callback::on_train_batch_end, &LightningModule::on_train_batch_end,
                     result.loss.detach(), batch, batch_idx);
  results_.reset_step();
}

torch::Tensor TrainingEpochLoop::training_step(const Batch& batch, int64_t batch_idx) {
  ProfileScope scope(context_.profiler(), "[Strategy]training_step");
  Precision::AutocastScope autocast(context_.strategy().precision());
  context_.at("training_step", batch_idx);
  return context_.module().training_step(batch, batch_idx);
}

torch::Tensor TrainingEpochLoop::forward_backward_step(const Batch& batch, int64_t batch_idx, int64_t accumulate,
                                                       bool step_now) {
  torch::Tensor loss;
  auto* layered = dynamic_cast<PipelineModule*>(&context_.module());
  if (layered != nullptr && layered->pipeline() != nullptr) {
    // The schedule interleaves the micro-batches' forwards and backwards.
    ProfileScope scope(context_.profiler(), "[Strategy]pipeline");
    Precision::AutocastScope autocast(context_.strategy().precision());
    context_.at("training_step", batch_idx);
    loss = StepEngine::pipeline_forward_backward(context_.strategy(), context_.hooks(), *layered, batch,
                                                 1.0 / static_cast<double>(accumulate), /*sync=*/step_now);
  } else {
    loss = training_step(batch, batch_idx);
    StepEngine::check_loss(loss, "[TrainingEpochLoop::advance]", fmt::format("batch {}", batch_idx));
    const torch::Tensor scaled = accumulate > 1 ? loss / accumulate : loss;
    ProfileScope scope(context_.profiler(), "[Strategy]backward");
    StepEngine::backward(context_.strategy(), context_.hooks(), scaled, /*sync=*/step_now);
  }
  if (step_now) {
    ProfileScope scope(context_.profiler(), "optimizer_step");
    StepEngine::optimizer_step(context_.strategy(), context_.hooks(), *context_.optimizers().front().optimizer,
                               context_.config().gradient_clip());
  }
  return loss;
}

void TrainingEpochLoop::step_schedulers(Interval interval, int64_t count) {
  if (!context_.module().automatic_optimization()) return;  // manual optimization steps its own
  for (auto& config : context_.optimizers()) {
    auto& scheduler = config.lr_scheduler;
    if (!scheduler || scheduler->interval != interval || count % scheduler->frequency != 0) continue;
    step_scheduler(*scheduler);
  }
}

void TrainingEpochLoop::step_scheduler(const LRSchedulerConfig& config) {
  StepEngine::step_scheduler(config, context_.strategy(), context_.logging().callback_metrics(), "[Trainer]");
}

}  // namespace fulgur
