#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdlib>

int main(int argc, char** argv) {
  // A Trainer restarts a program that has no OMP_WAIT_POLICY (see
  // trainer/openmp_wait_policy.hpp); the tests build Trainers in this
  // process, which must not be replaced. The processes the tests start
  // inherit the setting.
  ::setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
  doctest::Context context(argc, argv);
  return context.run();
}
