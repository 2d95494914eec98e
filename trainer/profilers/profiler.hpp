#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <type_traits>
#include <utility>

namespace fulgur {

/// Times named actions of a run (Lightning's Profiler): every hook, the
/// training step, backward, the optimizer step, fetching data. The Trainer
/// makes one from its `profiler` option and writes its report after every
/// stage, one file per rank in the run folder.
class Profiler {
 public:
  virtual ~Profiler() = default;
  virtual void start(const std::string& action) = 0;
  virtual void stop(const std::string& action) = 0;
  /// A training batch begins / ends; `step` is the optimizer steps taken
  /// before it (a profiler that records a window of steps opens it here).
  virtual void on_train_batch_start(int64_t /*step*/) {}
  virtual void on_train_batch_end(int64_t /*step*/) {}
  /// Writes what was recorded so far under `dir` (rank 0 also prints a
  /// summary) and returns the file written, or "" when there is nothing.
  virtual std::filesystem::path write(const std::filesystem::path& dir, int64_t rank) = 0;

  /// `<dir>/<stem><ext>` for rank 0, `<dir>/<stem>-rank<r><ext>` for the others.
  static std::filesystem::path rank_file(const std::filesystem::path& dir, const std::string& stem,
                                         const std::string& ext, int64_t rank) {
    return dir / (rank == 0 ? stem + ext : stem + "-rank" + std::to_string(rank) + ext);
  }
};

/// Times one action when a profiler is set; the name is built only then.
class ProfileScope {
 public:
  template <class Name>
  ProfileScope(Profiler* profiler, Name&& name) : profiler_(profiler) {
    if (profiler_ == nullptr) return;
    if constexpr (std::is_invocable_v<Name>) {
      action_ = name();
    } else {
      action_ = std::forward<Name>(name);
    }
    profiler_->start(action_);
  }
  ~ProfileScope() {
    if (profiler_ != nullptr) profiler_->stop(action_);
  }
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

 private:
  Profiler* profiler_;
  std::string action_;
};

}  // namespace fulgur
