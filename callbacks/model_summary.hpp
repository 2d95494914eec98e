#pragma once

#include <fulgur/core/options.hpp>
#include <fulgur/trainer/callback.hpp>

#include <string>
#include <vector>

namespace fulgur {

class Strategy;

/// Options of ModelSummary, with Lightning's names and defaults.
#define FULGUR_MODEL_SUMMARY_OPTIONS(X) \
  X(int64_t, max_depth, 1, "depth of submodules listed; -1 all; 0 prints no summary", \
    fulgur::check::NoLimitOrAtLeast{0})

struct ModelSummaryOptions {
  FULGUR_OPTIONS(ModelSummaryOptions, FULGUR_MODEL_SUMMARY_OPTIONS)
};

/// Prints, at fit start on rank 0, the module's submodules to `max_depth`
/// (name, type, parameters, train or eval mode) and the parameter totals
/// (Lightning's ModelSummary). The Trainer adds one with the defaults when
/// `enable_model_summary` is on and none is given.
class ModelSummary : public Callback {
 public:
  using Options = ModelSummaryOptions;
  explicit ModelSummary(ModelSummaryOptions options = {});

  struct Row {
    std::string name;  // dotted path, e.g. "features.0"
    std::string type;  // class name without namespace, e.g. "Linear"
    int64_t params = 0;
    bool training = true;
  };
  struct Summary {
    std::vector<Row> rows;
    int64_t trainable = 0;
    int64_t non_trainable = 0;
    int64_t total = 0;
    /// Parameter bytes / 1e6, as Lightning estimates the model's size.
    double size_mb = 0.0;
    int64_t modules_in_train_mode = 0;
    int64_t modules_in_eval_mode = 0;
  };

  std::string state_key() const override { return "ModelSummary"; }
  void on_fit_start(Trainer& trainer, LightningModule& module) override;

  /// The summary of `module` to `max_depth` (-1: every depth).
  /// `strategy` (optional) counts a sharded parameter whole (FSDP holds a shard of it).
  static Summary summarize(torch::nn::Module& module, int64_t max_depth, const Strategy* strategy = nullptr);
  /// The table as printed.
  static std::string format(const Summary& summary);
  const ModelSummaryOptions& options() const { return options_; }

 private:
  ModelSummaryOptions options_;
};

}  // namespace fulgur
