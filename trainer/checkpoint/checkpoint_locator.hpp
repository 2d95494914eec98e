#pragma once

#include <fulgur/engine/checkpoint/checkpoint_io.hpp>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fulgur {

class Trainer;

/// Finds a Trainer's checkpoints: "last", "best", and the newest one of this
/// run for a restarted job. It searches the ModelCheckpoint folders and the
/// `checkpoints` folder of every version under the root; it reads files and
/// writes none (saving and restoring are CheckpointConnector's).
class CheckpointLocator {
 public:
  explicit CheckpointLocator(Trainer& trainer) : trainer_(trainer) {}

  /// "last": the newest loadable checkpoint among the run folders and
  /// ModelCheckpoint folders (a corrupt one is skipped with a warning);
  /// "best": the ModelCheckpoint's best model (its own after fit in this
  /// process, else the one its state in "last" records); anything
  /// else is a path. Throws CheckpointError when nothing is found.
  std::filesystem::path resolve(const std::string& ckpt_path) const;
  /// The newest loadable checkpoint in the places resolve() searches that
  /// `accept` takes (a corrupt one is skipped with a warning); the one
  /// finder behind "last", "best" and resuming a restarted job.
  std::optional<std::filesystem::path> find_newest(
      const std::function<bool(const Checkpoint&, const std::filesystem::path&)>& accept) const;
  /// A restarted job (a requeue, a torchrun restart): the newest checkpoint
  /// this run (`run_identity`) wrote, which fit resumes from; "" on a first
  /// start or when there is none. Rank 0 says which, or why it starts fresh.
  std::string auto_resume_path(const std::string& run_identity) const;

 private:
  std::vector<std::filesystem::path> search_dirs() const;
  Trainer& trainer_;
};

}  // namespace fulgur
