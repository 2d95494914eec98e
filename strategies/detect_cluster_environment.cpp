#include <fulgur/strategies/detect_cluster_environment.hpp>

#include <fulgur/strategies/local_environment.hpp>
#include <fulgur/strategies/mpi_environment.hpp>
#include <fulgur/strategies/slurm_environment.hpp>
#include <fulgur/strategies/torchrun_environment.hpp>

#include <stdexcept>

namespace fulgur {

std::unique_ptr<ClusterEnvironment> detect_cluster_environment(const EnvLookup& env) {
  if (!env) throw std::invalid_argument("[detect_cluster_environment] the environment lookup is empty");
  if (TorchrunEnvironment::detect(env)) return std::make_unique<TorchrunEnvironment>(env);
  if (SlurmEnvironment::detect(env)) return std::make_unique<SlurmEnvironment>(env);
  if (MPIEnvironment::detect(env)) return std::make_unique<MPIEnvironment>(env);
  return std::make_unique<LocalEnvironment>(env);
}

}  // namespace fulgur
