#include <fulgur/strategies/environments/detect_cluster_environment.hpp>

#include <fulgur/strategies/environments/local_environment.hpp>
#include <fulgur/strategies/environments/mpi_environment.hpp>
#include <fulgur/strategies/environments/slurm_environment.hpp>
#include <fulgur/strategies/environments/torchrun_environment.hpp>

#include <stdexcept>

namespace fulgur {
namespace {

// mpirun inside an sbatch script: every rank inherits the batch step's
// SLURM_PROCID, so a differing MPI rank means MPI started the processes.
bool mpi_inside_slurm(const EnvLookup& env) {
  if (!MPIEnvironment::detect(env)) return false;
  const auto slurm_rank = env("SLURM_PROCID");
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "MV2_COMM_WORLD_RANK", "PMI_RANK"}) {
    const auto mpi_rank = env(var);
    if (mpi_rank) return !slurm_rank || *slurm_rank != *mpi_rank;
  }
  return false;
}

}  // namespace

std::unique_ptr<ClusterEnvironment> detect_cluster_environment(const EnvLookup& env) {
  if (!env) throw std::invalid_argument("[detect_cluster_environment] the environment lookup is empty");
  if (TorchrunEnvironment::detect(env)) return std::make_unique<TorchrunEnvironment>(env);
  if (SlurmEnvironment::detect(env) && !mpi_inside_slurm(env)) return std::make_unique<SlurmEnvironment>(env);
  if (MPIEnvironment::detect(env)) return std::make_unique<MPIEnvironment>(env);
  return std::make_unique<LocalEnvironment>(env);
}

}  // namespace fulgur
