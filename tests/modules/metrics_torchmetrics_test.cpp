// fulgur's metrics against torchmetrics 1.9.0 itself: random inputs (ties,
// a class never in the targets, ignore_index; multilabel logits with a label
// never positive; calibration with confidences on the bin edges; Micro,
// Macro, Weighted and per-class averages; one-vs-rest AUROC and average
// precision on tied probabilities and on logits) validated in batches of 7 by
// metrics_probe on 1, 2 and 3 processes (ddp, uneven shards of 203 rows),
// and by torchmetrics on the whole data at once in Python
// (tests/python/metrics_reference.py). Counts agree exactly, values to 1e-6.
#include "support/test_support.hpp"

#include <fulgur/fulgur.hpp>

#include <fmt/format.h>

#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <sstream>
#include <string>

namespace metrics_torchmetrics_test {

using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {

const std::string kProbe = std::string(FULGUR_BINARY_DIR) + "/bin/metrics_probe";

std::map<std::string, double> parse(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string name, value;
    if (!(fields >> name >> value) || !(fields >> std::ws).eof()) continue;  // not a "name value" line
    try {
      out[name] = std::stod(value);
    } catch (const std::exception&) {
    }
  }
  return out;
}

bool exact(const std::string& name) { return name == "n" || name.rfind("cm_", 0) == 0; }

}  // namespace

TEST_CASE("metrics equal torchmetrics 1.9.0 on 1, 2 and 3 processes with uneven shards") {
  TempDir dir("metrics-torchmetrics");
  const auto generated = run_command(fmt::format("{} {}/tests/python/metrics_reference.py {} 28 203", FULGUR_PYTHON,
                                                 FULGUR_SOURCE_DIR, dir.path().string()),
                                     120);
  INFO(generated.output);
  REQUIRE(generated.exit_code == 0);
  const std::map<std::string, double> reference = parse(fulgur::testing::read_file(dir / "reference.txt"));
  // 83 values before the curves, weighted averages and multilabel IoU/Dice.
  REQUIRE(reference.size() == 83 + 13 + 16 + 18);

  for (const int devices : {1, 2, 3}) {
    CAPTURE(devices);
    const auto run = run_command(fmt::format("{} --data {} --devices {} --batch_size 7 --root {}", kProbe,
                                             (dir / "data.txt").string(), devices,
                                             (dir / ("run" + std::to_string(devices))).string()),
                                 180);
    INFO(run.output);
    REQUIRE(run.exit_code == 0);
    const std::map<std::string, double> got = parse(run.output);
    for (const auto& name_expected : reference) {
      const auto& name = name_expected.first;  // not bound: clang 14 cannot capture a binding
      const auto& expected = name_expected.second;
      CAPTURE(name);
      REQUIRE(got.count(name) == 1);
      if (std::isnan(expected)) {
        CHECK(std::isnan(got.at(name)));  // a class without positives: undefined there too
      } else if (exact(name)) {
        CHECK(got.at(name) == expected);
      } else {
        CHECK(std::abs(got.at(name) - expected) <= 1e-6 * std::max(std::abs(expected), 1e-6));
      }
    }
  }
}

TEST_CASE("a Metric: states reset, forward's batch value, compute cached, Cat states, errors name the value") {
  namespace M = fulgur::metrics;
  M::F1Score f1(M::StatScoresOptions(3).average(M::Average::Macro));
  const torch::Tensor a_pred = torch::tensor({0, 1, 2, 2}), a_true = torch::tensor({0, 1, 1, 2});
  const torch::Tensor b_pred = torch::tensor({0, 0, 1}), b_true = torch::tensor({0, 2, 1});
  const torch::Tensor batch = f1.forward(b_pred, b_true);
  CHECK(batch.item<double>() == doctest::Approx(M::f1_score(b_pred, b_true, f1.options()).item<double>()));
  f1.update(a_pred, a_true);
  const torch::Tensor all = M::f1_score(torch::cat({b_pred, a_pred}), torch::cat({b_true, a_true}), f1.options());
  // The epoch F1 is not the mean of the batches' F1s.
  const double mean_of_batches =
      (batch.item<double>() + M::f1_score(a_pred, a_true, f1.options()).item<double>()) / 2;
  CHECK(f1.compute().item<double>() == doctest::Approx(all.item<double>()).epsilon(1e-12));
  CHECK(std::abs(all.item<double>() - mean_of_batches) > 0.01);
  CHECK(f1.compute().data_ptr() == f1.compute().data_ptr());  // cached, not recomputed
  CHECK(f1.update_count() == 2);
  f1.reset();
  CHECK(f1.update_count() == 0);
  CHECK_FALSE(f1.batch_value().defined());

  M::AUROC auroc;
  auroc.update(torch::tensor({0.1, 0.4}), torch::tensor({0, 1}));
  auroc.update(torch::tensor({0.35, 0.8}), torch::tensor({1, 0}));
  CHECK(auroc.compute().item<double>() == doctest::Approx(0.5));
  CHECK_THROWS_WITH(M::AUROC(M::StatScoresOptions(3).average(M::Average::Micro)),
                    doctest::Contains("[AUROC::AUROC] average Micro is not defined for a multiclass task"));
  CHECK_THROWS_WITH(M::auroc(torch::rand({4, 3}), torch::tensor({0, 1, 2}), M::StatScoresOptions(3)),
                    doctest::Contains("[AUROC::update] expected preds [N, 3, ...] and target [N, ...], got preds [4, 3] "
                                      "and target [3]"));
  CHECK_THROWS_WITH(M::average_precision(torch::rand({3, 3}), torch::tensor({0, 1, 3}), M::StatScoresOptions(3)),
                    doctest::Contains("[AveragePrecision::update] target value 3 is outside [0, 3)"));
  // One-vs-rest: a class's score is the binary score of "this class or not".
  torch::manual_seed(3);
  const torch::Tensor probs = torch::rand({12, 3}, torch::kFloat64), classes = torch::randint(3, {12});
  const torch::Tensor per_class = M::auroc(probs, classes, M::StatScoresOptions(3).average(M::Average::None));
  for (int64_t k = 0; k < 3; ++k) {
    CHECK(per_class[k].item<double>() ==
          doctest::Approx(M::auroc(probs.select(1, k), (classes == k).to(torch::kLong)).item<double>()).epsilon(1e-12));
  }

  CHECK_THROWS_WITH(f1.update(torch::tensor({0, 1}), torch::tensor({0, 3})),
                    doctest::Contains("[F1Score::update] target value 3 is outside [0, 3)"));
  CHECK_THROWS_WITH(M::Accuracy(M::StatScoresOptions(3).top_k(4)),
                    doctest::Contains("[Accuracy::Accuracy] top_k must be in [1, 3], got 4"));
  CHECK_THROWS_WITH(M::Precision(M::StatScoresOptions(3).top_k(2)),
                    doctest::Contains("[Precision::Precision] top_k must be 1, got 2"));
}

