#pragma once

#include <fulgur/strategies/environments/cluster_environment.hpp>

#include <memory>

namespace fulgur {

/// The environment this process runs in, tried in this order: torchrun
/// (RANK and WORLD_SIZE set), SLURM (srun step, see SlurmEnvironment::detect),
/// MPI (an mpirun rank variable set), else local. torchrun comes first so
/// that torchrun started inside a SLURM allocation or under mpirun is read
/// from its own, per-process variables. The chosen environment validates
/// its variables, so a detected but broken launch throws instead of falling
/// through to a quieter guess.
std::unique_ptr<ClusterEnvironment> detect_cluster_environment(const EnvLookup& env = process_environment());

}  // namespace fulgur
