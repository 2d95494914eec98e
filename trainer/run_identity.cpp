#include <fulgur/trainer/run_identity.hpp>

#include <fmt/format.h>

#include <regex>
#include <stdexcept>

namespace fulgur {
namespace {

int64_t count_of(const EnvLookup& env, const char* var) {
  const auto text = env(var);
  if (!text) return 0;
  static const std::regex digits("[0-9]{1,9}");
  if (!std::regex_match(*text, digits)) {
    throw std::invalid_argument(
        fmt::format("[restart_count] {}='{}' is not a restart count (a non-negative integer)", var, *text));
  }
  return std::stoll(*text);
}

// FNV-1a: the same on every build and machine, unlike std::hash.
uint64_t fnv1a(const std::string& text) {
  uint64_t hash = 14695981039346656037ull;
  for (const unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

}  // namespace

int64_t restart_count(const EnvLookup& env) {
  if (!env) throw std::invalid_argument("[restart_count] the environment lookup is empty");
  return count_of(env, "SLURM_RESTART_COUNT") + count_of(env, "TORCHELASTIC_RESTART_COUNT");
}

std::string run_identity(const YAML::Node& hparams, const std::string& module_type, const EnvLookup& env) {
  if (!env) throw std::invalid_argument("[run_identity] the environment lookup is empty");
  std::string job = "none";
  if (auto id = env("SLURM_JOB_ID"); id && !id->empty()) {
    job = *id;
  } else if (auto run = env("TORCHELASTIC_RUN_ID"); run && !run->empty()) {
    job = *run;
  }
  YAML::Node config = YAML::Clone(hparams);
  if (config.IsMap()) config.remove("seed_everything");
  YAML::Emitter out;
  out << config;
  return fmt::format("job={} module={} hparams={:016x}", job, module_type, fnv1a(out.c_str()));
}

}  // namespace fulgur
