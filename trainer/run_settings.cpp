#include <fulgur/trainer/run_settings.hpp>

#include <ATen/Context.h>
#include <ATen/Parallel.h>

namespace fulgur {

RunSettings::RunSettings(const Wanted& wanted) {
  at::Context& context = at::globalContext();
  if (wanted.num_threads && *wanted.num_threads != at::get_num_threads()) {
    num_threads_ = at::get_num_threads();
    at::set_num_threads(static_cast<int>(*wanted.num_threads));
  }
  if (wanted.deterministic && *wanted.deterministic != context.deterministicAlgorithms()) {
    deterministic_.emplace(context.deterministicAlgorithms(), context.deterministicAlgorithmsWarnOnly());
    context.setDeterministicAlgorithms(*wanted.deterministic, /*warn_only=*/false);
  }
  if (wanted.cudnn_benchmark && *wanted.cudnn_benchmark != context.benchmarkCuDNN()) {
    cudnn_benchmark_ = context.benchmarkCuDNN();
    context.setBenchmarkCuDNN(*wanted.cudnn_benchmark);
  }
}

RunSettings::~RunSettings() {
  at::Context& context = at::globalContext();
  if (cudnn_benchmark_) context.setBenchmarkCuDNN(*cudnn_benchmark_);
  if (deterministic_) context.setDeterministicAlgorithms(deterministic_->first, deterministic_->second);
  if (num_threads_) at::set_num_threads(*num_threads_);
}

}  // namespace fulgur
