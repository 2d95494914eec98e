// The cost of a metric object's update() per batch against computing the
// same counts by hand in the step: F1Score (macro, 10 classes) on [256, 10]
// logits versus a hand-made confusion matrix (argmax + bincount). Rounds
// alternate (hand, metric, hand, ...); the medians are compared.
// Target: ratio (metric / hand) <= 1.05.
//
//   build/bin/metric_update_bench [batches per round] [rounds]
#include <fulgur/fulgur.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <vector>

int main(int argc, char** argv) {
  const int64_t batches = argc > 1 ? std::stoll(argv[1]) : 2000;
  const int rounds = argc > 2 ? std::stoi(argv[2]) : 11;
  constexpr int64_t kClasses = 10, kBatch = 256;
  torch::manual_seed(0);
  at::set_num_threads(1);
  const torch::Tensor logits = torch::randn({kBatch, kClasses});
  const torch::Tensor target = torch::randint(kClasses, {kBatch});
  fulgur::metrics::F1Score f1{fulgur::metrics::StatScoresOptions(kClasses)};
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
  auto metric = [&] { f1.update(logits, target); };
  time(hand), time(metric);  // warm-up
  std::vector<double> h, m;
  for (int r = 0; r < rounds; ++r) {
    h.push_back(time(hand));
    m.push_back(time(metric));
  }
  std::sort(h.begin(), h.end());
  std::sort(m.begin(), m.end());
  const double hm = h[h.size() / 2], mm = m[m.size() / 2];
  std::cout << fmt::format("hand {:.2f} us/batch, F1Score::update {:.2f} us/batch, ratio {:.3f}", hm, mm, mm / hm)
            << std::endl;
  return 0;
}
