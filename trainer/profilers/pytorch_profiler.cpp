#include <fulgur/trainer/profilers/pytorch_profiler.hpp>

#include <ATen/record_function.h>
#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/cuda.h>

#include <fmt/format.h>

#include <iostream>
#include <set>

namespace fulgur {
namespace {

namespace kineto = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;
using torch::profiler::impl::ProfilerConfig;
using torch::profiler::impl::ProfilerState;

ProfilerConfig config() { return ProfilerConfig(ProfilerState::KINETO, /*report_input_shapes=*/true); }

std::set<ActivityType> activities() {
  std::set<ActivityType> kinds{ActivityType::CPU};
  if (torch::cuda::is_available()) kinds.insert(ActivityType::CUDA);
  return kinds;
}

}  // namespace

struct PyTorchProfiler::Result {
  std::unique_ptr<kineto::ProfilerResult> trace;
};

PyTorchProfiler::PyTorchProfiler() = default;

PyTorchProfiler::~PyTorchProfiler() {
  open_.clear();
  if (recording_) kineto::disableProfiler();
}

void PyTorchProfiler::start(const std::string& action) {
  if (!recording_) return;
  auto record = std::make_unique<at::RecordFunction>(at::RecordScope::USER_SCOPE);
  if (record->isActive()) record->before(std::string_view(action));
  open_[action].push_back(std::move(record));
}

void PyTorchProfiler::stop(const std::string& action) {
  // An action that began before the window opened has no record: nothing to end.
  auto found = open_.find(action);
  if (found == open_.end() || found->second.empty()) return;
  found->second.pop_back();  // ends the annotation
}

void PyTorchProfiler::on_train_batch_start(int64_t step) {
  if (done_) return;
  if (!prepared_ && step >= kWait) {
    kineto::prepareProfiler(config(), activities());
    prepared_ = true;
  }
  if (!recording_ && step >= kWait + kWarmup) {
    kineto::enableProfiler(config(), activities());
    recording_ = true;
  }
}

void PyTorchProfiler::on_train_batch_end(int64_t step) {
  if (recording_ && step >= kWait + kWarmup + kActive) finish_recording();
}

void PyTorchProfiler::finish_recording() {
  open_.clear();
  result_ = std::make_unique<Result>();
  result_->trace = kineto::disableProfiler();
  recording_ = false;
  done_ = true;
}

std::filesystem::path PyTorchProfiler::write(const std::filesystem::path& dir, int64_t rank) {
  if (recording_) finish_recording();  // the run ended inside the window
  if (!result_) return {};
  std::filesystem::create_directories(dir);
  const auto path = rank_file(dir, "profile", ".pt.trace.json", rank);
  result_->trace->save(path.string());
  result_.reset();
  if (rank == 0) {
    std::cout << fmt::format("fulgur: PyTorch profiler trace of steps {}-{} written to {} (open in ui.perfetto.dev)",
                             kWait + kWarmup, kWait + kWarmup + kActive - 1, path.string())
              << std::endl;
  }
  return path;
}

}  // namespace fulgur
