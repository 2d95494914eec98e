#include <fulgur/trainer/loops/predict_loop.hpp>

#include <fulgur/trainer/connectors/hook_dispatcher.hpp>
#include <fulgur/trainer/loops/run_context.hpp>

#include <algorithm>

namespace fulgur {

std::vector<torch::Tensor> PredictLoop::run(const std::vector<std::shared_ptr<DataLoader>>& loaders,
                                            const std::vector<int64_t>& max_batches) {
  LightningModule& module = context_.module();
  Strategy& strategy = context_.strategy();
  std::vector<int64_t> counts;
  int64_t num_batches = 0;
  for (size_t i = 0; i < loaders.size(); ++i) {
    counts.push_back(std::min(loaders[i]->size(), max_batches.at(i)));
    num_batches += counts.back();
  }
  batch_progress_.reset_current();
  module.eval();
  torch::NoGradGuard no_grad;
  strategy.before_evaluation(num_batches);  // FULL_SHARD: what no ShardedUnit gathers is gathered for the loop
  context_.hooks().call_hook("on_predict_start", &Callback::on_predict_start, &LightningModule::on_predict_start);

  std::vector<torch::Tensor> outputs;
  outputs.reserve(static_cast<size_t>(num_batches));
  for (size_t loader_idx = 0; loader_idx < loaders.size(); ++loader_idx) {
    auto batches = loaders[loader_idx]->iterate(0);
    for (int64_t batch_idx = 0; batch_idx < counts[loader_idx]; ++batch_idx) {
      auto next = batches->next();
      if (!next) break;
      const Batch batch = strategy.batch_to_device(*next);
      Precision::AutocastScope autocast(strategy.precision());
      context_.at("predict_step", batch_idx);
      outputs.push_back(module.predict_step(batch, batch_idx, static_cast<int64_t>(loader_idx)));
      batch_progress_.increment();
      context_.hooks().call_callback_hook("on_predict_batch_end", &Callback::on_predict_batch_end, outputs.back(), batch,
                                batch_idx);
    }
  }
  strategy.evaluation_batches_done();
  context_.hooks().call_callback_hook("on_predict_epoch_end", &Callback::on_predict_epoch_end, outputs);
  context_.hooks().call_hook("on_predict_end", &Callback::on_predict_end, &LightningModule::on_predict_end);
  strategy.after_evaluation();
  return outputs;
}

}  // namespace fulgur
