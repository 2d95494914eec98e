#include "lit_classifier.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>

namespace F = torch::nn::functional;

namespace examples {

LitClassifier::Options LitClassifier::read_options(fulgur::cli::ConfigSection& config, Options defaults) {
  Options o = std::move(defaults);
  o.arch = config.choice("arch", o.arch, fulgur::models::model_names());
  o.num_classes = config.get<int64_t>("num_classes", o.num_classes);
  if (o.num_classes < 2) config.fail("num_classes", "an integer >= 2", std::to_string(o.num_classes));
  o.in_channels = config.get<int64_t>("in_channels", o.in_channels);
  if (o.in_channels < 1) config.fail("in_channels", "an integer >= 1", std::to_string(o.in_channels));
  o.lr = config.get<double>("lr", o.lr);
  if (!(o.lr > 0)) config.fail("lr", "a number > 0", std::to_string(o.lr));
  o.momentum = config.get<double>("momentum", o.momentum);
  if (o.momentum < 0) config.fail("momentum", "a number >= 0", std::to_string(o.momentum));
  o.weight_decay = config.get<double>("weight_decay", o.weight_decay);
  if (o.weight_decay < 0) config.fail("weight_decay", "a number >= 0", std::to_string(o.weight_decay));
  o.lr_step_size = config.get<int64_t>("lr_step_size", o.lr_step_size);
  if (o.lr_step_size < 0) config.fail("lr_step_size", "an integer >= 0", std::to_string(o.lr_step_size));
  o.lr_gamma = config.get<double>("lr_gamma", o.lr_gamma);
  o.weights = config.get<std::string>("weights", o.weights);
  if (!o.weights.empty() && !std::filesystem::is_regular_file(o.weights)) {
    config.fail("weights", "an existing state dict file", o.weights);
  }
  o.channels_last = config.get<bool>("channels_last", o.channels_last);
  o.zero_init_residual = config.get<bool>("zero_init_residual", o.zero_init_residual);
  return o;
}

LitClassifier::LitClassifier(fulgur::cli::ConfigSection& config) : LitClassifier(config, Options{}) {}

LitClassifier::LitClassifier(fulgur::cli::ConfigSection& config, Options defaults)
    : LitClassifier(read_options(config, std::move(defaults))) {}

LitClassifier::LitClassifier(const Options& options) : options_(options) {
  net_ = fulgur::models::create_model(options_.arch, options_.num_classes, options_.in_channels,
                                      {.channels_last = options_.channels_last,
                                       .zero_init_residual = options_.zero_init_residual});
  register_module("net", net_.ptr());
  if (!options_.weights.empty()) {
    const auto skipped =
        fulgur::load_pretrained(*net_.ptr(), options_.weights, fulgur::models::classifier_head(options_.arch));
    fmt::print("fulgur: loaded weights from {}", options_.weights);
    if (!skipped.empty()) {
      fmt::print(" except {} (shape differs: new head for num_classes {})", fmt::join(skipped, ", "),
                 options_.num_classes);
    }
    fmt::print("\n");
  }
}

torch::Tensor LitClassifier::forward(const torch::Tensor& x) { return net_.forward(x); }

torch::Tensor LitClassifier::training_step(const fulgur::Batch& batch, int64_t) {
  const torch::Tensor loss = F::cross_entropy(forward(batch.input), batch.target);
  log("train_loss", loss, {.prog_bar = true});
  return loss;
}

void LitClassifier::validation_step(const fulgur::Batch& batch, int64_t) {
  const torch::Tensor logits = forward(batch.input);
  log("val_loss", F::cross_entropy(logits, batch.target), {.prog_bar = true, .sync_dist = true});
  log("val_acc", fulgur::metrics::accuracy(logits, batch.target), {.prog_bar = true, .sync_dist = true});
  if (options_.num_classes > 5) log("val_acc_top5", fulgur::metrics::accuracy(logits, batch.target, 5), {.sync_dist = true});
}

void LitClassifier::test_step(const fulgur::Batch& batch, int64_t) {
  const torch::Tensor logits = forward(batch.input);
  log("test_loss", F::cross_entropy(logits, batch.target), {.sync_dist = true});
  log("test_acc", fulgur::metrics::accuracy(logits, batch.target), {.prog_bar = true, .sync_dist = true});
  if (options_.num_classes > 5) log("test_acc_top5", fulgur::metrics::accuracy(logits, batch.target, 5), {.sync_dist = true});
}

torch::Tensor LitClassifier::predict_step(const fulgur::Batch& batch, int64_t) {
  return forward(batch.input).argmax(1);
}

fulgur::OptimizerConfig LitClassifier::configure_optimizers() {
  auto optimizer = std::make_shared<torch::optim::SGD>(
      parameters(),
      torch::optim::SGDOptions(options_.lr).momentum(options_.momentum).weight_decay(options_.weight_decay));
  fulgur::OptimizerConfig config{optimizer, std::nullopt};
  if (options_.lr_step_size > 0) {
    config.lr_scheduler = fulgur::LRSchedulerConfig{
        std::make_shared<torch::optim::StepLR>(*optimizer, options_.lr_step_size, options_.lr_gamma),
        fulgur::SchedulerInterval::Epoch, 1};
  }
  return config;
}

}  // namespace examples
