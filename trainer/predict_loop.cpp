#include <fulgur/trainer/predict_loop.hpp>

#include <fulgur/trainer/trainer.hpp>
#include <fulgur/trainer/hook_dispatcher.hpp>

namespace fulgur {

std::vector<torch::Tensor> PredictLoop::run(DataLoader& loader, int64_t max_batches) {
  LightningModule& module = trainer_.module();
  Strategy& strategy = trainer_.strategy();
  const int64_t num_batches = std::min(loader.size(), max_batches);
  batch_progress_.reset_current();
  module.eval();
  torch::NoGradGuard no_grad;
  strategy.before_evaluation(num_batches);  // FULL_SHARD: what no ShardedUnit gathers is gathered for the loop
  hooks_.call_hook("on_predict_start", &Callback::on_predict_start, &LightningModule::on_predict_start);

  std::vector<torch::Tensor> outputs;
  outputs.reserve(static_cast<size_t>(num_batches));
  auto batches = loader.iterate(0);
  for (int64_t batch_idx = 0; batch_idx < num_batches; ++batch_idx) {
    auto next = batches->next();
    if (!next) break;
    const Batch batch = strategy.batch_to_device(*next);
    Precision::AutocastScope autocast(strategy.precision());
    trainer_.at("predict_step", batch_idx);
    outputs.push_back(module.predict_step(batch, batch_idx));
    batch_progress_.increment();
    hooks_.call_callback_hook("on_predict_batch_end", &Callback::on_predict_batch_end, outputs.back(), batch,
                                batch_idx);
  }
  batches.reset();
  strategy.evaluation_batches_done();
  hooks_.call_callback_hook("on_predict_epoch_end", &Callback::on_predict_epoch_end, outputs);
  hooks_.call_hook("on_predict_end", &Callback::on_predict_end, &LightningModule::on_predict_end);
  strategy.after_evaluation();
  return outputs;
}

}  // namespace fulgur
