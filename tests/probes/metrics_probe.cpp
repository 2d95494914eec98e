// The metrics test's program: validates a data file (written by
// tests/python/metrics_reference.py) with a module that updates fulgur's
// metrics in validation_step and logs them as objects, on --devices N
// processes (ddp, uneven shards), and prints every epoch value as
// "name value" lines (rank 0).
//
//   metrics_probe --data data.txt --devices 3 --batch_size 7 --root dir
#include <fulgur/datamodules/datasets/tensor_dataset.hpp>
#include <fulgur/datamodules/loading/dataset_loader.hpp>
#include <fulgur/fulgur.hpp>

#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <map>
#include <string>

// One of the programs in a multi-call binary (started through bin/metrics_probe).
namespace metrics_probe {

namespace {

namespace M = fulgur::metrics;
constexpr int64_t kClasses = 5;
constexpr int64_t kLabels = 4;

// Columns of a data row: kClasses scores, the class target (-1: ignored),
// a binary score (rounded: ties), its 0/1 target, a regression prediction
// and its target, kLabels multilabel logits (rounded: ties) and their 0/1
// targets (-1: ignored), kClasses class probabilities (rounded: ties).
struct Probe : fulgur::LightningModule {
  Probe() {
    unused = register_module("unused", torch::nn::Linear(1, 1));
    auto mc = [](M::Average average) { return M::StatScoresOptions(kClasses).average(average).ignore_index(-1); };
    add("acc_micro", std::make_shared<M::Accuracy>(mc(M::Average::Micro)));
    add("acc_macro", std::make_shared<M::Accuracy>(mc(M::Average::Macro)));
    add("acc_top2_micro", std::make_shared<M::Accuracy>(mc(M::Average::Micro).top_k(2)));
    add("acc_top2_macro", std::make_shared<M::Accuracy>(mc(M::Average::Macro).top_k(2)));
    add("precision_macro", std::make_shared<M::Precision>(mc(M::Average::Macro)));
    add("precision_micro", std::make_shared<M::Precision>(mc(M::Average::Micro)));
    add("recall_macro", std::make_shared<M::Recall>(mc(M::Average::Macro)));
    add("f1_macro", std::make_shared<M::F1Score>(mc(M::Average::Macro)));
    add("f1_micro", std::make_shared<M::F1Score>(mc(M::Average::Micro)));
    add("fbeta05_macro", std::make_shared<M::FBetaScore>(mc(M::Average::Macro), 0.5));
    add("jaccard_macro", std::make_shared<M::JaccardIndex>(mc(M::Average::Macro)));
    add("jaccard_micro", std::make_shared<M::JaccardIndex>(mc(M::Average::Micro)));
    add("dice_macro", std::make_shared<M::Dice>(M::StatScoresOptions(kClasses)));
    add("dice_micro", std::make_shared<M::Dice>(M::StatScoresOptions(kClasses).average(M::Average::Micro)));
    add("jaccard_ignore0_macro",
        std::make_shared<M::JaccardIndex>(M::StatScoresOptions(kClasses).ignore_index(0)));
    add("binary_jaccard", std::make_shared<M::JaccardIndex>(M::StatScoresOptions::binary()));
    add("binary_f1", std::make_shared<M::F1Score>(M::StatScoresOptions::binary()));
    add("binary_accuracy", std::make_shared<M::Accuracy>(M::StatScoresOptions::binary()));
    add("auroc", std::make_shared<M::AUROC>(M::StatScoresOptions::binary().ignore_index(-1)));
    add("average_precision", std::make_shared<M::AveragePrecision>(M::StatScoresOptions::binary().ignore_index(-1)));
    add("mc_auroc_macro", std::make_shared<M::AUROC>(mc(M::Average::Macro)));
    add("mc_auroc_weighted", std::make_shared<M::AUROC>(mc(M::Average::Weighted)));
    add("mc_ap_macro", std::make_shared<M::AveragePrecision>(mc(M::Average::Macro)));
    add("mc_ap_weighted", std::make_shared<M::AveragePrecision>(mc(M::Average::Weighted)));
    add("mc_auroc_logits_macro", std::make_shared<M::AUROC>(mc(M::Average::Macro)));
    add("mc_ap_logits_weighted", std::make_shared<M::AveragePrecision>(mc(M::Average::Weighted)));
    add("acc_weighted", std::make_shared<M::Accuracy>(mc(M::Average::Weighted)));
    add("precision_weighted", std::make_shared<M::Precision>(mc(M::Average::Weighted)));
    add("recall_weighted", std::make_shared<M::Recall>(mc(M::Average::Weighted)));
    add("f1_weighted", std::make_shared<M::F1Score>(mc(M::Average::Weighted)));
    add("fbeta05_weighted", std::make_shared<M::FBetaScore>(mc(M::Average::Weighted), 0.5));
    add("jaccard_weighted", std::make_shared<M::JaccardIndex>(mc(M::Average::Weighted)));
    add("dice_weighted", std::make_shared<M::Dice>(M::StatScoresOptions(kClasses).average(M::Average::Weighted)));
    add("mse", std::make_shared<M::MeanSquaredError>());
    add("mae", std::make_shared<M::MeanAbsoluteError>());
    add("r2", std::make_shared<M::R2Score>());
    add("pearson", std::make_shared<M::PearsonCorrCoef>());
    add("mean", std::make_shared<M::MeanMetric>());
    add("max", std::make_shared<M::MaxMetric>());
    add("min", std::make_shared<M::MinMetric>());
    add("n", std::make_shared<M::SumMetric>());
    auto ml = [](M::Average average) { return M::StatScoresOptions::multilabel(kLabels).average(average).ignore_index(-1); };
    add("ml_acc_micro", std::make_shared<M::Accuracy>(ml(M::Average::Micro)));
    add("ml_acc_macro", std::make_shared<M::Accuracy>(ml(M::Average::Macro)));
    add("ml_precision_micro", std::make_shared<M::Precision>(ml(M::Average::Micro)));
    add("ml_precision_macro", std::make_shared<M::Precision>(ml(M::Average::Macro)));
    add("ml_recall_micro", std::make_shared<M::Recall>(ml(M::Average::Micro)));
    add("ml_recall_macro", std::make_shared<M::Recall>(ml(M::Average::Macro)));
    add("ml_f1_micro", std::make_shared<M::F1Score>(ml(M::Average::Micro)));
    add("ml_f1_macro", std::make_shared<M::F1Score>(ml(M::Average::Macro)));
    add("ml_f1_t03_macro", std::make_shared<M::F1Score>(ml(M::Average::Macro).threshold(0.3)));
    add("ml_fbeta2_macro", std::make_shared<M::FBetaScore>(ml(M::Average::Macro), 2.0));
    add("ml_acc_weighted", std::make_shared<M::Accuracy>(ml(M::Average::Weighted)));
    add("ml_precision_weighted", std::make_shared<M::Precision>(ml(M::Average::Weighted)));
    add("ml_recall_weighted", std::make_shared<M::Recall>(ml(M::Average::Weighted)));
    add("ml_f1_weighted", std::make_shared<M::F1Score>(ml(M::Average::Weighted)));
    add("ml_jaccard_macro", std::make_shared<M::JaccardIndex>(ml(M::Average::Macro)));
    add("ml_jaccard_micro", std::make_shared<M::JaccardIndex>(ml(M::Average::Micro)));
    add("ml_jaccard_weighted", std::make_shared<M::JaccardIndex>(ml(M::Average::Weighted)));
    // DiceScore has no ignore_index: these see the ignored targets as 0.
    auto ml_dice = [](M::Average average) { return M::StatScoresOptions::multilabel(kLabels).average(average); };
    add("ml_dice_macro", std::make_shared<M::Dice>(ml_dice(M::Average::Macro)));
    add("ml_dice_micro", std::make_shared<M::Dice>(ml_dice(M::Average::Micro)));
    add("ml_dice_weighted", std::make_shared<M::Dice>(ml_dice(M::Average::Weighted)));
    add("ml_auroc_macro", std::make_shared<M::AUROC>(ml(M::Average::Macro)));
    add("ml_auroc_micro", std::make_shared<M::AUROC>(ml(M::Average::Micro)));
    add("ml_auroc_weighted", std::make_shared<M::AUROC>(ml(M::Average::Weighted)));
    add("ml_ap_macro", std::make_shared<M::AveragePrecision>(ml(M::Average::Macro)));
    add("ml_ap_micro", std::make_shared<M::AveragePrecision>(ml(M::Average::Micro)));
    add("ml_ap_weighted", std::make_shared<M::AveragePrecision>(ml(M::Average::Weighted)));
    // Per class (Average::None), logged cell by cell at the epoch's end.
    per_class["mc_auroc_none"] = register_module("mc_auroc_none", std::make_shared<M::AUROC>(mc(M::Average::None)));
    per_class["mc_ap_none"] = register_module("mc_ap_none", std::make_shared<M::AveragePrecision>(mc(M::Average::None)));
    per_class["ml_auroc_none"] = register_module("ml_auroc_none", std::make_shared<M::AUROC>(ml(M::Average::None)));
    per_class["ml_ap_none"] = register_module("ml_ap_none", std::make_shared<M::AveragePrecision>(ml(M::Average::None)));
    add("calibration_binary", std::make_shared<M::CalibrationError>(M::StatScoresOptions::binary().ignore_index(-1)));
    add("calibration_binary_max", std::make_shared<M::CalibrationError>(M::StatScoresOptions::binary().ignore_index(-1),
                                                                        15, M::CalibrationNorm::Max));
    add("calibration_multiclass", std::make_shared<M::CalibrationError>(mc(M::Average::Macro)));
    add("calibration_multiclass_l2",
        std::make_shared<M::CalibrationError>(mc(M::Average::Macro), 10, M::CalibrationNorm::L2));
    confmat = register_module("confmat", std::make_shared<M::ConfusionMatrix>(mc(M::Average::Macro)));
    ml_confmat = register_module("ml_confmat", std::make_shared<M::ConfusionMatrix>(ml(M::Average::Macro)));
  }
  void add(const std::string& name, std::shared_ptr<M::Metric> metric) {
    metrics[name] = register_module(name, std::move(metric));
  }

