#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace fulgur {

/// Loader threads when a data config does not set num_workers: the CPUs
/// SLURM gave each task (SLURM_CPUS_PER_TASK, from `--cpus-per-task`) when
/// set, else `fallback`. Throws std::invalid_argument naming the variable
/// when it is set but not a count >= 1.
int64_t default_num_workers(int64_t fallback);
/// The same, with the variable's value passed in (nullopt: unset), for tests.
int64_t default_num_workers(int64_t fallback, const std::optional<std::string>& slurm_cpus_per_task);

}  // namespace fulgur
