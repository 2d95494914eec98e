#include <fulgur/trainer/trainer_config.hpp>

#include <fulgur/strategies/detect_cluster_environment.hpp>
#include <fulgur/strategies/slurm_environment.hpp>

#include <fmt/format.h>
#include <torch/cuda.h>

#include <stdexcept>

namespace fulgur {
namespace {

[[noreturn]] void invalid(const std::string& message) {
  throw std::invalid_argument("[TrainerConfig::resolve] " + message);
}

void check_limit(const char* name, const CountOrFraction& limit) {
  if (limit.is_fraction() ? (limit.value() < 0.0 || limit.value() > 1.0) : limit.count() < 0) {
    invalid(fmt::format("{} must be a fraction in [0, 1] or a batch count >= 0, got {}", name, limit.to_string()));
  }
}

int64_t parse_devices(const std::string& devices, int64_t available) {
  if (devices == "auto") return -1;
  try {
    size_t used = 0;
    const int64_t n = std::stoll(devices, &used);
    if (used == devices.size() && (n >= 1 || n == -1)) return n == -1 ? available : n;
  } catch (const std::exception&) {
  }
  invalid(fmt::format("devices must be 'auto', -1 (all) or a count >= 1, got '{}'", devices));
}

}  // namespace

Platform Platform::detect() {
  Platform platform;
  platform.cuda_device_count = static_cast<int64_t>(torch::cuda::device_count());
  std::shared_ptr<const ClusterEnvironment> env = detect_cluster_environment();
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
  const EnvLookup variables = process_environment();
  platform.cpus_per_task = SlurmEnvironment::cpus_per_task(variables);
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

TrainerConfig TrainerConfig::resolve(const TrainerOptions& o, const Platform& platform) {
  TrainerConfig c;

  // Accelerator: "auto" falls back to the CPU when no GPU is visible.
  const std::string& acc = o.accelerator();
  if (acc == "auto") {
    c.accelerator = platform.cuda_device_count > 0 ? AcceleratorKind::Cuda : AcceleratorKind::Cpu;
  } else if (acc == "cpu") {
    c.accelerator = AcceleratorKind::Cpu;
  } else if (acc == "gpu" || acc == "cuda") {
    if (platform.cuda_device_count == 0) {
      invalid("accelerator 'gpu' was requested but no CUDA device is available (use 'cpu' or 'auto')");
    }
    c.accelerator = AcceleratorKind::Cuda;
  } else {
    invalid(fmt::format("accelerator must be one of auto, cpu, gpu, got '{}'", acc));
  }

  const int64_t available = c.accelerator == AcceleratorKind::Cuda ? platform.cuda_device_count : 1;
  const int64_t devices = parse_devices(o.devices(), available);
  c.devices = devices == -1 ? (c.accelerator == AcceleratorKind::Cuda ? available : 1) : devices;
  if (c.accelerator == AcceleratorKind::Cuda && c.devices > platform.cuda_device_count) {
    invalid(fmt::format("devices={} but only {} CUDA device(s) are visible", c.devices, platform.cuda_device_count));
  }
  if (o.num_nodes() < 1) invalid(fmt::format("num_nodes must be >= 1, got {}", o.num_nodes()));
  c.num_nodes = o.num_nodes();
  c.world_size = c.devices * c.num_nodes;

  // Strategy: the distributed strategies are separate pieces of work.
  const std::string& strategy = o.strategy();
  if (strategy != "auto" && strategy != "single_device" && strategy != "ddp" && strategy != "horovod") {
    invalid(fmt::format("strategy must be one of auto, single_device, ddp, horovod, got '{}'", strategy));
  }
  c.strategy = strategy == "auto" ? (c.world_size == 1 ? "single_device" : "ddp") : strategy;
  if (c.strategy == "single_device" && c.world_size != 1) {
    invalid(fmt::format("strategy 'single_device' needs devices=1 and num_nodes=1, got devices={} num_nodes={}",
                        c.devices, c.num_nodes));
  }
  // Started by srun: the job's shape must be the one the options describe.
  if (platform.slurm_tasks_without_srun) {
    invalid(fmt::format("SLURM_NTASKS={} but this process was not started by srun (no SLURM_STEP_ID), so the other "
                        "tasks will never start; run the program with srun in the batch script (see examples/slurm/)",
                        *platform.slurm_tasks_without_srun));
  }
  if (platform.ntasks_without_ntasks_per_node) {
    invalid(fmt::format(
        "SLURM_NTASKS={} comes from --ntasks (or srun -n) without --ntasks-per-node, so SLURM may place the tasks "
        "unevenly over the nodes; use '#SBATCH --ntasks-per-node=<devices per node>' (one task per device) instead",
        *platform.ntasks_without_ntasks_per_node));
  }
  if (platform.num_nodes && *platform.num_nodes != c.num_nodes) {
    invalid(fmt::format("num_nodes={} but the SLURM job has SLURM_NNODES={} node(s) (pass --trainer.num_nodes "
                        "$SLURM_NNODES, or change '#SBATCH --nodes')",
                        c.num_nodes, *platform.num_nodes));
  }
  // Started by torchrun/srun/mpirun: the launch must agree with the options.
  if (platform.processes_external || platform.world_size > 1) {
    if (c.world_size != platform.world_size) {
      invalid(fmt::format("num_nodes * devices = {} * {} = {} does not match the world size {} reported by {}",
                          c.num_nodes, c.devices, c.world_size, platform.world_size, platform.world_size_source));
    }
    if (platform.tasks_per_node && *platform.tasks_per_node != c.devices) {
      invalid(fmt::format("devices={} but {} starts {} processes per node (one process per device is needed)",
                          c.devices, platform.tasks_per_node_source, *platform.tasks_per_node));
    }
  }
  c.needs_launch = c.world_size > 1 && !platform.processes_external;
  if (o.node_rank() < 0 || o.node_rank() >= c.num_nodes) {
    invalid(fmt::format("node_rank must be in [0, num_nodes), got {} with num_nodes={}", o.node_rank(), c.num_nodes));
  }
  c.node_rank = o.node_rank();
  if (!(o.process_group_timeout() > 0)) {
    invalid(fmt::format("process_group_timeout must be > 0 seconds, got {}", o.process_group_timeout()));
  }
  c.process_group_timeout = o.process_group_timeout();
  c.find_unused_parameters = o.find_unused_parameters();
  if (!(o.bucket_cap_mb() > 0)) invalid(fmt::format("bucket_cap_mb must be > 0, got {}", o.bucket_cap_mb()));
  c.bucket_cap_mb = o.bucket_cap_mb();
  c.broadcast_buffers = o.broadcast_buffers();
  c.use_distributed_sampler = o.use_distributed_sampler();
  c.num_threads = platform.cpus_per_task;
  c.timeline = o.timeline();
  const HorovodSettings& h = o.horovod();
  if (!(h.fusion_threshold_mb() >= 0)) {
    invalid(fmt::format("horovod.fusion_threshold_mb must be >= 0, got {}", h.fusion_threshold_mb()));
  }
  if (!(h.cycle_time_ms() > 0)) invalid(fmt::format("horovod.cycle_time_ms must be > 0, got {}", h.cycle_time_ms()));
  if (h.compression() != "none" && h.compression() != "fp16") {
    invalid(fmt::format("horovod.compression must be 'none' or 'fp16', got '{}'", h.compression()));
  }
  if (h.backward_passes_per_step() < 1) {
    invalid(fmt::format("horovod.backward_passes_per_step must be >= 1, got {}", h.backward_passes_per_step()));
  }
  if (!(h.stall_warning_s() > 0)) invalid(fmt::format("horovod.stall_warning_s must be > 0, got {}", h.stall_warning_s()));
  if (h.stall_shutdown_s() && !(*h.stall_shutdown_s() > 0)) {
    invalid(fmt::format("horovod.stall_shutdown_s must be > 0 or null, got {}", *h.stall_shutdown_s()));
  }
  c.horovod = h;

  const std::string& p = o.precision();
  if (p == "32-true" || p == "32") {
    c.precision = PrecisionMode::Full32;
  } else if (p == "bf16-mixed") {
    c.precision = PrecisionMode::BF16Mixed;
  } else if (p == "16-mixed") {
    if (c.accelerator != AcceleratorKind::Cuda) {
      invalid("precision '16-mixed' needs a GPU (float16 autocast with a gradient scaler); on CPU use 'bf16-mixed'");
    }
    c.precision = PrecisionMode::FP16Mixed;
  } else {
    invalid(fmt::format("precision must be one of 32-true, bf16-mixed, 16-mixed, got '{}'", p));
  }

  // Loop lengths. Lightning: max_epochs defaults to 1000 unless max_steps is set.
  if (o.max_steps() < -1) invalid(fmt::format("max_steps must be -1 (no limit) or >= 0, got {}", o.max_steps()));
  c.max_steps = o.max_steps();
  c.max_epochs = o.max_epochs().value_or(c.max_steps == -1 ? 1000 : -1);
  if (c.max_epochs < -1) invalid(fmt::format("max_epochs must be -1 (no limit) or >= 0, got {}", c.max_epochs));
  if (o.min_epochs() < 0) invalid(fmt::format("min_epochs must be >= 0, got {}", o.min_epochs()));
  if (c.max_epochs != -1 && o.min_epochs() > c.max_epochs) {
    invalid(fmt::format("min_epochs ({}) must not exceed max_epochs ({})", o.min_epochs(), c.max_epochs));
  }
  c.min_epochs = o.min_epochs();

  if (o.accumulate_grad_batches() < 1) {
    invalid(fmt::format("accumulate_grad_batches must be >= 1, got {}", o.accumulate_grad_batches()));
  }
  c.accumulate_grad_batches = o.accumulate_grad_batches();
  // Horovod's backward_passes_per_step is gradient accumulation under another name.
  if (const int64_t passes = o.horovod().backward_passes_per_step(); passes > 1) {
    if (c.accumulate_grad_batches != 1 && c.accumulate_grad_batches != passes) {
      invalid(fmt::format("horovod.backward_passes_per_step ({}) and accumulate_grad_batches ({}) disagree; set one",
                          passes, c.accumulate_grad_batches));
    }
    c.accumulate_grad_batches = passes;
  }

  if (o.gradient_clip_val() && *o.gradient_clip_val() < 0.0) {
    invalid(fmt::format("gradient_clip_val must be >= 0, got {}", *o.gradient_clip_val()));
  }
  c.gradient_clip_val = o.gradient_clip_val();
  if (o.gradient_clip_algorithm() == "norm") {
    c.gradient_clip_algorithm = ClipAlgorithm::Norm;
  } else if (o.gradient_clip_algorithm() == "value") {
    c.gradient_clip_algorithm = ClipAlgorithm::Value;
  } else {
    invalid(fmt::format("gradient_clip_algorithm must be 'norm' or 'value', got '{}'", o.gradient_clip_algorithm()));
  }

  const CountOrFraction& vci = o.val_check_interval();
  if (vci.is_fraction() ? (vci.value() <= 0.0 || vci.value() > 1.0) : vci.count() < 1) {
    invalid(fmt::format("val_check_interval must be a fraction in (0, 1] or a batch count >= 1, got {}",
                        vci.to_string()));
  }
  c.val_check_interval = vci;
  if (o.check_val_every_n_epoch() && *o.check_val_every_n_epoch() < 1) {
    invalid(fmt::format("check_val_every_n_epoch must be >= 1 or null, got {}", *o.check_val_every_n_epoch()));
  }
  c.check_val_every_n_epoch = o.check_val_every_n_epoch();
  check_limit("limit_train_batches", o.limit_train_batches());
  check_limit("limit_val_batches", o.limit_val_batches());
  check_limit("limit_test_batches", o.limit_test_batches());
  check_limit("limit_predict_batches", o.limit_predict_batches());
  c.limit_train_batches = o.limit_train_batches();
  c.limit_val_batches = o.limit_val_batches();
  c.limit_test_batches = o.limit_test_batches();
  c.limit_predict_batches = o.limit_predict_batches();

  if (o.num_sanity_val_steps() < -1) {
    invalid(fmt::format("num_sanity_val_steps must be -1 (all) or >= 0, got {}", o.num_sanity_val_steps()));
  }
  c.num_sanity_val_steps = o.num_sanity_val_steps();
  if (o.log_every_n_steps() < 1) invalid(fmt::format("log_every_n_steps must be >= 1, got {}", o.log_every_n_steps()));
  c.log_every_n_steps = o.log_every_n_steps();
  if (o.default_root_dir().empty()) invalid("default_root_dir must not be empty");
  c.default_root_dir = o.default_root_dir();
  c.deterministic = o.deterministic();
  c.benchmark = o.benchmark();
  c.enable_progress_bar = o.enable_progress_bar();
  c.enable_checkpointing = o.enable_checkpointing();
  c.logger = o.logger();

  // fast_dev_run: n batches of every loop, one epoch, no sanity check, no logging.
  if (o.fast_dev_run() < 0) invalid(fmt::format("fast_dev_run must be >= 0, got {}", o.fast_dev_run()));
  c.fast_dev_run = o.fast_dev_run();
  if (c.fast_dev_run > 0) {
    const CountOrFraction n = c.fast_dev_run;
    c.limit_train_batches = c.limit_val_batches = c.limit_test_batches = c.limit_predict_batches = n;
    c.max_epochs = 1;
    c.max_steps = c.fast_dev_run;
    c.num_sanity_val_steps = 0;
    c.val_check_interval = 1.0;
    c.check_val_every_n_epoch = 1;
    c.logger = false;
    c.enable_checkpointing = false;
  }
  return c;
}

std::string TrainerConfig::describe() const {
  return fmt::format(
      "accelerator={} devices={} num_nodes={} strategy={} precision={} max_epochs={} max_steps={} "
      "accumulate_grad_batches={} deterministic={}",
      to_string(accelerator), devices, num_nodes, strategy, to_string(precision), max_epochs, max_steps,
      accumulate_grad_batches, deterministic);
}

}  // namespace fulgur