TEST_CASE("multilabel and calibration: per-label values, [L, 2, 2] matrix, errors name the value") {
  namespace M = fulgur::metrics;
  // Two labels; logits (outside [0, 1]) become probabilities first.
  const torch::Tensor logits = torch::tensor({{2.0, -1.0}, {-3.0, 0.5}, {1.0, 1.0}});
  const torch::Tensor target = torch::tensor({{1, 0}, {1, 1}, {0, 1}});
  // Label 0: tp 1, fn 1, fp 1; label 1: tp 2, tn 1.
  const auto options = M::StatScoresOptions::multilabel(2).average(M::Average::None);
  const torch::Tensor cm = M::confusion_matrix(logits, target, options);
  CHECK(cm.sizes().vec() == std::vector<int64_t>{2, 2, 2});
  CHECK(torch::equal(cm, torch::tensor({{{0, 1}, {1, 1}}, {{1, 0}, {0, 2}}}, torch::kLong)));
  CHECK(torch::allclose(M::precision(logits, target, options), torch::tensor({0.5, 1.0}, torch::kFloat64)));
  CHECK(torch::allclose(M::accuracy(logits, target, options), torch::tensor({1.0 / 3, 1.0}, torch::kFloat64)));
  CHECK(M::f1_score(logits, target, M::StatScoresOptions::multilabel(2).average(M::Average::Micro)).item<double>() ==
        doctest::Approx(2.0 * 3 / (2 * 3 + 1 + 1)));
  M::F1Score f1(options);
  CHECK_THROWS_WITH(f1.update(logits, target.narrow(1, 0, 1)),
                    doctest::Contains("[F1Score::update] multilabel preds and target must both be [N, 2, ...], got [3, 2] and [3, 1]"));
  CHECK_THROWS_WITH(M::recall(logits, torch::tensor({{1, 0}, {2, 1}, {0, 1}}), options),
                    doctest::Contains("[Recall::update] multilabel target value 2 is not 0 or 1"));
  // Per-label IoU from the same [[tn, fp], [fn, tp]] cells.
  const torch::Tensor tp = cm.select(1, 1).select(1, 1), fp = cm.select(1, 0).select(1, 1), fn = cm.select(1, 1).select(1, 0);
  CHECK(torch::allclose(M::jaccard_index(logits, target, options), tp.to(torch::kFloat64) / (tp + fp + fn)));

  // Binary calibration, 2 bins: [0.25, 0.25] -> bin 0 (confidence 0.25, hits 0),
  // [0.55, 0.75, 0.75] -> bin 1 (confidence 0.6833, hits 1): torchmetrics' docstring example, 0.29.
  const torch::Tensor p = torch::tensor({0.25, 0.25, 0.55, 0.75, 0.75}), t = torch::tensor({0, 0, 1, 1, 1});
  CHECK(M::calibration_error(p, t, M::StatScoresOptions::binary(), 2).item<double>() == doctest::Approx(0.29));
  CHECK(M::calibration_error(p, t, M::StatScoresOptions::binary(), 2, M::CalibrationNorm::Max).item<double>() ==
        doctest::Approx(0.95 / 3));
  CHECK_THROWS_WITH(M::CalibrationError(M::StatScoresOptions::binary(), 0),
                    doctest::Contains("[CalibrationError::CalibrationError] n_bins must be >= 1, got 0"));
  CHECK_THROWS_WITH(M::calibration_error(p, torch::tensor({0, 0, 1, 3, 1}), M::StatScoresOptions::binary()),
                    doctest::Contains("[CalibrationError::update] target value 3 is outside [0, 2)"));
}

}  // namespace metrics_torchmetrics_test
