#include <fulgur/trainer/evaluation_loop.hpp>

#include <fulgur/trainer/trainer.hpp>
#include <fulgur/trainer/hook_dispatcher.hpp>
#include <fulgur/trainer/logger_connector.hpp>
#include <fulgur/trainer/signal_connector.hpp>
#include <fulgur/modules/scoped_metric_sink.hpp>

namespace fulgur {

EvaluationLoop::EvaluationLoop(Trainer& trainer, const LoopContext& context, RunningStage stage)
    : trainer_(trainer), context_(context), stage_(stage), results_(stage) {}

std::map<std::string, double> EvaluationLoop::run(DataLoader& loader, int64_t max_batches, bool sanity_check) {
  const bool validating = stage_ == RunningStage::Validate;
  LightningModule& module = trainer_.module();
  Strategy& strategy = trainer_.strategy();
  const bool was_training = module.is_training();

  num_batches_ = std::min(loader.size(), max_batches);
  batch_progress_.reset_current();
  results_.reset();
  const ScopedMetricSink sink(module, &results_);
  module.eval();
  torch::NoGradGuard no_grad;
  strategy.before_evaluation(num_batches_);  // FULL_SHARD: what no ShardedUnit gathers is gathered for the loop

  if (validating) {
    context_.hooks.call_hook("on_validation_start", &Callback::on_validation_start, &LightningModule::on_validation_start);
    context_.hooks.call_hook("on_validation_epoch_start", &Callback::on_validation_epoch_start,
                       &LightningModule::on_validation_epoch_start);
  } else {
    context_.hooks.call_hook("on_test_start", &Callback::on_test_start, &LightningModule::on_test_start);
    context_.hooks.call_hook("on_test_epoch_start", &Callback::on_test_epoch_start, &LightningModule::on_test_epoch_start);
  }

  Profiler* profiler = trainer_.profiler();
  const char* next_action = validating ? "[_EvaluationLoop].val_next" : "[_EvaluationLoop].test_next";
  auto batches = loader.iterate(0);
  for (int64_t batch_idx = 0; batch_idx < num_batches_; ++batch_idx) {
    std::optional<Batch> next;
    {
      ProfileScope fetch(profiler, next_action);
      next = batches->next();
    }
    if (!next) break;
    const Batch batch = strategy.batch_to_device(*next);
    results_.set_batch_size(batch.size());
    if (validating) {
      context_.hooks.call_hook("on_validation_batch_start", &Callback::on_validation_batch_start,
                         &LightningModule::on_validation_batch_start, batch, batch_idx);
      {
        ProfileScope scope(profiler, "[Strategy]validation_step");
        Precision::AutocastScope autocast(strategy.precision());
        module.validation_step(batch, batch_idx);
      }
      context_.hooks.call_hook("on_validation_batch_end", &Callback::on_validation_batch_end,
                         &LightningModule::on_validation_batch_end, batch, batch_idx);
    } else {
      context_.hooks.call_hook("on_test_batch_start", &Callback::on_test_batch_start, &LightningModule::on_test_batch_start,
                         batch, batch_idx);
      {
        ProfileScope scope(profiler, "[Strategy]test_step");
        Precision::AutocastScope autocast(strategy.precision());
        module.test_step(batch, batch_idx);
      }
      context_.hooks.call_hook("on_test_batch_end", &Callback::on_test_batch_end, &LightningModule::on_test_batch_end, batch,
                         batch_idx);
    }
    batch_progress_.increment();
  }
  batches.reset();
  strategy.evaluation_batches_done();  // stop loader workers before the epoch-end work

  if (validating) {
    context_.hooks.call_hook("on_validation_epoch_end", &Callback::on_validation_epoch_end,
                       &LightningModule::on_validation_epoch_end);
  } else {
    context_.hooks.call_hook("on_test_epoch_end", &Callback::on_test_epoch_end, &LightningModule::on_test_epoch_end);
  }
  const ResultCollection::Metrics metrics = results_.epoch_metrics(strategy);
  if (!sanity_check) context_.logging.report_epoch(metrics);

  if (validating) {
    context_.hooks.call_hook("on_validation_end", &Callback::on_validation_end, &LightningModule::on_validation_end);
  } else {
    context_.hooks.call_hook("on_test_end", &Callback::on_test_end, &LightningModule::on_test_end);
  }
  strategy.after_evaluation();
  if (was_training) module.train();
  return metrics.callback;
}

}  // namespace fulgur
