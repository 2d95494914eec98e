#pragma once

#include <fulgur/online/on_nonfinite.hpp>

#include <fulgur/online/sample_stream_options.hpp>
#include <fulgur/trainer/trainer_options.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>

namespace fulgur {

/// How an OnlineTrainer trains: the Trainer's options for the strategy,
/// precision, device and gradient clipping; the stream that background
/// mode reads; when it publishes weights for predict(); and the CPU threads
/// training may use.
struct OnlineOptions {
  /// Strategy, precision, accelerator, devices, gradient_clip_val,
  /// log_every_n_steps are used; the loops' options (epochs, validation) are not.
  TrainerOptions trainer;
  /// The buffer push() fills (background mode).
  SampleStreamOptions stream;
  /// predict() sees the weights of every n-th optimizer step (and step 0).
  int64_t publish_every_n_steps = 10;
  /// Compute threads of training (at::set_num_threads on the thread that
  /// trains: background mode's own thread, or the caller's in inline mode);
  /// nullopt leaves LibTorch's default. 1 leaves the other cores to the program.
  std::optional<int64_t> num_threads;
  /// Background mode stops after this many optimizer steps (-1: at stop()
  /// or the end of the stream).
  int64_t max_steps = -1;
  /// Where the trainer keeps `online_last.ckpt` (empty: nowhere). When set,
  /// SIGTERM or SIGUSR1 (SLURM) make it save there at the next step
  /// boundary and stop, and a trainer constructed with the same folder
  /// resumes from that file.
  std::filesystem::path checkpoint_dir;
  /// Checkpoints also hold the samples buffered in the stream (a replay
  /// buffer refills at once after a restart), and loading one pushes them back.
  bool checkpoint_buffer = false;
  /// A step whose loss or gradients are not finite is never taken; Stop
  /// ends training with an error, Skip skips and counts it (OnNonFinite).
  OnNonFinite on_nonfinite = OnNonFinite::Stop;
};

}  // namespace fulgur