  void validation_step(const fulgur::Batch& batch, int64_t) override {
    const torch::Tensor x = batch.input;
    const torch::Tensor scores = x.slice(1, 0, kClasses);
    const torch::Tensor target = x.select(1, kClasses).to(torch::kLong);
    const torch::Tensor bscore = x.select(1, kClasses + 1), btarget = x.select(1, kClasses + 2).to(torch::kLong);
    const torch::Tensor reg_pred = x.select(1, kClasses + 3), reg_target = x.select(1, kClasses + 4);
    const torch::Tensor ml_logits = x.slice(1, kClasses + 5, kClasses + 5 + kLabels);
    const torch::Tensor ml_target = x.slice(1, kClasses + 5 + kLabels, kClasses + 5 + 2 * kLabels).to(torch::kLong);
    const torch::Tensor probs = x.slice(1, kClasses + 5 + 2 * kLabels, 2 * kClasses + 5 + 2 * kLabels);
    for (auto& [name, metric] : metrics) {
      if (auto* s = dynamic_cast<M::StatScores*>(metric.get())) {
        if (s->options().task() == M::Task::Multilabel) {
          if (name.rfind("ml_dice", 0) == 0) {
            s->update(ml_logits, ml_target.clamp_min(0));
          } else if (name == "ml_acc_micro") {
            s->forward(ml_logits, ml_target);
          } else {
            s->update(ml_logits, ml_target);
          }
        } else if (s->options().task() == M::Task::Binary) {
          s->update(bscore, btarget.clamp_min(0));
        } else if (name == "jaccard_ignore0_macro" || name.rfind("dice", 0) == 0) {
          s->update(scores, target.clamp_min(0));
        } else if (name == "acc_micro") {
          s->forward(scores, target);  // the forward path: also logged on_step
        } else {
          s->update(scores, target);
        }
      } else if (auto* ce = dynamic_cast<M::CalibrationError*>(metric.get())) {
        if (ce->options().task() == M::Task::Binary) {
          ce->update(bscore, btarget);
        } else {
          ce->update(scores, target);
        }
      } else if (auto* c = dynamic_cast<M::CurveMetric*>(metric.get())) {
        update_curve(name, *c, bscore, btarget, probs, scores, target, ml_logits, ml_target);
      } else if (auto* r = dynamic_cast<M::MeanSquaredError*>(metric.get())) {
        r->update(reg_pred, reg_target);
      } else if (auto* r = dynamic_cast<M::MeanAbsoluteError*>(metric.get())) {
        r->update(reg_pred, reg_target);
      } else if (auto* r = dynamic_cast<M::R2Score*>(metric.get())) {
        r->update(reg_pred, reg_target);
      } else if (auto* r = dynamic_cast<M::PearsonCorrCoef*>(metric.get())) {
        r->update(reg_pred, reg_target);
      } else if (auto* m = dynamic_cast<M::MeanMetric*>(metric.get())) {
        m->update(reg_target, bscore);  // weighted by the binary scores
      } else if (auto* m = dynamic_cast<M::MaxMetric*>(metric.get())) {
        m->update(reg_pred);
      } else if (auto* m = dynamic_cast<M::MinMetric*>(metric.get())) {
        m->update(reg_pred);
      } else if (auto* m = dynamic_cast<M::SumMetric*>(metric.get())) {
        m->update(torch::ones({x.size(0)}, torch::kFloat64));
      }
      fulgur::LogOptions options;
      if (name == "acc_micro") options.on_step = true;
      log(name, *metric, options);
    }
    confmat->update(scores, target);
    ml_confmat->update(ml_logits, ml_target);
    for (auto& [name, metric] : per_class) {
      update_curve(name, *metric, bscore, btarget, probs, scores, target, ml_logits, ml_target);
    }
  }
  static void update_curve(const std::string& name, M::CurveMetric& metric, const torch::Tensor& bscore,
                           const torch::Tensor& btarget, const torch::Tensor& probs, const torch::Tensor& scores,
                           const torch::Tensor& target, const torch::Tensor& ml_logits, const torch::Tensor& ml_target) {
    switch (metric.options().task()) {
      case M::Task::Binary: metric.update(bscore, btarget); break;
      case M::Task::Multilabel: metric.update(ml_logits, ml_target); break;
      case M::Task::Multiclass:
        if (name.find("logits") != std::string::npos) {
          metric.forward(scores, target);  // softmaxed per batch
        } else {
          metric.update(probs, target);  // probabilities as they are, with ties
        }
        break;
    }
  }
  void on_validation_epoch_end() override {
    // A matrix is not a loggable scalar: its cells are, counted over every rank.
    const torch::Tensor cm = confmat->compute();
    for (int64_t i = 0; i < kClasses; ++i) {
      for (int64_t j = 0; j < kClasses; ++j) log(fmt::format("cm_{}_{}", i, j), cm[i][j].to(torch::kFloat64));
    }
    confmat->reset();
    const torch::Tensor ml_cm = ml_confmat->compute();  // [labels, 2, 2]
    for (int64_t l = 0; l < kLabels; ++l) {
      for (int64_t i = 0; i < 2; ++i) {
        for (int64_t j = 0; j < 2; ++j) log(fmt::format("cm_ml_{}_{}_{}", l, i, j), ml_cm[l][i][j].to(torch::kFloat64));
      }
    }
    ml_confmat->reset();
    for (auto& [name, metric] : per_class) {
      const torch::Tensor values = metric->compute();
      for (int64_t k = 0; k < values.size(0); ++k) log(fmt::format("{}_{}", name, k), values[k]);
      metric->reset();
    }
  }
  torch::Tensor training_step(const fulgur::Batch&, int64_t) override { return {}; }
  fulgur::OptimizerConfig configure_optimizers() override {
    return {std::make_shared<torch::optim::SGD>(parameters(), torch::optim::SGDOptions(0.1)), std::nullopt};
  }

