#include <fulgur/trainer/auto_resume.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <regex>
#include <stdexcept>

namespace fulgur {
namespace {

int64_t restart_count(const EnvLookup& env, const char* var) {
  const auto text = env(var);
  if (!text) return 0;
  static const std::regex digits("[0-9]{1,9}");
  if (!std::regex_match(*text, digits)) {
    throw std::invalid_argument(
        fmt::format("[auto_resume_checkpoint] {}='{}' is not a restart count (a non-negative integer)", var, *text));
  }
  return std::stoll(*text);
}

}  // namespace

std::optional<std::filesystem::path> auto_resume_checkpoint(const std::optional<std::string>& ckpt_path,
                                                            const std::filesystem::path& logs_root,
                                                            const EnvLookup& env) {
  if (!env) throw std::invalid_argument("[auto_resume_checkpoint] the environment lookup is empty");
  // Read both counts first so a malformed one is reported even when ckpt_path is given.
  const int64_t restarts = restart_count(env, "SLURM_RESTART_COUNT") + restart_count(env, "TORCHELASTIC_RESTART_COUNT");
  if (ckpt_path || restarts == 0) return std::nullopt;

  std::error_code error;
  if (!std::filesystem::is_directory(logs_root, error)) return std::nullopt;
  static const std::regex version("version_([0-9]{1,18})");
  std::optional<std::filesystem::path> newest;
  int64_t newest_version = -1;
  for (const auto& entry : std::filesystem::directory_iterator(logs_root, error)) {
    std::smatch match;
    const std::string name = entry.path().filename().string();
    if (!std::regex_match(name, match, version)) continue;
    const int64_t number = std::stoll(match[1].str());
    const auto candidate = entry.path() / "checkpoints" / "last.ckpt";
    if (number > newest_version && std::filesystem::is_regular_file(candidate, error)) {
      newest = candidate;
      newest_version = number;
    }
  }
  if (newest) return newest;
  // No logger: ModelCheckpoint writes into default_root_dir/checkpoints.
  const auto unversioned = logs_root / "checkpoints" / "last.ckpt";
  if (std::filesystem::is_regular_file(unversioned, error)) return unversioned;
  return std::nullopt;
}

}  // namespace fulgur
