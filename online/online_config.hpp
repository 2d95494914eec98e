#pragma once

#include <fulgur/online/configured_model.hpp>
#include <fulgur/online/online_options.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace fulgur {

class OnlineTrainer;

/// An OnlineTrainer described by a YAML file, for programs that do not
/// write C++ (the C API, Fortran):
///
///   model: {type: cnn, layers: [1, 16, 1], activation: tanh, kernel_size: 3, residual: false}
///   loss: mse
///   optimizer: {type: adam, lr: 0.001, weight_decay: 0, momentum: 0}
///   lr_scheduler: {step_size: 500, gamma: 0.5}
///   seed: 0
///   online: {publish_every_n_steps: 10, num_threads: 1, max_steps: -1}
///   stream: {capacity: 1024, when_full: replay, batch_size: 32, steps_per_epoch: 100, seed: 0, min_samples: 0}
///   trainer: {accelerator: cpu, strategy: auto, precision: 32-true, devices: auto, gradient_clip_val: null}
///
/// `trainer:` takes every TrainerOptions key. A key that does not exist, a
/// value of the wrong type and a bad value are one std::invalid_argument
/// naming the file and the dotted key.
struct OnlineConfig {
  ModelSpec model;
  OnlineOptions options;
  /// Seeds torch before the model is built (reproducible first weights).
  uint64_t seed = 0;
  /// online.log_dir: where the C API's trainer writes what the model logs
  /// (a CSVLogger: <log_dir>/fulgur_logs/version_N/metrics.csv, written at
  /// every publish and at the end); empty: nowhere.
  std::filesystem::path log_dir;

  /// The trainer this file describes: torch seeded with `seed`, the model a
  /// C++ module registered by that name (OnlineModelRegistry), else a
  /// built-in or TorchScript one, a CSVLogger in log_dir. Under mpirun or
  /// srun with N ranks, `devices: auto` means those N ranks; `communicator`
  /// (a Fortran MPI handle) makes that communicator's ranks the run's.
  /// A multi-rank trainer joins its process group here.
  std::unique_ptr<OnlineTrainer> make_trainer(std::optional<int64_t> communicator = std::nullopt) const;

  static OnlineConfig from_yaml_file(const std::filesystem::path& path);
  /// `source` names the text in errors.
  static OnlineConfig from_yaml(const std::string& text, const std::string& source);
};

}  // namespace fulgur