  torch::nn::Linear unused{nullptr};
  std::map<std::string, std::shared_ptr<M::Metric>> metrics;
  std::shared_ptr<M::ConfusionMatrix> confmat, ml_confmat;
  std::map<std::string, std::shared_ptr<M::CurveMetric>> per_class;
};

struct Data : fulgur::DataModule {
  Data(torch::Tensor rows, int64_t batch_size) : rows_(std::move(rows)), batch_size_(batch_size) {}
  void setup(fulgur::Stage) override {
    data_ = std::make_shared<fulgur::TensorDataset>(rows_, torch::zeros({rows_.size(0)}));
  }
  std::shared_ptr<fulgur::DataLoader> val_dataloader() override {
    return std::make_shared<fulgur::DatasetLoader>(data_, fulgur::DatasetLoaderOptions(batch_size_));
  }
  torch::Tensor rows_;
  int64_t batch_size_;
  std::shared_ptr<const fulgur::Dataset> data_;
};

torch::Tensor read_rows(const std::string& path) {
  std::ifstream in(path);
  int64_t n = 0, k = 0;
  if (!(in >> n >> k)) throw std::runtime_error("[metrics_probe] cannot read " + path);
  torch::Tensor rows = torch::empty({n, k}, torch::kFloat64);
  double* out = rows.data_ptr<double>();
  for (int64_t i = 0; i < n * k; ++i) {
    if (!(in >> out[i])) throw std::runtime_error("[metrics_probe] " + path + " ends early");
  }
  return rows;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::map<std::string, std::string> flags{{"devices", "1"}, {"batch_size", "7"}, {"root", "metrics_probe"}};
    for (int i = 1; i + 1 < argc; i += 2) flags[std::string(argv[i]).substr(2)] = argv[i + 1];
    Probe model;
    Data data(read_rows(flags.at("data")), std::stoll(flags.at("batch_size")));
    const int64_t devices = std::stoll(flags.at("devices"));
    fulgur::Trainer trainer(fulgur::TrainerOptions()
                                .accelerator(fulgur::AcceleratorKind::Cpu)
                                .devices(std::to_string(devices))
                                .strategy(devices == 1 ? fulgur::StrategyKind::Auto : fulgur::StrategyKind::DDP)
                                .default_root_dir(flags.at("root"))
                                .enable_progress_bar(false)
                                .enable_model_summary(false)
                                .logger(false));
    const std::map<std::string, double> metrics = trainer.validate(model, data);
    if (trainer.is_global_zero()) {
      for (const auto& [name, value] : metrics) std::cout << fmt::format("{} {:.17g}", name, value) << "\n";
      std::cout << std::flush;
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return 1;
  }
}

}  // namespace metrics_probe
