#include <fulgur/modules/metrics/aggregation_metric.hpp>

#include <limits>

namespace fulgur::metrics {
namespace {

// torchmetrics' class and state names (the state's name is its key in a checkpoint).
template <Reduction R>
constexpr const char* kClass = R == Reduction::Sum   ? "SumMetric"
                               : R == Reduction::Max ? "MaxMetric"
                               : R == Reduction::Min ? "MinMetric"
                                                     : "MeanMetric";
template <Reduction R>
constexpr const char* kState = R == Reduction::Sum   ? "sum_value"
                               : R == Reduction::Max ? "max_value"
                               : R == Reduction::Min ? "min_value"
                                                     : "mean_value";

}  // namespace

template <Reduction R>
AggregationMetric<R>::AggregationMetric() : Metric(kClass<R>) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  const double start = R == Reduction::Max ? -inf : R == Reduction::Min ? inf : 0.0;
  // Mean keeps two sums, so its states reduce by Sum across processes.
  const Reduction across = R == Reduction::Mean ? Reduction::Sum : R;
  add_state(kState<R>, torch::tensor(start, torch::kFloat64), across);
  if constexpr (R == Reduction::Mean) add_state("weight", torch::tensor(0.0, torch::kFloat64), Reduction::Sum);
}

template <Reduction R>
void AggregationMetric<R>::update(const torch::Tensor& value) {
  if constexpr (R == Reduction::Mean) {
    update(value, torch::Tensor());
  } else {
    begin_update(value.device());
    torch::Tensor& s = state(kState<R>);
    const torch::Tensor v = value.detach().to(torch::kFloat64);
    if constexpr (R == Reduction::Sum) {
      s = s + v.sum();
    } else if (v.numel() > 0) {
      s = R == Reduction::Max ? torch::maximum(s, v.max()) : torch::minimum(s, v.min());
    }
  }
}

template <Reduction R>
template <Reduction Q>
  requires(Q == Reduction::Mean)
void AggregationMetric<R>::update(const torch::Tensor& value, const torch::Tensor& weight) {
  begin_update(value.device());
  const torch::Tensor v = value.detach().to(torch::kFloat64);
  const torch::Tensor w =
      weight.defined() ? weight.detach().to(v.device(), torch::kFloat64).expand_as(v) : torch::ones_like(v);
  state("mean_value") = state("mean_value") + (v * w).sum();
  state("weight") = state("weight") + w.sum();
}

template <Reduction R>
torch::Tensor AggregationMetric<R>::forward(const torch::Tensor& value) {
  return forward_with([&] { update(value); });
}

template <Reduction R>
template <Reduction Q>
  requires(Q == Reduction::Mean)
torch::Tensor AggregationMetric<R>::forward(const torch::Tensor& value, const torch::Tensor& weight) {
  return forward_with([&] { update(value, weight); });
}

template <Reduction R>
torch::Tensor AggregationMetric<R>::compute_value() {
  if constexpr (R == Reduction::Mean) {
    return state("mean_value") / state("weight");
  } else {
    return state(kState<R>).clone();
  }
}

template class AggregationMetric<Reduction::Sum>;
template class AggregationMetric<Reduction::Max>;
template class AggregationMetric<Reduction::Min>;
template class AggregationMetric<Reduction::Mean>;
template void AggregationMetric<Reduction::Mean>::update(const torch::Tensor&, const torch::Tensor&);
template torch::Tensor AggregationMetric<Reduction::Mean>::forward(const torch::Tensor&, const torch::Tensor&);

}  // namespace fulgur::metrics
