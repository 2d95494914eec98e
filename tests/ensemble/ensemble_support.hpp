// What the ensemble's test files share: the C solver they start, the online
// trainer's YAML they serve with, and fulgur_serve started in the background.
#pragma once
#include "support/test_support.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <string>

namespace ensemble_support {

inline const std::string kProbe = std::string(FULGUR_BINARY_DIR) + "/bin/ensemble_client_probe";
inline const std::string kServe = std::string(FULGUR_BINARY_DIR) + "/bin/fulgur_serve";

/// fulgur_serve's file in `dir` for y = sin(3 x0) x1 on a replay reservoir: stops after `expected_clients`
/// goodbyes and `min_steps` steps; `online` adds keys to the online: section, `ensemble` to the ensemble: one.
inline std::filesystem::path serve_config(const std::filesystem::path& dir, int64_t expected_clients,
                                          int64_t min_steps, const std::string& online = "",
                                          const std::string& ensemble = "") {
  const auto path = dir / "ensemble.yaml";
  std::ofstream(path) << fmt::format(
      "model: {{type: mlp, layers: [2, 32, 32, 1], activation: tanh}}\n"
      "optimizer: {{type: adam, lr: 0.01}}\n"
      "online: {{publish_every_n_steps: 10, num_threads: 1{3}}}\n"
      "stream: {{capacity: 4096, when_full: replay, batch_size: 32, seed: 3, min_samples: 64}}\n"
      "trainer: {{accelerator: cpu, logger: false, enable_checkpointing: false}}\n"
      "ensemble: {{run_dir: {0}/run, expected_clients: {1}, min_steps: {2}, host: 127.0.0.1, drain_s: 1{4}}}\n",
      dir.string(), expected_clients, min_steps, online, ensemble);
  return path;
}

/// Runs `command` in the background under a wall-clock bound; its result later.
inline std::future<fulgur::testing::CommandResult> start(const std::string& command, int timeout_s = 120) {
  return std::async(std::launch::async,
                    [command, timeout_s] { return fulgur::testing::run_command(command, timeout_s); });
}

}  // namespace ensemble_support
