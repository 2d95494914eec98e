#include "lit_classifier.hpp"

examples::LitClassifier::LitClassifier(const LitClassifierOptions& o) : options_(o) {
  o.validate();
  if (o.arch() == "vit") {
    vit_ = VisionTransformer(o.in_channels(), o.num_classes());
    net_ = torch::nn::AnyModule(vit_);
  } else {
    net_ = fulgur::models::create_model(o.arch(), o.num_classes(), o.in_channels(),
                                        {.channels_last = o.channels_last(), .zero_init_residual = o.zero_init_residual()});
  }
  register_module("net", net_.ptr());
  namespace M = fulgur::metrics;
  // States only (no parameters or buffers): checkpoints and weights files are unchanged.
  val_metrics_ = register_module("val_metrics", std::make_shared<M::MetricCollection>("val_"));
  val_metrics_->add("acc", std::make_shared<M::Accuracy>(M::StatScoresOptions(o.num_classes()).average(M::Average::Micro)));
  val_metrics_->add("f1", std::make_shared<M::F1Score>(M::StatScoresOptions(o.num_classes()).average(M::Average::Macro)));
  if (o.weights().empty()) return;
  const auto skipped = fulgur::load_pretrained(*net_.ptr(), o.weights(), o.arch() == "vit" ? "head" : fulgur::models::classifier_head(o.arch()));
  fmt::print("fulgur: loaded weights from {}{}\n", o.weights(), skipped.empty() ? "" : fmt::format(
      " except {} (shape differs: new head for num_classes {})", fmt::join(skipped, ", "), o.num_classes()));
}

torch::Tensor examples::LitClassifier::step(const fulgur::Batch& batch, const std::string& stage) {
  const torch::Tensor logits = net_.forward(batch.input), loss = torch::nn::functional::cross_entropy(logits, batch.target);
  log(stage + "_loss", loss, {.prog_bar = stage != "test", .sync_dist = stage != "train"});  // val/test: epoch values
  if (stage == "train") return loss;
  if (stage == "val") {
    val_metrics_->update(logits, batch.target);
    for (const auto& [name, metric] : val_metrics_->items()) log(name, *metric, {.prog_bar = name == "val_acc"});
  } else {
    log(stage + "_acc", fulgur::metrics::accuracy(logits, batch.target), {.prog_bar = true, .sync_dist = true});
  }
  if (options_.num_classes() > 5) log(stage + "_acc_top5", fulgur::metrics::accuracy(logits, batch.target, 5), {.sync_dist = true});
  return loss;
}

fulgur::OptimizerConfig examples::LitClassifier::configure_optimizers() {
  const auto& o = options_;
  auto sgd = std::make_shared<torch::optim::SGD>(
      parameters(), torch::optim::SGDOptions(o.lr()).momentum(o.momentum()).weight_decay(o.weight_decay()));
  if (o.lr_step_size() == 0) return {sgd, std::nullopt};
  auto step_lr = std::make_shared<torch::optim::StepLR>(*sgd, o.lr_step_size(), o.lr_gamma());
  return {sgd, fulgur::LRSchedulerConfig{step_lr, fulgur::Interval::Epoch, 1}};
}
