// Allreduce bandwidth of fulgur's ring against Gloo's allreduce on the same
// process group, between local ranks started by fulgur's launcher:
//
//   allreduce_bench --algo ring|gloo|p2p|exchange|reduce_scatter --size_mb S --iters K --world_size N
//                   [--segment_mb M] [--in_flight F] [--backend gloo|mpi]
//   mpirun -np N allreduce_bench --algo mpi|ring|reduce_scatter --backend mpi ...
//
// `mpi` is MPI's allreduce (process_group_backend mpi, ranks from mpirun);
// --backend mpi runs the ring, the reduce-scatter and the point-to-point
// cases over MPI too. `reduce_scatter` is the group's reduce-scatter of S MB
// (busbw = bytes * (n-1)/n / time).
//
// Rank 0 prints `allreduce_bench: <algo> <N> ranks <S> MB busbw <x> GB/s`,
// where busbw = algbw * 2(n-1)/n (algbw = bytes / time per allreduce): the
// rate each rank's link carries, comparable across world sizes. `p2p` is
// one link's speed: rank 0 sends S MB to rank 1 and back (busbw = bytes
// one way / time one way). `exchange` is the 2-rank ring's bound on this
// machine: ranks 0 and 1 send each other S MB at the same time, in
// --segment_mb messages whose receives are all announced first, so the
// ring's data movement without its reduction or step dependencies (busbw =
// S / time: a 2-rank ring moves S bytes each way per allreduce).
#include <fulgur/core/ignored_signal.hpp>
#include <fulgur/strategies/environments/detect_cluster_environment.hpp>
#include <fulgur/strategies/launchers/local_launcher.hpp>
#include <fulgur/strategies/collectives/process_group.hpp>
#include <fulgur/strategies/collectives/ring_allreduce.hpp>

#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>
#include <vector>

// One of the programs in a multi-call binary (started through bin/allreduce_bench).
namespace allreduce_bench {

namespace {

using Clock = std::chrono::steady_clock;

std::map<std::string, std::string> parse(int argc, char** argv) {
  std::map<std::string, std::string> args{{"algo", "ring"}, {"size_mb", "64"}, {"iters", "10"}, {"world_size", "2"},
                                            {"segment_mb", "1"}, {"in_flight", "4"}, {"backend", "gloo"}};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    if (key.rfind("--", 0) != 0 || !args.count(key.substr(2))) throw std::invalid_argument("unknown option " + key);
    args[key.substr(2)] = argv[i + 1];
  }
  return args;
}

double run_rank(const std::string& algo, double size_mb, int iters, double segment_mb, int64_t in_flight,
                const std::string& backend) {
  const auto env = fulgur::detect_cluster_environment();
  auto options = fulgur::process_group_options(*env, 300.0);
  if (backend == "mpi" || algo == "mpi") options.backend = fulgur::ProcessGroupBackend::Mpi;
  const fulgur::IgnoredSignal sigpipe(SIGPIPE);  // a group used outside a run (ProcessGroup)
  fulgur::ProcessGroup group(options);
  const int64_t n = group.size();
  torch::set_num_threads(1);
  torch::Tensor buffer = torch::ones({static_cast<int64_t>(size_mb * (1 << 20) / 4)});
  torch::Tensor incoming = algo == "exchange" ? torch::ones_like(buffer) : torch::Tensor();
  torch::Tensor slice = algo == "reduce_scatter" ? torch::empty({buffer.numel() / n}) : torch::Tensor();
  torch::Tensor whole = algo == "reduce_scatter" ? buffer.narrow(0, 0, slice.numel() * n) : torch::Tensor();
  fulgur::RingAllreduce ring(
      group, {.segment_bytes = static_cast<int64_t>(segment_mb * (1 << 20)), .segments_in_flight = in_flight});
  auto once = [&] {
    if (algo == "ring") {
      ring.run(buffer, fulgur::ReduceOp::Sum);
    } else if (algo == "gloo" || algo == "mpi") {
      group.all_reduce(buffer, fulgur::ReduceOp::Sum);
    } else if (algo == "reduce_scatter") {
      group.wait(group.reduce_scatter_async(slice, whole), "reduce_scatter");
    } else if (algo == "p2p") {
      if (group.rank() == 0) {
        group.wait(group.send_async(buffer, 1, 0), "send");
        group.wait(group.recv_async(buffer, 1, 1), "recv");
      } else if (group.rank() == 1) {
        group.wait(group.recv_async(buffer, 0, 0), "recv");
        group.wait(group.send_async(buffer, 0, 1), "send");
      }
    } else if (algo == "exchange") {
      if (group.rank() < 2) {
        const int64_t peer = 1 - group.rank();
        const int64_t segment = std::max<int64_t>(1, static_cast<int64_t>(segment_mb * (1 << 20)) / 4);
        // Receives announced first, as the ring does, so neither side waits.
        std::vector<c10::intrusive_ptr<c10d::Work>> recvs, sends;
        std::vector<torch::Tensor> pieces;
        for (int64_t at = 0, k = 0; at < buffer.numel(); at += segment, ++k) {
          pieces.push_back(incoming.narrow(0, at, std::min(segment, buffer.numel() - at)));
          recvs.push_back(group.recv_async(pieces.back(), peer, static_cast<int>(k)));
        }
        for (int64_t at = 0, k = 0; at < buffer.numel(); at += segment, ++k) {
          torch::Tensor piece = buffer.narrow(0, at, std::min(segment, buffer.numel() - at));
          sends.push_back(group.send_async(piece, peer, static_cast<int>(k)));
        }
        for (auto& w : recvs) group.wait(w, "recv");
        for (auto& w : sends) group.wait(w, "send");
      }
    } else {
      throw std::invalid_argument("--algo must be ring, gloo, mpi, p2p, exchange or reduce_scatter, got " + algo);
    }
  };
  once();  // warm-up: connections, allocations
  group.barrier();
  const auto start = Clock::now();
  for (int i = 0; i < iters; ++i) once();
  group.barrier();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count() / iters;
  const double bytes = static_cast<double>(buffer.nbytes());
  if (algo == "p2p") return bytes / (seconds / 2) / 1e9;
  if (algo == "exchange") return bytes / seconds / 1e9;
  if (algo == "reduce_scatter") return bytes / seconds * static_cast<double>(n - 1) / static_cast<double>(n) / 1e9;
  return bytes / seconds * 2.0 * static_cast<double>(n - 1) / static_cast<double>(n) / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const auto args = parse(argc, argv);
    const int64_t world_size = std::atoll(args.at("world_size").c_str());
    if (!fulgur::detect_cluster_environment()->creates_processes_externally()) {
      return fulgur::LocalLauncher(fulgur::LocalLauncherOptions(world_size)).launch(argc, argv);
    }
    const double busbw = run_rank(args.at("algo"), std::atof(args.at("size_mb").c_str()),
                                  std::atoi(args.at("iters").c_str()), std::atof(args.at("segment_mb").c_str()),
                                  std::atoll(args.at("in_flight").c_str()), args.at("backend"));
    if (fulgur::detect_cluster_environment()->global_rank() == 0) {
      const std::string over = args.at("backend") == "mpi" && args.at("algo") != "mpi" ? " over mpi" : "";
      std::cout << fmt::format("allreduce_bench: {}{} {} ranks {} MB busbw {:.3f} GB/s", args.at("algo"), over,
                               world_size, args.at("size_mb"), busbw)
                << std::endl;
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "allreduce_bench: " << e.what() << std::endl;
    return 1;
  }
}

}  // namespace allreduce_bench
