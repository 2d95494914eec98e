#include <fulgur/modules/pipeline_module.hpp>

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>

#include <stdexcept>

namespace fulgur {

PipelineModule::PipelineModule(int64_t num_layers)
    : num_layers_(num_layers), layers_(register_module("layers", std::make_shared<torch::nn::Module>())) {
  if (num_layers < 1) throw std::invalid_argument(fmt::format("[PipelineModule] num_layers must be >= 1, got {}", num_layers));
}

void PipelineModule::build_layers(int64_t first, int64_t last) {
  if (first < 0 || last > num_layers_ || first > last) {
    throw std::out_of_range(fmt::format("[PipelineModule::build_layers] layers [{}, {}) of a model of {}", first, last,
                                        num_layers_));
  }
  // Each layer from its own seed (the run's, and its index), and the
  // program's generator given back as it was.
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  const uint64_t run_seed = generator.current_seed();
  for (int64_t index = first; index < last; ++index) {
    if (has_layer(index)) continue;
    // Not under the generator's lock: make_layer draws from it.
    const at::Tensor saved = generator.get_state();
    generator.set_current_seed(run_seed + 1000003ULL * static_cast<uint64_t>(index + 1));
    torch::nn::AnyModule layer;
    try {
      layer = make_layer(index);
    } catch (...) {
      generator.set_state(saved);
      throw;
    }
    generator.set_state(saved);  // the seed and the position in its sequence
    if (layer.is_empty()) throw std::invalid_argument(fmt::format("[PipelineModule::make_layer] layer {} is empty", index));
    layers_->register_module(std::to_string(index), layer.ptr());
    layers_by_index_.emplace(index, std::move(layer));
  }
}

torch::Tensor PipelineModule::forward_layer(int64_t index, const torch::Tensor& input) {
  const auto found = layers_by_index_.find(index);
  if (found == layers_by_index_.end()) {
    throw std::logic_error(fmt::format("[PipelineModule] layer {} of {} is not on this rank (configure_model builds the "
                                       "layers; on a pipeline each rank holds its stages' only)",
                                       index, num_layers_));
  }
  return found->second.forward(input);
}

std::vector<torch::Tensor> PipelineModule::layer_parameters(int64_t index) {
  const auto found = layers_by_index_.find(index);
  if (found == layers_by_index_.end()) return {};
  return found->second.ptr()->parameters();
}

std::shared_ptr<torch::nn::Module> PipelineModule::layer(int64_t index) const {
  const auto found = layers_by_index_.find(index);
  return found == layers_by_index_.end() ? nullptr : found->second.ptr();
}

torch::Tensor PipelineModule::forward(const torch::Tensor& input) {
  torch::Tensor x = input;
  for (int64_t index = 0; index < num_layers_; ++index) x = forward_layer(index, x);
  return x;
}

void PipelineModule::configure_model(DeviceMesh& /*mesh*/) {
  if (pipeline_ == nullptr) build_layers(0, num_layers_);
}

void PipelineModule::log_loss(const std::string& stage, const torch::Tensor& loss) {
  LogOptions options;
  options.prog_bar = true;
  options.sync_dist = stage != "train";  // an epoch's value over every replica's batches
  log(stage + "_loss", loss, options);
}

torch::Tensor PipelineModule::batch_loss(const Batch& batch) { return loss(forward(layer_input(batch)), batch); }

torch::Tensor PipelineModule::training_step(const Batch& batch, int64_t /*batch_idx*/) {
  if (pipeline_ != nullptr) {
    throw std::logic_error("[PipelineModule::training_step] on a pipeline the Trainer runs the schedule (PipelineExecutor::train)");
  }
  torch::Tensor value = batch_loss(batch);
  log_loss("train", value.detach());
  return value;
}

void PipelineModule::validation_step(const Batch& batch, int64_t /*batch_idx*/) {
  log_loss("val", pipeline_ != nullptr ? pipeline_->evaluate(batch) : batch_loss(batch));
}

void PipelineModule::test_step(const Batch& batch, int64_t /*batch_idx*/) {
  log_loss("test", pipeline_ != nullptr ? pipeline_->evaluate(batch) : batch_loss(batch));
}

}  // namespace fulgur
