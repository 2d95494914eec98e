#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace fulgur {

/// The folder `<root_dir>/<name>/version_<version>/` the loggers of one run
/// share. An unset version is claimed when the run starts (the Trainer
/// claims one for all its loggers that share `<root_dir>/<name>`).
struct RunFolder {
  std::filesystem::path root_dir;
  std::string name = "fulgur_logs";
  std::optional<int64_t> version;

  /// The run folder; claims the version first when it is still open.
  std::filesystem::path path();
  /// `<root_dir>/<name>` while the version is open, else nullopt (what a
  /// logger's open_versions_dir returns).
  std::optional<std::filesystem::path> open_versions_dir() const;
};

/// One past the highest `version_<N>` folder in `dir` (0 if there is none).
int64_t next_version(const std::filesystem::path& dir);

/// Creates `dir/version_<N>` for the lowest N from next_version(dir) on
/// whose folder did not exist, and returns N. Creating is the claim (a
/// mkdir that fails when the folder exists), so runs started together in
/// one root never share a version. Throws std::runtime_error naming `dir`.
int64_t claim_version(const std::filesystem::path& dir);

/// Writes `hparams` (null: an empty mapping) to `<dir>/hparams.yaml`,
/// creating `dir`; its first line is the comment `# fulgur <kVersion>`. Throws std::runtime_error naming the file on failure;
/// `who` ("CSVLogger") starts the message.
void write_hparams_yaml(const std::filesystem::path& dir, const YAML::Node& hparams, const char* who);

}  // namespace fulgur
