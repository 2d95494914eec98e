#pragma once

#include <fulgur/modules/clip_algorithm.hpp>
#include <fulgur/strategies/accelerator.hpp>
#include <fulgur/strategies/create_strategy.hpp>
#include <fulgur/strategies/environments/cluster_environment.hpp>
#include <fulgur/strategies/precision.hpp>
#include <fulgur/strategies/strategy.hpp>
#include <fulgur/trainer/trainer_options.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fulgur {

class ClusterEnvironment;


/// Facts about the machine and the launch that resolution depends on; kept
/// separate so resolution is a pure function tests can drive.
struct Platform {
  int64_t cuda_device_count = 0;
  /// World size the cluster environment reports (1 when run by hand).
  int64_t world_size = 1;
  /// Where world_size came from, for error messages ("no launcher").
  std::string world_size_source = "a single process (no launcher)";
  /// True under torchrun, srun or mpirun; false when fulgur's own launcher
  /// will start the processes.
  bool processes_external = false;
  /// SLURM's tasks per node, when given, and the variable it came from.
  std::optional<int64_t> tasks_per_node;
  std::string tasks_per_node_source;
  /// SLURM's node count (SLURM_NNODES) when srun started this process.
  std::optional<int64_t> num_nodes;
  /// SLURM_NTASKS when the job asked for --ntasks without --ntasks-per-node
  /// (SLURM_NTASKS > 1, SLURM_NTASKS_PER_NODE unset): rejected, because SLURM
  /// may then spread the tasks unevenly over the nodes.
  std::optional<int64_t> ntasks_without_ntasks_per_node;
  /// SLURM_NTASKS when this process is a SLURM task but was not started by
  /// srun (a batch script running the program directly): the other tasks
  /// would never start, so this is rejected.
  std::optional<int64_t> slurm_tasks_without_srun;
  /// SLURM_CPUS_PER_TASK: CPUs SLURM gave each process, the default for
  /// compute threads (torch::set_num_threads) and loader workers.
  std::optional<int64_t> cpus_per_task;
  /// CPUs this process may run on (its affinity mask: taskset, cpusets).
  int64_t available_cpus = 1;
  /// Whether OMP_NUM_THREADS is set: the user's thread count stands.
  bool omp_num_threads_set = false;
  /// Things the user probably did not mean, printed by rank 0 at start-up
  /// (e.g. inside a SLURM allocation without srun).
  std::vector<std::string> warnings;
  /// Who this process is (rank, rendezvous); null means a lone local process.
  std::shared_ptr<const ClusterEnvironment> environment;

  /// The real machine: CUDA devices visible to LibTorch (loading the CUDA
  /// module, CudaRuntime), and the cluster environment detected from the
  /// process's variables.
  static Platform detect();
  /// The same from `variables` instead of this process's environment (a
  /// launcher's rank 0: SubprocessLauncher::environment()).
  static Platform detect(const EnvLookup& variables);
  /// What a run of `options` needs to know: detect(variables), except that
  /// CUDA is not asked about (cuda_device_count 0, the CUDA module not
  /// loaded) when the options choose accelerator 'cpu'. What the Trainer,
  /// Fabric and OnlineTrainer use when given no Platform: a module is loaded
  /// by a run that needs it, never for one that does not.
  static Platform detect_for(const TrainerOptions& options, const EnvLookup& variables = process_environment());
  /// `platform`, or with TrainerOptions::mpi_communicator set, the ranks of
  /// that communicator (CommunicatorEnvironment; collective over it).
  static Platform for_options(Platform platform, const TrainerOptions& options);
};

/// The options a Trainer runs with: TrainerOptions checked and with every
/// "auto" decided. Produced once by resolve(), before any side effect.
struct TrainerConfig {
  /// The options as given, checked, with what resolve() derives written
  /// back: fast_dev_run's limits (limit_*_batches, max_steps,
  /// num_sanity_val_steps, val_check_interval, check_val_every_n_epoch,
  /// logger, enable_checkpointing) and accumulate_grad_batches from
  /// horovod.backward_passes_per_step. Everything below is what no option
  /// says directly.
  TrainerOptions options;
  AcceleratorKind accelerator = AcceleratorKind::Cpu;
  /// Processes per node.
  int64_t devices = 1;
  int64_t world_size = 1;
  /// Never Auto.
  StrategyKind strategy = StrategyKind::SingleDevice;
  PrecisionMode precision = PrecisionMode::Full32;
  /// -1: no limit.
  int64_t max_epochs = 1000;
  ClipAlgorithm gradient_clip_algorithm = ClipAlgorithm::Norm;
  /// What an optimizer step clips: gradient_clip_val with the algorithm, or nothing.
  std::optional<Strategy::Clip> gradient_clip() const {
    const auto& value = options.gradient_clip_val();
    if (!value || *value <= 0.0) return std::nullopt;
    return Strategy::Clip{*value, gradient_clip_algorithm};
  }
  /// Compute threads for this process (torch::set_num_threads); nullopt
  /// leaves LibTorch's default. From SLURM_CPUS_PER_TASK; else, with
  /// several ranks per node and no OMP_NUM_THREADS, each rank's share of
  /// the CPUs (torchrun sets 1 for the same reason), so no OpenMP team
  /// spins on a core that another rank needs.
  std::optional<int64_t> num_threads;
  /// The other ranks must be started by the Trainer (world size > 1 and no
  /// external launcher).
  bool needs_launch = false;

  /// Checks `options` (each field's declared check, then the rules that
  /// involve several fields or the platform) and decides every "auto".
  /// Throws std::invalid_argument naming the option and its value:
  /// "[TrainerOptions] ..." for one field, "[TrainerConfig::resolve] ..." else.
  static TrainerConfig resolve(const TrainerOptions& options, const Platform& platform);
  /// What create_strategy makes the Strategy from, on the processes
  /// `platform` describes; throws where one process per device is still
  /// to be started (needs_launch).
  StrategySpec strategy_spec(const Platform& platform) const;

  /// One-line summary printed on rank 0 at start-up.
  std::string describe() const;
};

}  // namespace fulgur
