// The MPI backend's operations checked value by value, under a real mpirun:
//
//   mpirun -np N mpi_probe world|program|funneled|subset
//   mpirun -np N mpi_probe online OUTPUT
//
// world: fulgur begins MPI itself; every operation a strategy uses (all-
// reduce below and above the ring's threshold, in several types and
// reductions; broadcast; both all-gathers; reduce-scatter; send/receive
// around the ranks; groups split by name) against the value it must give.
// program: the same after the program began MPI (MPI_THREAD_SERIALIZED)
// and before it ends it. funneled: the program began MPI with
// MPI_THREAD_FUNNELED; fulgur must refuse with one line. subset: the
// program's communicator holds ranks 0 and 1 only: they train a group of
// two, the last rank gets MPI_COMM_NULL, is refused with one line, and
// goes on. Each rank prints "rank R: ok" or "rank R: <error>" and exits 0
// when all its checks hold. online: an OnlineTrainer trained inline by the
// ranks of the program's communicator (ranks 0 and 1, or rank 0 alone
// under -np 1; trainer.mpi_communicator, no rendezvous variable), 8 steps
// of a global stream split between them; rank 0 writes the final
// parameters to OUTPUT; a third rank keeps stepping its own loop meanwhile
// and prints "rank 2: own loop stepped 8 times". stress ROUNDS: rounds of
// every ring size class in flight at once, checked element by element
// (mpi_stress_test runs it oversubscribed beside a CPU hog). straggler
// SECONDS: the CPU rank 0 uses while it waits at a barrier for the last
// rank (bench/mpi_wait.sh).
#include <fulgur/online/online_trainer.hpp>
#include <fulgur/strategies/collectives/process_group.hpp>
#include <fulgur/strategies/environments/detect_cluster_environment.hpp>

#include <mpi.h>
#include <sys/resource.h>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <torch/torch.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

void expect(bool condition, const std::string& what) {
  if (!condition) throw std::runtime_error("check failed: " + what);
}

fulgur::ProcessGroupOptions mpi_options(std::optional<int64_t> communicator, int64_t rank, int64_t size) {
  fulgur::ProcessGroupOptions options;
  options.rank = rank;
  options.world_size = size;
  options.backend = fulgur::ProcessGroupBackend::Mpi;
  options.mpi_communicator = communicator;
  return options;
}

