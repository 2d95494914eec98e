#include <fulgur/trainer/run_settings.hpp>

#include <ATen/Context.h>
#include <ATen/Parallel.h>

#include <mutex>
#include <utility>

namespace fulgur {
namespace {

// The program's values, saved by the first run that changes each, and the
// runs alive: process-wide, because the settings are.
std::mutex g_mutex;
int g_runs = 0;
std::optional<int> g_num_threads;
std::optional<std::pair<bool, bool>> g_deterministic;  // enabled, warn_only
std::optional<bool> g_cudnn_benchmark;

}  // namespace

RunSettings::RunSettings(const Wanted& wanted) {
  const std::lock_guard lock(g_mutex);
  ++g_runs;
  at::Context& context = at::globalContext();
  if (wanted.num_threads && *wanted.num_threads != at::get_num_threads()) {
    if (!g_num_threads) g_num_threads = at::get_num_threads();
    at::set_num_threads(static_cast<int>(*wanted.num_threads));
  }
  if (wanted.deterministic && *wanted.deterministic != context.deterministicAlgorithms()) {
    if (!g_deterministic) {
      g_deterministic.emplace(context.deterministicAlgorithms(), context.deterministicAlgorithmsWarnOnly());
    }
    context.setDeterministicAlgorithms(*wanted.deterministic, /*warn_only=*/false);
  }
  if (wanted.cudnn_benchmark && *wanted.cudnn_benchmark != context.benchmarkCuDNN()) {
    if (!g_cudnn_benchmark) g_cudnn_benchmark = context.benchmarkCuDNN();
    context.setBenchmarkCuDNN(*wanted.cudnn_benchmark);
  }
}

RunSettings::~RunSettings() {
  const std::lock_guard lock(g_mutex);
  if (--g_runs > 0) return;
  at::Context& context = at::globalContext();
  if (g_cudnn_benchmark) context.setBenchmarkCuDNN(*g_cudnn_benchmark);
  if (g_deterministic) context.setDeterministicAlgorithms(g_deterministic->first, g_deterministic->second);
  if (g_num_threads) at::set_num_threads(*g_num_threads);
  g_num_threads.reset();
  g_deterministic.reset();
  g_cudnn_benchmark.reset();
}

}  // namespace fulgur
