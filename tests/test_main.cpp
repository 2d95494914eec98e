#define DOCTEST_CONFIG_IMPLEMENT
// The tests raise SIGTERM and SIGINT in this process to check how fulgur
// handles them, and fulgur calls a handler the program installed (as
// Lightning does): doctest's own crash handler would end the test there. A
// crash still fails its ctest entry, which names the component.
#define DOCTEST_CONFIG_NO_POSIX_SIGNALS
#include <doctest/doctest.h>

#include "support/test_support.hpp"

#include <cstdio>
#include <cstdlib>
#include <iostream>

int main(int argc, char** argv) {
  // Idle OpenMP threads sleep in this process and, unless a test removes
  // the variable, in the processes the tests start (the suite shares 2 cores).
  ::setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
  doctest::Context context(argc, argv);
  const int code = context.run();
  // The end without static destructors: LibTorch's deregister its operators
  // one by one, about 0.2 s of CPU in each of the suite's runner processes
  // (its probes end so too: fulgur_multi_call_program's SKIP_TEARDOWN).
  fulgur::testing::remove_temp_dirs_of_this_process();
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::_Exit(code);
}
