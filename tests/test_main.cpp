#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdlib>

int main(int argc, char** argv) {
  // Idle OpenMP threads sleep in this process and, unless a test removes
  // the variable, in the processes the tests start (the suite shares 2 cores).
  ::setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
  doctest::Context context(argc, argv);
  return context.run();
}
