#include <fulgur/modules/metrics/binary_curve.hpp>

namespace fulgur::metrics {

BinaryCurve binary_curve(const torch::Tensor& scores, const torch::Tensor& target,
                         std::optional<int64_t> ignore_index) {
  torch::Tensor s = scores;
  torch::Tensor t = target;
  if (ignore_index) {
    const torch::Tensor keep = t != *ignore_index;
    s = s.masked_select(keep);
    t = t.masked_select(keep);
  }
  const int64_t n = s.numel();
  if (n == 0) return {torch::empty({0}, s.options()), torch::empty({0}, s.options())};
  const torch::Tensor order = std::get<1>(s.sort(/*stable=*/true, /*dim=*/0, /*descending=*/true));
  const torch::Tensor sorted = s.index_select(0, order);
  const torch::Tensor labels = t.index_select(0, order).to(torch::kFloat64);
  // The last index of each run of equal scores: tied samples enter together.
  const torch::Tensor change = (sorted.slice(0, 1) != sorted.slice(0, 0, -1)).nonzero().reshape({-1});
  const torch::Tensor ends = torch::cat({change, torch::full({1}, n - 1, change.options())});
  const torch::Tensor tps = labels.cumsum(0).index_select(0, ends);
  const torch::Tensor fps = (ends + 1).to(torch::kFloat64) - tps;
  return {tps, fps};
}

}  // namespace fulgur::metrics
