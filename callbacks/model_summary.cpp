#include <fulgur/callbacks/model_summary.hpp>

#include <fulgur/trainer/trainer.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <iostream>

namespace fulgur {
namespace {

int64_t numel(const torch::Tensor& p, const Strategy* strategy) {
  return strategy != nullptr ? strategy->whole_numel(p) : p.numel();
}

int64_t count_params(torch::nn::Module& module, const Strategy* strategy) {
  int64_t count = 0;
  for (const auto& p : module.parameters(/*recurse=*/true)) count += numel(p, strategy);
  return count;
}

/// "torch::nn::LinearImpl" -> "Linear"; "fulgur::models::ResNetImpl" -> "ResNet".
std::string short_type(const std::string& name) {
  const size_t colon = name.rfind("::");
  std::string type = colon == std::string::npos ? name : name.substr(colon + 2);
  if (type.size() > 4 && type.compare(type.size() - 4, 4, "Impl") == 0) type.resize(type.size() - 4);
  return type;
}

/// 1234567 -> "1.2 M", as Lightning prints counts.
std::string human(double count) {
  const char* units[] = {"", " K", " M", " B", " T"};
  int unit = 0;
  while (count >= 1000.0 && unit < 4) {
    count /= 1000.0;
    ++unit;
  }
  return unit == 0 ? fmt::format("{:.0f}", count) : fmt::format("{:.1f}{}", count, units[unit]);
}

}  // namespace

ModelSummary::ModelSummary(ModelSummaryOptions options) : options_(std::move(options)) { options_.validate(); }

ModelSummary::Summary ModelSummary::summarize(torch::nn::Module& module, int64_t max_depth, const Strategy* strategy) {
  Summary summary;
  for (const auto& item : module.named_modules(/*name_prefix=*/"", /*include_self=*/false)) {
    const int64_t depth = 1 + static_cast<int64_t>(std::count(item.key().begin(), item.key().end(), '.'));
    torch::nn::Module& sub = *item.value();
    if (sub.is_training()) {
      ++summary.modules_in_train_mode;
    } else {
      ++summary.modules_in_eval_mode;
    }
    if (max_depth != -1 && depth > max_depth) continue;
    summary.rows.push_back({item.key(), short_type(sub.name()), count_params(sub, strategy), sub.is_training()});
  }
  int64_t bytes = 0;
  for (const auto& p : module.parameters(/*recurse=*/true)) {
    (p.requires_grad() ? summary.trainable : summary.non_trainable) += numel(p, strategy);
    bytes += numel(p, strategy) * static_cast<int64_t>(p.element_size());
  }
  summary.total = summary.trainable + summary.non_trainable;
  summary.size_mb = static_cast<double>(bytes) / 1e6;
  return summary;
}

std::string ModelSummary::format(const Summary& s) {
  size_t name_w = 4, type_w = 4, params_w = 6;
  for (const Row& r : s.rows) {
    name_w = std::max(name_w, r.name.size());
    type_w = std::max(type_w, r.type.size());
    params_w = std::max(params_w, human(static_cast<double>(r.params)).size());
  }
  const size_t index_w = std::max<size_t>(1, std::to_string(s.rows.size()).size());
  std::string out;
  if (!s.rows.empty()) {
    const std::string header = fmt::format("  {:>{}} | {:<{}} | {:<{}} | {:>{}} | {:<5}", "", index_w, "Name", name_w,
                                           "Type", type_w, "Params", params_w, "Mode");
    out += header + "\n" + std::string(header.size(), '-') + "\n";
    for (size_t i = 0; i < s.rows.size(); ++i) {
      const Row& r = s.rows[i];
      out += fmt::format("  {:>{}} | {:<{}} | {:<{}} | {:>{}} | {:<5}\n", i, index_w, r.name, name_w, r.type, type_w,
                         human(static_cast<double>(r.params)), params_w, r.training ? "train" : "eval");
    }
    out += std::string(header.size(), '-') + "\n";
  }
  out += fmt::format("{:<10}Trainable params\n", human(static_cast<double>(s.trainable)));
  out += fmt::format("{:<10}Non-trainable params\n", human(static_cast<double>(s.non_trainable)));
  out += fmt::format("{:<10}Total params\n", human(static_cast<double>(s.total)));
  out += fmt::format("{:<10.3f}Total estimated model params size (MB)\n", s.size_mb);
  out += fmt::format("{:<10}Modules in train mode\n", s.modules_in_train_mode);
  out += fmt::format("{:<10}Modules in eval mode\n", s.modules_in_eval_mode);
  return out;
}

void ModelSummary::on_fit_start(Trainer& trainer, LightningModule& module) {
  if (!trainer.is_global_zero() || options_.max_depth() == 0) return;
  std::cout << format(summarize(module, options_.max_depth(), &trainer.strategy())) << std::flush;
}

}  // namespace fulgur
