#include <fulgur/datamodules/loading/default_num_workers.hpp>

#include <cstdlib>
#include <regex>
#include <stdexcept>

namespace fulgur {

int64_t default_num_workers(int64_t fallback, const std::optional<std::string>& slurm_cpus_per_task) {
  if (!slurm_cpus_per_task) return fallback;
  static const std::regex count("[1-9][0-9]{0,5}");
  if (!std::regex_match(*slurm_cpus_per_task, count)) {
    throw std::invalid_argument("[default_num_workers] SLURM_CPUS_PER_TASK='" + *slurm_cpus_per_task +
                                "' is not a CPU count >= 1");
  }
  return std::stoll(*slurm_cpus_per_task);
}

int64_t default_num_workers(int64_t fallback) {
  const char* value = std::getenv("SLURM_CPUS_PER_TASK");
  return default_num_workers(fallback, value ? std::optional<std::string>(value) : std::nullopt);
}

}  // namespace fulgur
