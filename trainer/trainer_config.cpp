#include <fulgur/trainer/trainer_config.hpp>

#include <fulgur/strategies/cuda/cuda_runtime.hpp>
#include <fulgur/strategies/mpi/communicator_environment.hpp>
#include <fulgur/strategies/mpi/mpi_runtime.hpp>

#include <fulgur/strategies/environments/detect_cluster_environment.hpp>
#include <fulgur/strategies/environments/slurm_environment.hpp>

#include <fmt/format.h>
#include <torch/cuda.h>

#include <sched.h>

#include <algorithm>
#include <stdexcept>
#include <thread>

namespace fulgur {
namespace {

[[noreturn]] void config_error(const std::string& message) {
  throw std::invalid_argument("[TrainerConfig::resolve] " + message);
}

int64_t parse_devices(const std::string& devices, int64_t available) {
  if (devices == "auto") return -1;
  try {
    size_t used = 0;
    const int64_t n = std::stoll(devices, &used);
    if (used == devices.size() && (n >= 1 || n == -1)) return n == -1 ? available : n;
  } catch (const std::exception&) {
  }
  config_error(fmt::format("devices must be 'auto', -1 (all) or a count >= 1, got '{}'", devices));
}

// ATen's CUDA device count, with the module loaded first (CudaRuntime).
int64_t aten_cuda_device_count() {
  CudaRuntime::load();
  const auto count = static_cast<int64_t>(torch::cuda::device_count());
  if (count == 0 && CudaRuntime::device_count() > 0) {
    // ATen decided "no CUDA" when it was first asked, before the module was
    // there: the GPUs are unusable in this process. Say why, not "no GPU".
    config_error(fmt::format(
        "this machine has {} CUDA device(s), but LibTorch was asked about CUDA (torch::manual_seed, "
        "torch::cuda::is_available, a CUDA tensor) before fulgur loaded its CUDA module, and LibTorch decides that "
        "once per process; seed with fulgur::seed_everything (it loads the module first) and make such calls after it",
        CudaRuntime::device_count()));
  }
  return count;
}

}  // namespace

Platform Platform::detect() { return detect(process_environment()); }

Platform Platform::detect(const EnvLookup& variables) {
  Platform platform = detect_for(TrainerOptions().accelerator(AcceleratorKind::Cpu), variables);
  platform.cuda_device_count = aten_cuda_device_count();
  return platform;
}

Platform Platform::detect_for(const TrainerOptions& options, const EnvLookup& variables) {
  Platform platform;
  // A CPU run never asks about CUDA: its module (libtorch_cuda and what it
  // pulls in, RTLD_GLOBAL) stays out of the process.
  if (options.accelerator() != AcceleratorKind::Cpu) {
    platform.cuda_device_count = aten_cuda_device_count();
  }
  std::shared_ptr<const ClusterEnvironment> env = detect_cluster_environment(variables);
  platform.world_size = env->world_size();
  platform.world_size_source = env->world_size_source();
  platform.processes_external = env->creates_processes_externally();
  if (const auto* slurm = dynamic_cast<const SlurmEnvironment*>(env.get())) {
    if (slurm->ntasks_per_node()) {
      platform.tasks_per_node = slurm->ntasks_per_node();
      platform.tasks_per_node_source = "SLURM_NTASKS_PER_NODE=" + slurm->ntasks_per_node_text().value_or("");
    }
    platform.num_nodes = slurm->num_nodes();
    if (slurm->world_size() > 1 && !slurm->ntasks_per_node_given()) platform.ntasks_without_ntasks_per_node = slurm->world_size();
  }
  platform.cpus_per_task = SlurmEnvironment::cpus_per_task(variables);
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  platform.available_cpus = ::sched_getaffinity(0, sizeof(cpus), &cpus) == 0
                                ? CPU_COUNT(&cpus)
                                : std::max<int64_t>(1, std::thread::hardware_concurrency());
  platform.omp_num_threads_set = variables("OMP_NUM_THREADS").has_value();
  const bool without_srun = SlurmEnvironment::in_allocation_without_srun(variables);
  if (without_srun && env->name() == "slurm" && env->world_size() > 1) {
    platform.slurm_tasks_without_srun = env->world_size();
  } else if (without_srun && env->name() == "local") {
    platform.warnings.push_back(
        "running inside a SLURM allocation (SLURM_JOB_ID is set) but not started by srun: only this one process "
        "trains. To use every task of the job, start the program with `srun` (see examples/slurm/)");
  }
  platform.environment = std::move(env);
  return platform;
}

Platform Platform::for_options(Platform platform, const TrainerOptions& options) {
  if (options.mpi_communicator() == -1) return platform;  // no MPI's handle is -1; MPICH's others can be < 0
  if (options.process_group_backend() != ProcessGroupBackend::Auto &&
      options.process_group_backend() != ProcessGroupBackend::Mpi) {
    config_error("mpi_communicator is set, so the ranks talk over that communicator: process_group_backend must be "
                 "'mpi' or 'auto'");
  }
  if (!MpiRuntime::built()) {
    config_error("mpi_communicator is set but fulgur was built without MPI (FULGUR_WITH_MPI=OFF, or no MPI was found "
                 "when it was configured)");
  }
  auto env = std::make_shared<const CommunicatorEnvironment>(options.mpi_communicator());
  platform.world_size = env->world_size();
  platform.world_size_source = env->world_size_source();
  platform.processes_external = true;
  platform.tasks_per_node.reset();
  platform.num_nodes.reset();
  platform.ntasks_without_ntasks_per_node.reset();
  platform.slurm_tasks_without_srun.reset();
  platform.environment = std::move(env);
  return platform;
}

TrainerConfig TrainerConfig::resolve(const TrainerOptions& o, const Platform& platform) {
  o.validate();  // every field's own check
  TrainerConfig c;
  c.options = o;

  // Accelerator: auto falls back to the CPU when no GPU is visible.
  c.accelerator = o.accelerator();
  if (c.accelerator == AcceleratorKind::Auto) {
    c.accelerator = platform.cuda_device_count > 0 ? AcceleratorKind::Cuda : AcceleratorKind::Cpu;
  } else if (c.accelerator == AcceleratorKind::Cuda && platform.cuda_device_count == 0) {
    config_error("accelerator 'gpu' was requested but no CUDA device is available (use 'cpu' or 'auto')");
  }

  const int64_t available = c.accelerator == AcceleratorKind::Cuda ? platform.cuda_device_count : 1;
  const int64_t devices = parse_devices(o.devices(), available);
  c.devices = devices == -1 ? (c.accelerator == AcceleratorKind::Cuda ? available : 1) : devices;
  if (o.mpi_communicator() != -1) {
    // The communicator's ranks are the run's: devices 'auto' means its ranks per node.
    if (o.devices() == "auto") c.devices = platform.world_size / o.num_nodes();
    c.options.process_group_backend(ProcessGroupBackend::Mpi);
  }
  if (o.process_group_backend() == ProcessGroupBackend::Nccl && c.accelerator != AcceleratorKind::Cuda) {
    config_error("process_group_backend 'nccl' needs accelerator 'gpu' (NCCL moves CUDA tensors only), got accelerator "
                 "'cpu'; use 'gloo' or 'auto'");
  }
  // Gloo and MPI let ranks share a GPU (local rank r uses GPU r modulo the
  // count: they move host copies, or CUDA memory where MPI is CUDA-aware); NCCL refuses that.
  const bool shared_gpus = c.options.process_group_backend() == ProcessGroupBackend::Gloo ||
                           c.options.process_group_backend() == ProcessGroupBackend::Mpi;
  if (c.accelerator == AcceleratorKind::Cuda && c.devices > platform.cuda_device_count && !shared_gpus) {
    config_error(fmt::format("devices={} but only {} CUDA device(s) are visible", c.devices, platform.cuda_device_count));
  }
  c.world_size = c.devices * o.num_nodes();
  if (c.options.process_group_backend() == ProcessGroupBackend::Mpi) {
    if (!MpiRuntime::built()) {
      config_error("process_group_backend 'mpi' was chosen but fulgur was built without MPI (FULGUR_WITH_MPI=OFF, or "
                   "no MPI was found when it was configured); use 'gloo' or 'auto'");
    }
    if (c.world_size > 1 && !platform.processes_external) {
      config_error(fmt::format(
          "process_group_backend 'mpi' needs ranks started by an MPI launcher (mpirun -np {0}, mpiexec, "
          "srun --mpi=pmix), but this program was started alone and would start its {0} ranks itself",
          c.world_size));
    }
  }

  c.strategy = o.strategy() != StrategyKind::Auto ? o.strategy()
                                                  : (c.world_size == 1 ? StrategyKind::SingleDevice : StrategyKind::DDP);
  if (c.strategy == StrategyKind::SingleDevice && c.world_size != 1) {
    config_error(fmt::format("strategy 'single_device' needs devices=1 and num_nodes=1, got devices={} num_nodes={}",
                        c.devices, o.num_nodes()));
  }
  // Started by srun: the job's shape must be the one the options describe.
  if (platform.slurm_tasks_without_srun) {
    config_error(fmt::format("SLURM_NTASKS={} but this process was not started by srun (no SLURM_STEP_ID), so the other "
                        "tasks will never start; run the program with srun in the batch script (see examples/slurm/)",
                        *platform.slurm_tasks_without_srun));
  }
  if (platform.ntasks_without_ntasks_per_node) {
    config_error(fmt::format(
        "SLURM_NTASKS={} comes from --ntasks (or srun -n) without --ntasks-per-node, so SLURM may place the tasks "
        "unevenly over the nodes; use '#SBATCH --ntasks-per-node=<devices per node>' (one task per device) instead",
        *platform.ntasks_without_ntasks_per_node));
  }
  if (platform.num_nodes && *platform.num_nodes != o.num_nodes()) {
    config_error(fmt::format("num_nodes={} but the SLURM job has SLURM_NNODES={} node(s) (pass --trainer.num_nodes "
                        "$SLURM_NNODES, or change '#SBATCH --nodes')",
                        o.num_nodes(), *platform.num_nodes));
  }
  // Started by torchrun/srun/mpirun: the launch must agree with the options.
  if (platform.processes_external || platform.world_size > 1) {
    if (c.world_size != platform.world_size) {
      config_error(fmt::format("num_nodes * devices = {} * {} = {} does not match the world size {} reported by {}",
                          o.num_nodes(), c.devices, c.world_size, platform.world_size, platform.world_size_source));
    }
    if (platform.tasks_per_node && *platform.tasks_per_node != c.devices) {
      config_error(fmt::format("devices={} but {} starts {} processes per node (one process per device is needed)",
                          c.devices, platform.tasks_per_node_source, *platform.tasks_per_node));
    }
  }
  c.needs_launch = c.world_size > 1 && !platform.processes_external;
  if (o.node_rank() >= o.num_nodes()) {
    config_error(fmt::format("node_rank must be in [0, num_nodes), got {} with num_nodes={}", o.node_rank(), o.num_nodes()));
  }
  c.num_threads = platform.cpus_per_task;
  if (!c.num_threads && c.devices > 1 && !platform.omp_num_threads_set) {
    c.num_threads = std::max<int64_t>(1, platform.available_cpus / c.devices);
  }

  c.precision = o.precision();
  if (c.precision == PrecisionMode::FP16Mixed && c.accelerator != AcceleratorKind::Cuda) {
    config_error("precision '16-mixed' needs a GPU (float16 autocast with a gradient scaler); on CPU use 'bf16-mixed'");
  }

  // Loop lengths. Lightning: max_epochs defaults to 1000 unless max_steps is set.
  c.max_epochs = o.max_epochs().value_or(o.max_steps() == -1 ? 1000 : -1);
  if (c.max_epochs != -1 && o.min_epochs() > c.max_epochs) {
    config_error(fmt::format("min_epochs ({}) must not exceed max_epochs ({})", o.min_epochs(), c.max_epochs));
  }
  // Horovod's backward_passes_per_step is gradient accumulation under another name.
  if (const int64_t passes = o.horovod().backward_passes_per_step(); passes > 1) {
    if (o.accumulate_grad_batches() != 1 && o.accumulate_grad_batches() != passes) {
      config_error(fmt::format("horovod.backward_passes_per_step ({}) and accumulate_grad_batches ({}) disagree; set one",
                          passes, o.accumulate_grad_batches()));
    }
    c.options.accumulate_grad_batches(passes);
  }
  c.gradient_clip_algorithm = o.gradient_clip_algorithm();

  // fast_dev_run: n batches of every loop, one epoch, no sanity check, no logging.
  if (const int64_t n = o.fast_dev_run(); n > 0) {
    c.options.limit_train_batches(n).limit_val_batches(n).limit_test_batches(n).limit_predict_batches(n);
    c.max_epochs = 1;
    c.options.max_steps(n).num_sanity_val_steps(0).val_check_interval(1.0).check_val_every_n_epoch(1);
    c.options.logger(false).enable_checkpointing(false);
  }
  return c;
}

std::string TrainerConfig::describe() const {
  return fmt::format(
      "accelerator={} devices={} num_nodes={} strategy={} precision={} max_epochs={} max_steps={} "
      "accumulate_grad_batches={} deterministic={}",
      to_string(accelerator), devices, options.num_nodes(), to_string(strategy), to_string(precision), max_epochs,
      options.max_steps(), options.accumulate_grad_batches(), options.deterministic());
}

StrategySpec TrainerConfig::strategy_spec(const Platform& platform) const {
  StrategySpec spec;
  spec.kind = strategy;
  spec.accelerator = accelerator;
  spec.precision = precision;
  if (strategy == StrategyKind::SingleDevice) return spec;
  if (needs_launch || platform.environment == nullptr) {
    throw std::invalid_argument(fmt::format(
        "[TrainerConfig::strategy_spec] devices={} num_nodes={} needs one process per device: the Trainer starts them, or "
        "torchrun, srun or mpirun",
        devices, options.num_nodes()));
  }
  spec.environment = platform.environment.get();
  spec.process_group_timeout = options.process_group_timeout();
  spec.process_group_backend = options.process_group_backend();
  spec.timeline_path = options.timeline();
  spec.ddp = options.ddp();
  spec.fsdp = options.fsdp();
  spec.horovod = options.horovod();
  spec.model_parallel = options.model_parallel();
  return spec;
}

}  // namespace fulgur
