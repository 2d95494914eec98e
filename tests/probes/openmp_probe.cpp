// Prints what use_passive_openmp_wait left this process: the policy, the
// pid (unchanged by a restart) and the arguments (passed through).
#include <fulgur/trainer/cli/openmp_wait_policy.hpp>

#include <unistd.h>

#include <cstdlib>
#include <iostream>

int main(int argc, char** argv) {
  fulgur::cli::use_passive_openmp_wait(argc, argv);
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  std::cout << "OMP_WAIT_POLICY=" << (policy != nullptr ? policy : "(unset)") << " pid=" << ::getpid() << " args:";
  for (int i = 1; i < argc; ++i) std::cout << " [" << argv[i] << "]";
  std::cout << std::endl;
}
