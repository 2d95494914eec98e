#include <fulgur/callbacks/on_exception_checkpoint.hpp>

#include <fulgur/trainer/trainer.hpp>

#include <iostream>

namespace fulgur {

OnExceptionCheckpoint::OnExceptionCheckpoint(OnExceptionCheckpointOptions options) : options_(std::move(options)) {
  options_.validate();
  if (!options_.dirpath().empty()) dirpath_ = options_.dirpath();
}

void OnExceptionCheckpoint::setup(Trainer& trainer, LightningModule&) {
  if (options_.dirpath().empty()) dirpath_ = trainer.log_dir() / "checkpoints";
  saved_ = false;
}

void OnExceptionCheckpoint::on_exception(Trainer& trainer, LightningModule&, const std::exception_ptr&) {
  // Only a failing fit has training state to resume; the sanity check counts.
  if (trainer.state().stage() != Stage::Fit) return;  // the sanity check included
  if (dirpath_.empty()) return;  // failed before setup: no run folder yet
  trainer.save_checkpoint(ckpt_path());
  saved_ = true;
  if (trainer.is_global_zero()) {
    std::cerr << "fulgur: training failed at step " << trainer.state().global_step() << "; checkpoint saved to "
              << ckpt_path().string() << std::endl;
  }
}

void OnExceptionCheckpoint::teardown(Trainer& trainer, LightningModule&) {
  if (saved_ || !trainer.is_global_zero() || dirpath_.empty()) return;
  std::error_code ec;
  std::filesystem::remove(ckpt_path(), ec);
}

}  // namespace fulgur
