// Builds a Trainer (openmp_wait_policy: the first argument when it is
// "environment", else the default) and prints what that left this process:
// the policy, the pid (unchanged by a restart), the arguments (passed
// through), whether it was restarted, and the CPU time used while the
// program slept between parallel regions (spinning OpenMP threads show
// there; passive ones do not).
#include <fulgur/trainer/trainer.hpp>

#include <sys/auxv.h>
#include <sys/resource.h>
#include <torch/torch.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <thread>

namespace {

double cpu_ms() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e3 +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e3;
}

/// CPU milliseconds used during 20 sleeps of 20 ms, each after an addition
/// that LibTorch splits over an OpenMP team of two threads.
double idle_cpu_ms() {
  torch::set_num_threads(2);
  torch::Tensor t = torch::zeros({1 << 20});
  double slept_cpu = 0;
  for (int i = 0; i < 20; ++i) {
    t.add_(1);
    const double before = cpu_ms();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    slept_cpu += cpu_ms() - before;
  }
  return slept_cpu;
}

}  // namespace

int main(int argc, char** argv) {
  fulgur::TrainerOptions options;
  options.logger(false).enable_checkpointing(false).enable_progress_bar(false);
  if (argc > 1 && std::strcmp(argv[1], "environment") == 0) options.openmp_wait_policy("environment");
  fulgur::Trainer trainer(options);
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  std::cout << "OMP_WAIT_POLICY=" << (policy != nullptr ? policy : "(unset)") << " pid=" << ::getpid() << " args:";
  for (int i = 1; i < argc; ++i) std::cout << " [" << argv[i] << "]";
  // A restart executes /proc/self/exe; the first start, the path it was given.
  const auto* executed = reinterpret_cast<const char*>(::getauxval(AT_EXECFN));
  std::cout << "\nrestarted=" << (std::strcmp(executed, "/proc/self/exe") == 0) << " idle_cpu_ms=" << idle_cpu_ms()
            << std::endl;
}
