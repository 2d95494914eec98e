#include <fulgur/trainer/openmp_wait_policy.hpp>

#include <cstdlib>
#include <iostream>

namespace fulgur {

void warn_without_passive_openmp_wait() {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  std::cerr << "fulgur: warning: openmp_wait_policy passive: this program started without OMP_WAIT_POLICY, so its "
               "OpenMP threads spin-wait (the runtime reads it at start-up); start it with OMP_WAIT_POLICY=PASSIVE"
            << std::endl;
}

}  // namespace fulgur
