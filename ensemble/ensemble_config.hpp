#pragma once
#include <fulgur/ensemble/ensemble_options.hpp>
#include <fulgur/online/online_config.hpp>

#include <filesystem>

namespace fulgur {

/// An ensemble's training job described by one YAML file (fulgur_serve's):
/// an online trainer's sections (OnlineConfig: model, loss, optimizer,
/// lr_scheduler, seed, online, stream, trainer) plus `ensemble:`
/// (EnsembleOptions: run_dir, expected_clients, min_steps, host, port,
/// max_message_bytes, time_limit_s, drain_s). A bad key or value is one
/// std::invalid_argument naming the file and the dotted key.
struct EnsembleConfig {
  OnlineConfig online;
  EnsembleOptions ensemble;

  static EnsembleConfig from_yaml_file(const std::filesystem::path& path);
};

}  // namespace fulgur
