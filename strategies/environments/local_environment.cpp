#include <fulgur/strategies/environments/local_environment.hpp>

namespace fulgur {

LocalEnvironment::LocalEnvironment(const EnvLookup& env) {
  const std::string where = "[LocalEnvironment::LocalEnvironment]";
  require_lookup(env, where);
  // 0 is allowed here (unlike under a launcher): it is the "pick a free port" value.
  if (auto port = env("MASTER_PORT")) main_port_ = parse_port(where, "MASTER_PORT", *port, /*allow_zero=*/true);
}

std::string LocalEnvironment::world_size_source() const {
  return "a single local process (no torchrun, SLURM or MPI variables found)";
}

}  // namespace fulgur