void check_operations(fulgur::ProcessGroup& group) {
  const int64_t r = group.rank(), n = group.size();
  const double total = static_cast<double>(n * (n + 1) / 2);
  // All-reduce: below and above the ring's 4 MiB, sizes that split unevenly.
  for (const int64_t numel : {int64_t{1}, int64_t{1000}, int64_t{(4 << 20) / 4 + 7}, int64_t{3'000'001}}) {
    for (const auto type : {torch::kFloat, torch::kDouble, torch::kLong, torch::kBFloat16}) {
      if (type == torch::kBFloat16 && numel > 1000) continue;  // a sum of n small integers is exact in bf16 too
      torch::Tensor t = torch::full({numel}, static_cast<double>(r + 1), torch::TensorOptions().dtype(type));
      group.all_reduce(t, fulgur::ReduceOp::Sum);
      expect(torch::all(t == total).item<bool>(), "all_reduce sum of " + std::to_string(numel) + " " +
                                                      std::string(c10::toString(type)));
    }
    torch::Tensor m = torch::arange(numel, torch::kFloat) * static_cast<double>(r + 1);
    group.all_reduce(m, fulgur::ReduceOp::Max);
    expect(torch::equal(m, torch::arange(numel, torch::kFloat) * static_cast<double>(n)),
           "all_reduce max of " + std::to_string(numel));
    torch::Tensor lo = torch::full({numel}, static_cast<double>(r + 5));
    group.all_reduce(lo, fulgur::ReduceOp::Min);
    expect(torch::all(lo == 5).item<bool>(), "all_reduce min of " + std::to_string(numel));
  }
  // Rings in flight at once, one after another (each takes scratch a finished
  // one left), with values that differ per element, so a segment landing in
  // another's place shows.
  for (int round = 0; round < 2; ++round) {
    std::vector<torch::Tensor> tensors;
    std::vector<c10::intrusive_ptr<c10d::Work>> works;
    for (const int64_t numel : {int64_t{(6 << 20) / 4 + 3}, int64_t{(5 << 20) / 4}}) {
      tensors.push_back(torch::arange(numel, torch::kFloat).remainder(1000) + static_cast<double>(r));
      works.push_back(group.all_reduce_async(tensors.back(), fulgur::ReduceOp::Sum));
    }
    for (size_t i = 0; i < tensors.size(); ++i) {
      group.wait(works[i], "all_reduce");
      const torch::Tensor expected =
          torch::arange(tensors[i].numel(), torch::kFloat).remainder(1000) * static_cast<double>(n) +
          static_cast<double>(n * (n - 1) / 2);
      expect(torch::equal(tensors[i], expected), "concurrent all_reduce " + std::to_string(i));
    }
  }
  // Broadcast from the last rank, also of a non-contiguous view.
  torch::Tensor b = torch::full({5, 3}, static_cast<double>(r));
  group.broadcast(b, n - 1);
  expect(torch::all(b == static_cast<double>(n - 1)).item<bool>(), "broadcast");
  torch::Tensor wide = torch::full({4, 6}, static_cast<double>(r));
  torch::Tensor column = wide.narrow(1, 2, 1);
  group.broadcast(column, 0);
  expect(torch::all(wide.narrow(1, 2, 1) == 0).item<bool>() &&
             torch::all(wide.narrow(1, 0, 2) == static_cast<double>(r)).item<bool>(),
         "broadcast of a strided view");
  // All-gathers.
  const auto gathered = group.all_gather(torch::full({2, 2}, static_cast<double>(r)));
  for (int64_t k = 0; k < n; ++k) {
    expect(torch::all(gathered[static_cast<size_t>(k)] == static_cast<double>(k)).item<bool>(), "all_gather");
  }
  torch::Tensor input = torch::full({3}, static_cast<double>(r));
  torch::Tensor flat = torch::empty({3 * n});
  group.wait(group.all_gather_into_async(flat, input), "all_gather_into");
  expect(torch::equal(flat, torch::arange(n, torch::kFloat).repeat_interleave(3)), "all_gather_into");
  // Reduce-scatter: rank k receives the sum of every rank's k-th slice;
  // below and above the ring's 4 MiB (a slice not a whole number of
  // segments), two rings in flight at once; the input stays as it was.
  for (const int64_t slice : {int64_t{4}, int64_t{(3 << 20) / 4 + 5}, int64_t{(1 << 20) / 4 * 3}}) {
    for (const auto type : {torch::kFloat, torch::kDouble}) {
      const torch::Tensor pattern = torch::arange(slice * n, torch::kFloat).remainder(999);
      // Rank q's input in the call `copy`: the pattern plus q + copy.
      auto input_of = [&](int64_t q, int copy) { return (pattern + static_cast<double>(q + copy)).to(type); };
      std::vector<torch::Tensor> wholes, mines;
      std::vector<c10::intrusive_ptr<c10d::Work>> works;
      for (int copy = 0; copy < 2; ++copy) {
        wholes.push_back(input_of(r, copy));
        mines.push_back(torch::empty({slice}, torch::TensorOptions().dtype(type)));
        works.push_back(group.reduce_scatter_async(mines.back(), wholes.back()));
      }
      for (int copy = 0; copy < 2; ++copy) {
        const auto c = static_cast<size_t>(copy);
        group.wait(works[c], "reduce_scatter");
        torch::Tensor sum = torch::zeros({slice * n}, torch::TensorOptions().dtype(type));
        for (int64_t q = 0; q < n; ++q) sum += input_of(q, copy);
        const std::string what = "reduce_scatter of " + std::to_string(slice) + " per rank " +
                                 std::string(c10::toString(type)) + " (" + std::to_string(copy) + ")";
        expect(torch::equal(mines[c], sum.narrow(0, slice * r, slice)), what);
        expect(torch::equal(wholes[c], input_of(r, copy)), what + " left its input as it was");
      }
    }
  }
  // Send/receive around the ranks, receives first, as the ring posts them.
  if (n > 1) {
    torch::Tensor from_left = torch::empty({1000});
    auto recv = group.recv_async(from_left, (r + n - 1) % n, 7);
    torch::Tensor mine_out = torch::full({1000}, static_cast<double>(r));
    auto send = group.send_async(mine_out, (r + 1) % n, 7);
    group.wait(recv, "recv");
    group.wait(send, "send");
    expect(torch::all(from_left == static_cast<double>((r + n - 1) % n)).item<bool>(), "send/recv");
  }
  group.barrier();
  // Groups split by name: even and odd ranks.
  const int64_t size = r % 2 == 0 ? (n + 1) / 2 : n / 2;
  fulgur::ProcessGroup half(group, r % 2 == 0 ? "even" : "odd", r / 2, size);
  torch::Tensor h = torch::full({3}, static_cast<double>(r));
  half.all_reduce(h, fulgur::ReduceOp::Sum);
  double expected = 0;
  for (int64_t k = r % 2; k < n; k += 2) expected += static_cast<double>(k);
  expect(torch::all(h == expected).item<bool>(), "all_reduce in the '" + std::string(r % 2 == 0 ? "even" : "odd") +
                                                     "' group");
}

