#include <fulgur/trainer/loops/evaluation_loop.hpp>

#include <fulgur/trainer/connectors/hook_dispatcher.hpp>
#include <fulgur/trainer/connectors/logger_connector.hpp>
#include <fulgur/trainer/connectors/signal_connector.hpp>
#include <fulgur/trainer/loops/run_context.hpp>
#include <fulgur/modules/scoped_metric_sink.hpp>

#include <fmt/format.h>

namespace fulgur {
namespace {

using BatchStartCallback = void (Callback::*)(Trainer&, LightningModule&, const Batch&, int64_t);
using BatchStartModule = void (LightningModule::*)(const Batch&, int64_t);
using Step = StepOutput (LightningModule::*)(const Batch&, int64_t, int64_t);
using BatchEndCallback = void (Callback::*)(Trainer&, LightningModule&, const StepOutput&, const Batch&, int64_t,
                                            int64_t);
using BatchEndModule = void (LightningModule::*)(const StepOutput&, const Batch&, int64_t, int64_t);

// What one batch of validation or of test calls: the steps and batch-end
// hooks with the loader's index and the step's outputs (each is overloaded
// with the shorter form it calls by default).
struct BatchCalls {
  const char* start_hook;
  BatchStartCallback callback_start;
  BatchStartModule module_start;
  const char* step_name;
  const char* profile_action;
  Step step;
  const char* end_hook;
  BatchEndCallback callback_end;
  BatchEndModule module_end;
};

const BatchCalls kValidationCalls{"on_validation_batch_start", &Callback::on_validation_batch_start,
                                  &LightningModule::on_validation_batch_start, "validation_step",
                                  "[Strategy]validation_step", &LightningModule::validation_step,
                                  "on_validation_batch_end", &Callback::on_validation_batch_end,
                                  &LightningModule::on_validation_batch_end};
const BatchCalls kTestCalls{"on_test_batch_start", &Callback::on_test_batch_start,
                            &LightningModule::on_test_batch_start, "test_step", "[Strategy]test_step",
                            &LightningModule::test_step, "on_test_batch_end", &Callback::on_test_batch_end,
                            &LightningModule::on_test_batch_end};

}  // namespace

EvaluationLoop::EvaluationLoop(RunContext& context, RunningStage stage)
    : context_(context), stage_(stage), results_(stage) {}

std::map<std::string, double> EvaluationLoop::run(const std::vector<std::shared_ptr<DataLoader>>& loaders,
                                                  const std::vector<int64_t>& max_batches, bool sanity_check) {
  const bool validating = stage_ == RunningStage::Validate;
  LightningModule& module = context_.module();
  Strategy& strategy = context_.strategy();
  const bool was_training = module.is_training();

  std::vector<int64_t> counts;
  num_batches_ = 0;
  for (size_t i = 0; i < loaders.size(); ++i) {
    counts.push_back(std::min(loaders[i]->size(), max_batches.at(i)));
    num_batches_ += counts.back();
  }
  context_.set_num_eval_batches(num_batches_);  // for the progress bar
  batch_progress_.reset_current();
  results_.reset();
  const ScopedMetricSink sink(module, &results_);
  module.eval();
  torch::NoGradGuard no_grad;
  strategy.before_evaluation(num_batches_);  // FULL_SHARD: what no ShardedUnit gathers is gathered for the loop

  if (validating) {
    context_.hooks().call_hook("on_validation_start", &Callback::on_validation_start, &LightningModule::on_validation_start);
    context_.hooks().call_hook("on_validation_epoch_start", &Callback::on_validation_epoch_start,
                       &LightningModule::on_validation_epoch_start);
  } else {
    context_.hooks().call_hook("on_test_start", &Callback::on_test_start, &LightningModule::on_test_start);
    context_.hooks().call_hook("on_test_epoch_start", &Callback::on_test_epoch_start, &LightningModule::on_test_epoch_start);
  }

  Profiler* profiler = context_.profiler();
  const char* next_action = validating ? "[_EvaluationLoop].val_next" : "[_EvaluationLoop].test_next";
  for (size_t loader_idx = 0; loader_idx < loaders.size(); ++loader_idx) {
    const auto dataloader_idx = static_cast<int64_t>(loader_idx);
    // Lightning names what each of several loaders' steps log after the loader.
    results_.set_name_suffix(loaders.size() > 1 ? fmt::format("/dataloader_idx_{}", dataloader_idx) : "");
    auto batches = loaders[loader_idx]->iterate(0);
    for (int64_t batch_idx = 0; batch_idx < counts[loader_idx]; ++batch_idx) {
      std::optional<Batch> next;
      {
        ProfileScope fetch(profiler, next_action);
        next = batches->next();
      }
      if (!next) break;
      const Batch batch = strategy.batch_to_device(*next);
      results_.set_batch_size(batch.size());
      const BatchCalls& calls = validating ? kValidationCalls : kTestCalls;
      context_.hooks().call_hook(calls.start_hook, calls.callback_start, calls.module_start, batch, batch_idx);
      StepOutput output;
      {
        ProfileScope scope(profiler, calls.profile_action);
        Precision::AutocastScope autocast(strategy.precision());
        context_.at(calls.step_name, batch_idx);
        output = (module.*calls.step)(batch, batch_idx, dataloader_idx);
      }
      context_.hooks().call_hook(calls.end_hook, calls.callback_end, calls.module_end, output, batch, batch_idx,
                               dataloader_idx);
      batch_progress_.increment();
    }
  }
  results_.set_name_suffix("");
  strategy.evaluation_batches_done();  // stop loader workers before the epoch-end work

  if (validating) {
    context_.hooks().call_hook("on_validation_epoch_end", &Callback::on_validation_epoch_end,
                       &LightningModule::on_validation_epoch_end);
  } else {
    context_.hooks().call_hook("on_test_epoch_end", &Callback::on_test_epoch_end, &LightningModule::on_test_epoch_end);
  }
  const ResultCollection::Metrics metrics = results_.epoch_metrics(strategy, &module);
  if (!sanity_check) context_.logging().report_epoch(metrics);

  if (validating) {
    context_.hooks().call_hook("on_validation_end", &Callback::on_validation_end, &LightningModule::on_validation_end);
  } else {
    context_.hooks().call_hook("on_test_end", &Callback::on_test_end, &LightningModule::on_test_end);
  }
  strategy.after_evaluation();
  if (was_training) module.train();
  return metrics.callback;
}

}  // namespace fulgur
