#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdlib>

int main(int argc, char** argv) {
  // A Trainer with openmp_wait_policy passive restarts a program that has
  // no OMP_WAIT_POLICY (trainer/openmp_wait_policy.hpp); this process, which
  // builds Trainers, must never be replaced. The processes the tests start
  // inherit the setting unless a test removes it.
  ::setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
  doctest::Context context(argc, argv);
  return context.run();
}
