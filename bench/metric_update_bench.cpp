// The cost of a metric object's update() per batch against computing the
// same counts by hand in the step: F1Score (macro, 10 classes) on [256, 10]
// logits versus a hand-made confusion matrix (argmax + bincount), on one
// CPU thread. Two metric variants: the default, which checks the targets'
// and labels' range on the CPU (two aminmax and a host read per batch, as
// torchmetrics' validate_args does), and validate_args(false), the counting
// alone, which is what the hand-made code does. Rounds alternate (hand,
// metric, checked metric, ...); the medians are compared.
// Target: ratio (unchecked metric / hand) <= 1.05.
//
//   build/bin/metric_update_bench [batches per round] [rounds]
#include <fulgur/fulgur.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <vector>

// One of the programs in a multi-call binary (started through bin/metric_update_bench).
namespace metric_update_bench {

int main(int argc, char** argv) {
  const int64_t batches = argc > 1 ? std::stoll(argv[1]) : 2000;
  const int rounds = argc > 2 ? std::stoi(argv[2]) : 11;
  constexpr int64_t kClasses = 10, kBatch = 256;
  namespace M = fulgur::metrics;
  torch::manual_seed(0);
  at::set_num_threads(1);
  const torch::Tensor logits = torch::randn({kBatch, kClasses});
  const torch::Tensor target = torch::randint(kClasses, {kBatch});
  M::F1Score checked{M::StatScoresOptions(kClasses)};
  M::F1Score unchecked{M::StatScoresOptions(kClasses).validate_args(false)};
  torch::Tensor cm = torch::zeros({kClasses, kClasses}, torch::kLong);
  auto time = [&](auto&& step) {
    const auto start = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < batches; ++i) step();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / batches * 1e6;
  };
  auto hand = [&] {
    const torch::Tensor pred = logits.argmax(1);
    cm += torch::bincount(target * kClasses + pred, {}, kClasses * kClasses).view({kClasses, kClasses});
  };
  auto metric = [&] { unchecked.update(logits, target); };
  auto checked_metric = [&] { checked.update(logits, target); };
  time(hand), time(metric), time(checked_metric);  // warm-up
  std::vector<double> h, m, c;
  for (int r = 0; r < rounds; ++r) {
    h.push_back(time(hand));
    m.push_back(time(metric));
    c.push_back(time(checked_metric));
  }
  // The three must have counted the same batches.
  const torch::Tensor f1_hand = M::f1_score(logits, target, M::StatScoresOptions(kClasses));
  if (!torch::allclose(unchecked.compute(), f1_hand) || !torch::allclose(checked.compute(), f1_hand)) {
    std::cerr << "metric_update_bench: the metrics disagree with the functional F1" << std::endl;
    return 1;
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double hm = median(h), mm = median(m), cmed = median(c);
  std::cout << fmt::format(
                   "metric_update: hand {:.2f} us/batch, F1Score::update validate_args(false) {:.2f} us/batch, ratio "
                   "{:.3f}; default (range checks) {:.2f} us/batch, ratio {:.3f}",
                   hm, mm, mm / hm, cmed, cmed / hm)
            << std::endl;
  return 0;
}

}  // namespace metric_update_bench