/// Many rounds of collectives in flight at once, every size class around
/// the rings' threshold (just below it MPI's own collective, at and above it
/// the rings; sizes that split unevenly), float and double, each checked
/// element by element. Run under load and oversubscribed, it finds a slot
/// reused while a transfer into it is still in flight, or segments that meet
/// another operation's messages.
void stress_operations(fulgur::ProcessGroup& group, int rounds) {
  const int64_t r = group.rank(), n = group.size();
  const int64_t ring = (4 << 20);  // MpiProcessGroup::kRingBytes
  struct Case {
    bool reduce_scatter;
    torch::ScalarType type;
    int64_t numel;  // all-reduce: the tensor; reduce-scatter: one rank's slice
  };
  std::vector<Case> cases;
  for (const auto type : {torch::kFloat, torch::kDouble}) {
    const int64_t per = ring / static_cast<int64_t>(c10::elementSize(type));
    for (const int64_t numel : {per - 1, per, per + 7, per * 3 / 2 + 3}) cases.push_back({false, type, numel});
    for (const int64_t slice : {per / n - 1, (per + n - 1) / n, per / n + 5, per * 3 / 2 / n + 3}) {
      cases.push_back({true, type, slice});
    }
  }
  // Rank q's element i in round `round`: distinct per element, rank and round, exact in float.
  auto value_of = [](int64_t numel, int64_t q, int round, torch::ScalarType type) {
    return (torch::arange(numel, torch::kLong).remainder(997) * (q + 1) + round).to(type);
  };
  for (int round = 0; round < rounds; ++round) {
    std::vector<torch::Tensor> outputs, inputs;
    std::vector<c10::intrusive_ptr<c10d::Work>> works;
    for (const auto& c : cases) {
      if (c.reduce_scatter) {
        inputs.push_back(value_of(c.numel * n, r, round, c.type));
        outputs.push_back(torch::full({c.numel}, -1.0, torch::TensorOptions().dtype(c.type)));
        works.push_back(group.reduce_scatter_async(outputs.back(), inputs.back()));
      } else {
        inputs.push_back({});
        outputs.push_back(value_of(c.numel, r, round, c.type));
        works.push_back(group.all_reduce_async(outputs.back(), fulgur::ReduceOp::Sum));
      }
    }
    for (size_t k = 0; k < cases.size(); ++k) {
      const Case& c = cases[k];
      group.wait(works[k], c.reduce_scatter ? "reduce_scatter" : "all_reduce");
      const int64_t whole = c.reduce_scatter ? c.numel * n : c.numel;
      torch::Tensor sum = torch::zeros({whole}, torch::TensorOptions().dtype(c.type));
      for (int64_t q = 0; q < n; ++q) sum += value_of(whole, q, round, c.type);
      const torch::Tensor expected = c.reduce_scatter ? sum.narrow(0, c.numel * r, c.numel) : sum;
      if (!torch::equal(outputs[k], expected)) {
        const auto wrong = (outputs[k] != expected).nonzero();
        const int64_t first = wrong[0].item<int64_t>();
        throw std::runtime_error(
            "check failed: round " + std::to_string(round) + ": " + (c.reduce_scatter ? "reduce_scatter" : "all_reduce") +
            " of " + std::to_string(c.numel) + " " + std::string(c10::toString(c.type)) + ": " +
            std::to_string(wrong.size(0)) + " elements wrong, the first at " + std::to_string(first) + " (" +
            std::to_string(outputs[k][first].item<double>()) + " instead of " +
            std::to_string(expected[first].item<double>()) + ")");
      }
      if (c.reduce_scatter) {
        expect(torch::equal(inputs[k], value_of(whole, r, round, c.type)), "reduce_scatter left its input as it was");
      }
    }
  }
}

