#include <fulgur/trainer/openmp_wait_policy.hpp>

#include <fulgur/strategies/launchers/process_supervisor.hpp>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

namespace fulgur {

void use_passive_openmp_wait() {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  std::vector<std::string> command = ProcessSupervisor::own_command_line();
  if (::setenv("OMP_WAIT_POLICY", "PASSIVE", 1) != 0) return;
  std::vector<char*> args;
  for (auto& arg : command) args.push_back(arg.data());
  args.push_back(nullptr);
  // What the program printed so far is written once, not lost in the restart.
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  ::execv("/proc/self/exe", args.data());
  // Still here: the restart failed. Run on with the runtime's default policy.
  std::cerr << "fulgur: warning: could not restart with OMP_WAIT_POLICY=PASSIVE; OpenMP threads will spin-wait"
            << std::endl;
}

}  // namespace fulgur
