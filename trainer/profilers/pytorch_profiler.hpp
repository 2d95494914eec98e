#pragma once

#include <fulgur/trainer/profilers/profiler.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace at {
class RecordFunction;
}

namespace fulgur {

/// `profiler: pytorch` (Lightning's PyTorchProfiler): LibTorch's profiler
/// (Kineto, CPU activities, and CUDA kernels where CUDA runs) over a window
/// of training steps with Lightning's default schedule: skip step 0, warm up
/// on step 1, record steps 2-4. The Trainer's actions (hooks, the step,
/// backward) appear in the trace as user annotations around the operators.
/// Writes a Chrome trace, `<run>/profile.pt.trace.json`
/// (`profile-rank<r>.pt.trace.json` on the other ranks), that
/// chrome://tracing and ui.perfetto.dev open.
class PyTorchProfiler : public Profiler {
 public:
  static constexpr int64_t kWait = 1;
  static constexpr int64_t kWarmup = 1;
  static constexpr int64_t kActive = 3;

  PyTorchProfiler();
  ~PyTorchProfiler() override;

  void start(const std::string& action) override;
  void stop(const std::string& action) override;
  void on_train_batch_start(int64_t step) override;
  void on_train_batch_end(int64_t step) override;
  std::filesystem::path write(const std::filesystem::path& dir, int64_t rank) override;

 private:
  void finish_recording();

  bool prepared_ = false;
  bool recording_ = false;
  bool done_ = false;
  /// The trace of the window, once it closed; saved by write().
  struct Result;
  std::unique_ptr<Result> result_;
  std::map<std::string, std::vector<std::unique_ptr<at::RecordFunction>>> open_;
};

}  // namespace fulgur
