#pragma once

#include <fulgur/core/options.hpp>
#include <fulgur/trainer/callback.hpp>

#include <filesystem>
#include <string>

namespace fulgur {

/// Options of OnExceptionCheckpoint, with Lightning's names and defaults.
#define FULGUR_ON_EXCEPTION_CHECKPOINT_OPTIONS(X)                                                     \
  X(std::string, dirpath, "", "folder of the file; empty: <run folder>/checkpoints", fulgur::check::Any{}) \
  X(std::string, filename, "on_exception", "file name without .ckpt", fulgur::check::NotEmpty{})

struct OnExceptionCheckpointOptions {
  FULGUR_OPTIONS(OnExceptionCheckpointOptions, FULGUR_ON_EXCEPTION_CHECKPOINT_OPTIONS)
};

/// When fit fails with an exception, writes a resumable checkpoint of the
/// state training reached to `<dirpath>/<filename>.ckpt` (Lightning's
/// OnExceptionCheckpoint); `fit(model, data, path)` continues from it. Rank 0
/// writes without waiting for the other ranks. A fit that ends normally
/// removes the file, which would otherwise be stale.
class OnExceptionCheckpoint : public Callback {
 public:
  using Options = OnExceptionCheckpointOptions;
  explicit OnExceptionCheckpoint(OnExceptionCheckpointOptions options = {});

  std::string state_key() const override { return "OnExceptionCheckpoint"; }
  void setup(Trainer& trainer, LightningModule& module) override;
  void on_exception(Trainer& trainer, LightningModule& module, const std::exception_ptr& error) override;
  void teardown(Trainer& trainer, LightningModule& module) override;

  /// `<dirpath>/<filename>.ckpt` (the folder is resolved at setup when not given).
  std::filesystem::path ckpt_path() const { return dirpath_ / (options_.filename() + ".ckpt"); }

 private:
  OnExceptionCheckpointOptions options_;
  std::filesystem::path dirpath_;
  bool saved_ = false;
};

}  // namespace fulgur