struct Mlp : fulgur::LightningModule {
  Mlp() {
    net = register_module("net", torch::nn::Sequential(torch::nn::Linear(4, 16), torch::nn::Tanh(),
                                                       torch::nn::Linear(16, 2)));
  }
  torch::Tensor training_step(const fulgur::Batch& batch, int64_t) override {
    return torch::mse_loss(net->forward(batch.input), batch.target);
  }
  fulgur::OptimizerConfig configure_optimizers() override {
    return {std::make_shared<torch::optim::SGD>(parameters(), torch::optim::SGDOptions(0.1).momentum(0.9)),
            std::nullopt};
  }
  torch::nn::Sequential net{nullptr};
};

/// The online mode: MPI begun by the program, as a simulation does.
int train_online(int rank, int size, const std::string& output) {
  const int trainers = std::min(size, 2);
  MPI_Comm sub = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank < trainers ? 0 : MPI_UNDEFINED, rank, &sub);
  torch::manual_seed(11);
  std::vector<fulgur::Batch> local;
  const int64_t rows = 8 / trainers;
  for (int i = 0; i < 8; ++i) {
    const torch::Tensor x = torch::rand({8, 4}) * 2 - 1;
    const torch::Tensor y = torch::stack({x.sum(1).sin(), x.narrow(1, 0, 2).prod(1)}, 1);
    local.push_back(fulgur::Batch{x.narrow(0, (rank % trainers) * rows, rows),
                                  y.narrow(0, (rank % trainers) * rows, rows), {}});
  }
  if (sub == MPI_COMM_NULL) {
    // Not one of the communicator's ranks: nothing of fulgur's waits for it.
    torch::Tensor state = torch::zeros({4});
    for (int i = 0; i < 8; ++i) state += local[static_cast<size_t>(i)].input.sum(0);
    std::cout << "rank " << rank << ": own loop stepped 8 times" << std::endl;
    return 0;
  }
  fulgur::OnlineOptions online;
  online.trainer = fulgur::TrainerOptions()
                       .accelerator(fulgur::AcceleratorKind::Cpu)
                       .enable_progress_bar(false)
                       .enable_model_summary(false)
                       .logger(false)
                       .enable_checkpointing(false)
                       .strategy(trainers > 1 ? fulgur::StrategyKind::DDP : fulgur::StrategyKind::Auto)
                       .mpi_communicator(MPI_Comm_c2f(sub));
  torch::manual_seed(3);
  fulgur::OnlineTrainer trainer([] { return std::make_shared<Mlp>(); }, online);
  for (const auto& b : local) trainer.train_step(b.input, b.target);
  if (rank == 0) {
    std::vector<torch::Tensor> flat;
    for (const auto& p : trainer.module().parameters()) flat.push_back(p.detach().reshape({-1}));
    const auto bytes = torch::pickle_save(torch::cat(flat));
    std::ofstream(output, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  std::cout << "rank " << rank << ": trained " << trainer.global_step() << " steps on the communicator" << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc >= 2 ? argv[1] : "";
  if (mode == "online" && argc == 3) {
    int provided = 0, rank = 0, size = 1;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int code = 1;
    try {
      code = train_online(rank, size, argv[2]);
    } catch (const std::exception& e) {
      std::cout << "rank " << rank << ": " << e.what() << std::endl;
    }
    MPI_Finalize();
    return code;
  }
  if (mode == "straggler" && argc == 3) {
    // Rank 0 waits at a barrier while the last rank computes for SECONDS
    // first; rank 0 reports the CPU its process used meanwhile.
    torch::set_num_threads(1);
    const auto env = fulgur::detect_cluster_environment();
    fulgur::ProcessGroup group(mpi_options(std::nullopt, env->global_rank(), env->world_size()));
    group.barrier();
    const double seconds = std::stod(argv[2]);
    const auto cpu = [] {
      rusage used{};
      getrusage(RUSAGE_SELF, &used);
      return static_cast<double>(used.ru_utime.tv_sec + used.ru_stime.tv_sec) +
             static_cast<double>(used.ru_utime.tv_usec + used.ru_stime.tv_usec) * 1e-6;
    };
    const double cpu_before = cpu();
    const auto wall_before = std::chrono::steady_clock::now();
    if (env->global_rank() == env->world_size() - 1) {
      std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    }
    group.barrier();
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_before).count();
    const double used = cpu() - cpu_before;
    if (env->global_rank() == 0) {
      std::cout << "rank 0: waited " << wall << " s at the barrier, CPU " << used << " s (" << 100.0 * used / wall
                << " % of a core)" << std::endl;
    }
    return 0;
  }
  if (mode == "stress" && (argc == 3 || (argc == 4 && std::string(argv[3]) == "subset"))) {
    // subset: the program begins MPI and trains on ranks 0 and 1 of a
    // communicator of its own; the other ranks end MPI meanwhile.
    torch::set_num_threads(1);
    const auto env = fulgur::detect_cluster_environment();
    const int rounds = std::stoi(argv[2]);
    const bool subset = argc == 4;
    MPI_Comm sub = MPI_COMM_NULL;
    if (subset) {
      int provided = 0;
      MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
      MPI_Comm_split(MPI_COMM_WORLD, env->global_rank() < 2 ? 0 : MPI_UNDEFINED, static_cast<int>(env->global_rank()),
                     &sub);
    }
    int code = 0;
    try {
      if (!subset || sub != MPI_COMM_NULL) {
        fulgur::ProcessGroup group(subset ? mpi_options(MPI_Comm_c2f(sub), env->global_rank(), 2)
                                          : mpi_options(std::nullopt, env->global_rank(), env->world_size()));
        stress_operations(group, rounds);
      }
      std::cout << "rank " << env->global_rank() << ": ok after " << rounds << " rounds" << std::endl;
    } catch (const std::exception& e) {
      std::cout << "rank " << env->global_rank() << ": " << e.what() << std::endl;
      code = 1;
    }
    if (subset) {
      if (sub != MPI_COMM_NULL) MPI_Comm_free(&sub);
      MPI_Finalize();
    }
    return code;
  }
  if (argc != 2 || (mode != "world" && mode != "program" && mode != "funneled" && mode != "subset")) {
    std::cerr << "usage: mpi_probe world|program|funneled|subset, mpi_probe stress ROUNDS, or mpi_probe online OUTPUT\n";
    return 2;
  }
  torch::set_num_threads(1);
  const auto env = fulgur::detect_cluster_environment();
  const int64_t rank = env->global_rank(), size = env->world_size();
  int code = 0;
  if (mode != "world") {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, mode == "funneled" ? MPI_THREAD_FUNNELED : MPI_THREAD_SERIALIZED, &provided);
  }
  try {
    if (mode == "world" || mode == "program" || mode == "funneled") {
      fulgur::ProcessGroup group(mpi_options(std::nullopt, rank, size));
      check_operations(group);
    } else {
      MPI_Comm sub = MPI_COMM_NULL;
      MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, static_cast<int>(rank), &sub);
      try {
        fulgur::ProcessGroup group(mpi_options(MPI_Comm_c2f(sub), rank, 2));
        check_operations(group);
      } catch (const std::invalid_argument& e) {
        if (rank < 2) throw;
        std::cout << "rank " << rank << ": refused: " << e.what() << std::endl;
        // Outside the communicator nothing waits for this rank: its own work goes on.
        torch::Tensor own = torch::ones({4});
        expect(own.sum().item<double>() == 4, "own work");
      }
      if (sub != MPI_COMM_NULL) MPI_Comm_free(&sub);
    }
    std::cout << "rank " << rank << ": ok" << std::endl;
  } catch (const std::exception& e) {
    std::cout << "rank " << rank << ": " << e.what() << std::endl;
    code = 1;
  }
  if (mode != "world") MPI_Finalize();
  return code;
}
