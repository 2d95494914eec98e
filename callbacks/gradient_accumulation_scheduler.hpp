#pragma once

#include <fulgur/trainer/callback.hpp>

#include <map>

namespace fulgur {

namespace cli {
class ConfigSection;
}

/// Changes the number of batches accumulated per optimizer step by epoch:
/// `{0: 8, 4: 4, 8: 1}` accumulates 8 batches in epochs 0-3, 4 in epochs
/// 4-7 and 1 from epoch 8 on. Epochs before the first key use 1. Replaces
/// the accumulate_grad_batches option, which must stay at 1.
class GradientAccumulationScheduler : public Callback {
 public:
  explicit GradientAccumulationScheduler(std::map<int64_t, int64_t> scheduling);
  static std::shared_ptr<Callback> from_config(cli::ConfigSection& section);

  std::string state_key() const override { return "GradientAccumulationScheduler"; }

  void on_train_start(Trainer& trainer, LightningModule&) override;
  void on_train_epoch_start(Trainer& trainer, LightningModule&) override;

  /// Batches accumulated in `epoch`.
  int64_t factor_for(int64_t epoch) const;

 private:
  std::map<int64_t, int64_t> scheduling_;
};

}  // namespace fulgur
