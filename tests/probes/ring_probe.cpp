// One program for the ring allreduce tests. Run by hand it starts
// <world_size> local ranks through fulgur's LocalLauncher; as a rank it
// meets the others over a TCPStore and checks RingAllreduce against Gloo's
// allreduce:
//
//   ring_probe check <world_size>   sizes 0, 1, 7, 1000003; sum and mean;
//                                   integer-valued floats compared exactly,
//                                   random floats with allclose
//   ring_probe loop <world_size> <kill_rank>
//                                   rings on 8 MB forever; <kill_rank>
//                                   SIGKILLs itself after 0.5 s
//
// A rank prints "ring_probe rank R: ok, C checks" or the first mismatch and
// exits 1. FULGUR_RING_TIMEOUT_S bounds every wait (default 60).
#include <fulgur/core/ignored_signal.hpp>
#include <fulgur/strategies/environments/detect_cluster_environment.hpp>
#include <fulgur/strategies/launchers/local_launcher.hpp>
#include <fulgur/strategies/collectives/process_group.hpp>
#include <fulgur/strategies/collectives/ring_allreduce.hpp>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

// One of the programs in a multi-call binary (started through bin/ring_probe).
namespace ring_probe {

namespace {

int check(fulgur::ProcessGroup& group) {
  fulgur::RingAllreduce ring(group, fulgur::RingAllreduce::Options{.segment_bytes = 64 * 1024});
  int checks = 0;
  for (int64_t size : {0, 1, 7, 1000003}) {
    for (fulgur::ReduceOp op : {fulgur::ReduceOp::Sum, fulgur::ReduceOp::Mean}) {
      for (bool integer_valued : {true, false}) {
        // Different data on every rank, from a per-rank seed.
        auto gen = at::make_generator<at::CPUGeneratorImpl>(1000 + group.rank() * 7 + size);
        torch::Tensor input = integer_valued ? torch::randint(-1000, 1000, {size}, gen).to(torch::kFloat32)
                                             : torch::randn({size}, gen);
        torch::Tensor by_ring = input.clone();
        torch::Tensor by_gloo = input.clone();
        ring.run(by_ring, op);
        // Sums of small integers are exact in fp32 whatever the order, and
        // the ring divides the exact sum once: compare bit for bit with
        // Gloo's sum divided once (Gloo's own mean divides before summing).
        const bool exact = integer_valued;
        if (exact) {
          group.all_reduce(by_gloo, fulgur::ReduceOp::Sum);
          if (op == fulgur::ReduceOp::Mean) by_gloo.div_(static_cast<double>(group.size()));
        } else {
          group.all_reduce(by_gloo, op);
        }
        const bool same = exact ? torch::equal(by_ring, by_gloo) : torch::allclose(by_ring, by_gloo, 1e-5, 1e-5);
        if (!same) {
          std::cerr << "ring_probe rank " << group.rank() << ": mismatch for size " << size << " op "
                    << (op == fulgur::ReduceOp::Sum ? "sum" : "mean") << (exact ? " (exact)" : " (allclose)")
                    << ", max difference " << (by_ring - by_gloo).abs().max().item<double>() << std::endl;
          return 1;
        }
        ++checks;
      }
    }
  }
  // ProcessGroup::ring_all_reduce (DDP's small CPU buckets): the exact
  // mean of 1..n, counted as one all_reduce.
  torch::Tensor ranks = torch::full({1000}, static_cast<float>(group.rank() + 1));
  const int64_t before = group.counts().all_reduce;
  group.ring_all_reduce(ranks, fulgur::ReduceOp::Mean);
  const float mean = static_cast<float>(group.size() + 1) / 2.0f;
  if (!torch::equal(ranks, torch::full({1000}, mean)) || group.counts().all_reduce != before + 1) {
    std::cerr << "ring_probe rank " << group.rank() << ": ring_all_reduce gave " << ranks[0].item<float>()
              << " (want " << mean << ") and counted " << group.counts().all_reduce - before << " all_reduce(s)"
              << std::endl;
    return 1;
  }
  std::cout << "ring_probe rank " << group.rank() << ": ok, " << checks << " checks, ring_all_reduce ok" << std::endl;
  return 0;
}

int loop(fulgur::ProcessGroup& group, int64_t kill_rank) {
  if (group.rank() == kill_rank) {
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      std::raise(SIGKILL);
    }).detach();
  }
  fulgur::RingAllreduce ring(group);
  torch::Tensor buffer = torch::ones({2 * 1024 * 1024});
  for (int64_t i = 0;; ++i) {
    ring.run(buffer, fulgur::ReduceOp::Mean);
    if (i % 20 == 0) std::cout << "ring_probe rank " << group.rank() << ": iteration " << i << std::endl;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: ring_probe check|loop <world_size> [kill_rank]" << std::endl;
    return 2;
  }
  const std::string mode = argv[1];
  const int64_t world_size = std::atoll(argv[2]);
  try {
    if (!fulgur::detect_cluster_environment()->creates_processes_externally()) {
      return fulgur::LocalLauncher(fulgur::LocalLauncherOptions(world_size)).launch(argc, argv);
    }
    const char* timeout = std::getenv("FULGUR_RING_TIMEOUT_S");
    const auto env = fulgur::detect_cluster_environment();
    // No Trainer runs here: the program ignores SIGPIPE itself, so a write to
    // the killed rank's socket fails with EPIPE instead of ending this rank.
    const fulgur::IgnoredSignal sigpipe(SIGPIPE);
    fulgur::ProcessGroup group(fulgur::process_group_options(*env, timeout ? std::atof(timeout) : 60.0));
    if (mode == "check") return check(group);
    if (mode == "loop") return loop(group, argc > 3 ? std::atoll(argv[3]) : -1);
    std::cerr << "ring_probe: unknown mode '" << mode << "'" << std::endl;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "ring_probe rank " << (std::getenv("RANK") ? std::getenv("RANK") : "?") << ": " << e.what()
              << std::endl;
    return 1;
  }
}

}  // namespace ring_probe
