#include <fulgur/trainer/cli/openmp_wait_policy.hpp>

#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <vector>

namespace fulgur::cli {

void use_passive_openmp_wait(int argc, const char* const* argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || argc < 1) return;
  if (::setenv("OMP_WAIT_POLICY", "PASSIVE", 1) != 0) return;
  std::vector<char*> args;
  args.reserve(static_cast<size_t>(argc) + 1);
  // execv wants char* const*; it does not modify the strings.
  for (int i = 0; i < argc; ++i) args.push_back(const_cast<char*>(argv[i]));
  args.push_back(nullptr);
  ::execv("/proc/self/exe", args.data());
  // Still here: the restart failed. Run on with the runtime's default policy.
  std::cerr << "fulgur: warning: could not restart with OMP_WAIT_POLICY=PASSIVE; OpenMP threads will spin-wait"
            << std::endl;
}

}  // namespace fulgur::cli
