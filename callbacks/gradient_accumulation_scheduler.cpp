#include <fulgur/callbacks/gradient_accumulation_scheduler.hpp>

#include <fulgur/trainer/cli/config_section.hpp>
#include <fulgur/trainer/trainer.hpp>

#include <fmt/format.h>

#include <stdexcept>

namespace fulgur {

GradientAccumulationScheduler::GradientAccumulationScheduler(std::map<int64_t, int64_t> scheduling)
    : scheduling_(std::move(scheduling)) {
  if (scheduling_.empty()) throw std::invalid_argument("[GradientAccumulationScheduler] scheduling is empty");
  for (const auto& [epoch, factor] : scheduling_) {
    if (epoch < 0) {
      throw std::invalid_argument(fmt::format("[GradientAccumulationScheduler] epoch keys must be >= 0, got {}", epoch));
    }
    if (factor < 1) {
      throw std::invalid_argument(fmt::format(
          "[GradientAccumulationScheduler] accumulation factor for epoch {} must be >= 1, got {}", epoch, factor));
    }
  }
}

std::shared_ptr<Callback> GradientAccumulationScheduler::from_config(cli::ConfigSection& s) {
  const YAML::Node node = s.raw("scheduling", YAML::Node(YAML::NodeType::Null));
  if (!node.IsMap()) s.fail("scheduling", "a mapping {epoch: factor} (required)", node.IsNull() ? "null" : YAML::Dump(node));
  std::map<int64_t, int64_t> scheduling;
  for (const auto& item : node) {
    const std::string key = item.first.Scalar();
    try {
      size_t used_key = 0;
      size_t used_value = 0;
      const int64_t epoch = std::stoll(key, &used_key);
      const int64_t factor = std::stoll(item.second.Scalar(), &used_value);
      if (used_key != key.size() || used_value != item.second.Scalar().size()) throw std::invalid_argument("");
      scheduling[epoch] = factor;
    } catch (const std::exception&) {
      s.fail("scheduling." + key, "an integer epoch mapped to an integer factor", YAML::Dump(item.second));
    }
  }
  try {
    return std::make_shared<GradientAccumulationScheduler>(scheduling);
  } catch (const std::invalid_argument& e) {
    throw cli::ConfigError(fmt::format("{}: {}", s.path(), e.what()));
  }
}

int64_t GradientAccumulationScheduler::factor_for(int64_t epoch) const {
  auto it = scheduling_.upper_bound(epoch);  // first key after `epoch`
  if (it == scheduling_.begin()) return 1;
  return std::prev(it)->second;
}

void GradientAccumulationScheduler::on_train_start(Trainer& trainer, LightningModule&) {
  if (trainer.config().accumulate_grad_batches != 1) {
    throw std::invalid_argument(fmt::format(
        "[GradientAccumulationScheduler] the Trainer option accumulate_grad_batches is {}; leave it at 1 when the "
        "scheduler decides",
        trainer.config().accumulate_grad_batches));
  }
}

void GradientAccumulationScheduler::on_train_epoch_start(Trainer& trainer, LightningModule&) {
  trainer.set_accumulate_grad_batches(factor_for(trainer.current_epoch()));
}

}  // namespace fulgur
