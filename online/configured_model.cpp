#include <fulgur/online/configured_model.hpp>

#include <fulgur/online/online_model_registry.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <stdexcept>

namespace fulgur {

namespace {

torch::nn::AnyModule activation(const std::string& name) {
  if (name == "tanh") return torch::nn::AnyModule(torch::nn::Tanh());
  if (name == "relu") return torch::nn::AnyModule(torch::nn::ReLU());
  if (name == "gelu") return torch::nn::AnyModule(torch::nn::GELU());
  throw std::invalid_argument(fmt::format("model.activation: '{}' is not one of tanh, relu, gelu", name));
}

}  // namespace

ConfiguredModel::ConfiguredModel(ModelSpec spec) : spec_(std::move(spec)) {
  if (spec_.loss != "mse" && spec_.loss != "l1" && spec_.loss != "smooth_l1") {
    throw std::invalid_argument(fmt::format("loss: '{}' is not one of mse, l1, smooth_l1", spec_.loss));
  }
  if (spec_.optimizer != "sgd" && spec_.optimizer != "adam" && spec_.optimizer != "adamw") {
    throw std::invalid_argument(fmt::format("optimizer.type: '{}' is not one of sgd, adam, adamw", spec_.optimizer));
  }
  if (!(spec_.lr > 0.0)) throw std::invalid_argument(fmt::format("optimizer.lr: must be > 0, got {}", spec_.lr));
  if (spec_.type == "torchscript") {
    if (!std::filesystem::is_regular_file(spec_.path)) {
      throw std::invalid_argument(fmt::format("model.path: TorchScript file '{}' does not exist", spec_.path.string()));
    }
    try {
      script_ = torch::jit::load(spec_.path.string());
    } catch (const c10::Error& e) {
      throw std::invalid_argument(fmt::format("model.path: '{}' is not a TorchScript module: {}", spec_.path.string(),
                                              e.what_without_backtrace()));
    }
    script_->train();
    // Registered here, the script's own tensors train and synchronise.
    for (const auto& p : script_->named_parameters(/*recurse=*/true)) {
      std::string name = p.name;
      std::replace(name.begin(), name.end(), '.', '_');
      register_parameter(name, p.value, p.value.requires_grad());
    }
    return;
  }
  const bool mlp = spec_.type == "mlp";
  if (!mlp && spec_.type != "cnn") {
    const std::vector<std::string> registered = OnlineModelRegistry::names();
    throw std::invalid_argument(fmt::format("model.type: '{}' is not one of mlp, cnn, torchscript{}", spec_.type,
                                            registered.empty() ? std::string(" (no model is registered)")
                                                               : fmt::format(", {}", fmt::join(registered, ", "))));
  }
  if (spec_.layers.size() < 2) {
    throw std::invalid_argument(fmt::format("model.layers: needs at least 2 sizes (input and output), got {}",
                                            spec_.layers.size()));
  }
  for (int64_t width : spec_.layers) {
    if (width < 1) throw std::invalid_argument(fmt::format("model.layers: sizes must be >= 1, got {}", width));
  }
  if (spec_.loss_border < 0) {
    throw std::invalid_argument(fmt::format("model.loss_border: must be >= 0, got {}", spec_.loss_border));
  }
  if (!mlp && (spec_.kernel_size < 1 || spec_.kernel_size % 2 == 0)) {
    throw std::invalid_argument(fmt::format("model.kernel_size: must be odd and >= 1, got {}", spec_.kernel_size));
  }
  net_ = torch::nn::Sequential();
  for (size_t i = 0; i + 1 < spec_.layers.size(); ++i) {
    if (i > 0) net_->push_back(activation(spec_.activation));
    if (mlp) {
      net_->push_back(torch::nn::Linear(spec_.layers[i], spec_.layers[i + 1]));
    } else {
      net_->push_back(torch::nn::Conv2d(torch::nn::Conv2dOptions(spec_.layers[i], spec_.layers[i + 1], spec_.kernel_size)
                                            .padding(spec_.kernel_size / 2)));
    }
  }
  register_module("net", net_);
}

torch::Tensor ConfiguredModel::forward(const torch::Tensor& input) {
  if (script_) return script_->forward({input}).toTensor();
  return spec_.residual ? input + net_->forward(input) : net_->forward(input);
}

torch::Tensor ConfiguredModel::training_step(const Batch& batch, int64_t) {
  torch::Tensor out = forward(batch.input);
  torch::Tensor target = batch.target;
  if (spec_.loss_border > 0 && out.dim() == 4) {
    const int64_t b = spec_.loss_border;
    auto inside = [b](const torch::Tensor& t) { return t.narrow(2, b, t.size(2) - 2 * b).narrow(3, b, t.size(3) - 2 * b); };
    out = inside(out);
    target = inside(target);
  }
  torch::Tensor loss;
  // The functional forms warn when they would broadcast the target (OnlineTrainer refuses that).
  namespace F = torch::nn::functional;
  if (spec_.loss == "mse") {
    loss = F::mse_loss(out, target);
  } else if (spec_.loss == "l1") {
    loss = F::l1_loss(out, target);
  } else {
    loss = F::smooth_l1_loss(out, target);
  }
  log("train_loss", loss);
  return loss;
}

torch::Tensor ConfiguredModel::predict_step(const Batch& batch, int64_t) { return forward(batch.input); }

OptimizerConfig ConfiguredModel::configure_optimizers() {
  std::shared_ptr<torch::optim::Optimizer> optimizer;
  if (spec_.optimizer == "sgd") {
    optimizer = std::make_shared<torch::optim::SGD>(
        parameters(), torch::optim::SGDOptions(spec_.lr).momentum(spec_.momentum).weight_decay(spec_.weight_decay));
  } else if (spec_.optimizer == "adam") {
    optimizer = std::make_shared<torch::optim::Adam>(
        parameters(), torch::optim::AdamOptions(spec_.lr).weight_decay(spec_.weight_decay));
  } else {
    optimizer = std::make_shared<torch::optim::AdamW>(
        parameters(), torch::optim::AdamWOptions(spec_.lr).weight_decay(spec_.weight_decay));
  }
  if (spec_.scheduler_step_size <= 0) return {optimizer, std::nullopt};
  LRSchedulerConfig scheduler;
  scheduler.scheduler =
      std::make_shared<torch::optim::StepLR>(*optimizer, static_cast<unsigned>(spec_.scheduler_step_size),
                                             spec_.scheduler_gamma);
  scheduler.interval = Interval::Step;
  return {optimizer, scheduler};
}

}  // namespace fulgur
