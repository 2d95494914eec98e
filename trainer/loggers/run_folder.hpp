#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <filesystem>
#include <string>

namespace fulgur {

/// The folder `<root_dir>/<name>/version_<version>/` the loggers of one run
/// share; the version is decided once for all of them (LoggerRegistry).
struct RunFolder {
  std::filesystem::path root_dir;
  std::string name = "fulgur_logs";
  int64_t version = 0;
};

/// One past the highest `version_<N>` folder in `dir` (0 if there is none):
/// the version a new run of a logger writing into `dir` takes.
int64_t next_version(const std::filesystem::path& dir);

/// Writes `hparams` (null: an empty mapping) to `<dir>/hparams.yaml`,
/// creating `dir`. Throws std::runtime_error naming the file on failure;
/// `who` ("CSVLogger") starts the message.
void write_hparams_yaml(const std::filesystem::path& dir, const YAML::Node& hparams, const char* who);

}  // namespace fulgur
