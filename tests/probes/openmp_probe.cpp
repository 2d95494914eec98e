// A user's own main() as the openmp_wait_policy tests need it:
//
//   openmp_probe POLICY [--devices N] [--append FILE] [ARG...]
//
// POLICY is default (the option left alone), launched, passive or
// environment. With --append the program first appends "pid <pid>" to FILE
// (a side effect of main() before the Trainer exists). It builds a
// Trainer and prints what that left this process: the policy, the pid
// (unchanged by a restart), the other arguments (passed through), whether
// it was restarted, and the CPU time used while the program slept between
// parallel regions (spinning OpenMP threads show there; passive ones do
// not). With --devices N it then fits a tiny model on N ranks (ddp), and
// every rank prints its line, prefixed "rank R: ".
#include "../support/tiny_modules.hpp"

#include <fulgur/trainer/trainer.hpp>

#include <sys/auxv.h>
#include <sys/resource.h>
#include <torch/torch.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

// One of the programs in a multi-call binary (started through bin/openmp_probe).
namespace openmp_probe {

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
  if (argc < 2) {
    std::cerr << "usage: openmp_probe default|launched|passive|environment [--devices N] [--append FILE] [ARG...]\n";
    return 2;
  }
  const std::string policy = argv[1];
  int64_t devices = 0;
  std::string append;
  std::vector<std::string> rest;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--devices" && i + 1 < argc) {
      devices = std::stoll(argv[++i]);
    } else if (arg == "--append" && i + 1 < argc) {
      append = argv[++i];
    } else {
      rest.push_back(arg);
    }
  }
  if (!append.empty()) std::ofstream(append, std::ios::app) << "pid " << ::getpid() << "\n";

  // Nothing is written (no logger, no checkpoints); the root is a formality.
  fulgur::TrainerOptions options = fulgur::testing::quiet_options(std::filesystem::temp_directory_path().string());
  options.logger(false).enable_checkpointing(false).max_epochs(1).devices(std::max<int64_t>(devices, 1));
  if (devices > 1) options.strategy(fulgur::StrategyKind::DDP);
  if (policy != "default") options.openmp_wait_policy(fulgur::parse_choice<fulgur::OpenMPWaitPolicy>(policy));
  fulgur::Trainer trainer(options);
  const char* value = std::getenv("OMP_WAIT_POLICY");
  const std::string prefix = devices > 0 ? "rank " + std::to_string(trainer.global_rank()) + ": " : "";
  std::cout << prefix << "OMP_WAIT_POLICY=" << (value != nullptr ? value : "(unset)") << " pid=" << ::getpid()
            << " args:";
  for (const auto& arg : rest) std::cout << " [" << arg << "]";
  // A restart executes /proc/self/exe; the first start, the path it was given.
  const auto* executed = reinterpret_cast<const char*>(::getauxval(AT_EXECFN));
  std::cout << "\n" << prefix << "restarted=" << (std::strcmp(executed, "/proc/self/exe") == 0)
            << " idle_cpu_ms=" << idle_cpu_ms() << std::endl;
  if (devices > 0) {
    fulgur::testing::RecordingModule model;
    fulgur::testing::RegressionData data(4, 0);
    trainer.fit(model, data);
  }
  return trainer.exit_code();
}

}  // namespace openmp_probe
