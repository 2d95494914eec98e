#include <fulgur/trainer/trainer_config.hpp>

#include <fulgur/strategies/mpi/mpi_runtime.hpp>

#include <doctest/doctest.h>

namespace trainer_config_test {

using fulgur::CountOrFraction;
using fulgur::Platform;
using fulgur::TrainerConfig;
using fulgur::TrainerOptions;

namespace {

Platform cpu_only() { return Platform{}; }

Platform with_gpus(int64_t n) {
  Platform p;
  p.cuda_device_count = n;
  return p;
}

}  // namespace

TEST_CASE("TrainerConfig: defaults resolve like Lightning's") {
  const TrainerConfig c = TrainerConfig::resolve(TrainerOptions(), cpu_only());
  CHECK(c.accelerator == fulgur::AcceleratorKind::Cpu);
  CHECK(c.devices == 1);
  CHECK(c.world_size == 1);
  CHECK(c.strategy == fulgur::StrategyKind::SingleDevice);
  CHECK(c.max_epochs == 1000);
  CHECK(c.options.max_steps() == -1);
  CHECK(c.options.num_sanity_val_steps() == 2);
  CHECK(c.options.log_every_n_steps() == 50);
  CHECK(c.precision == fulgur::PrecisionMode::Full32);
}

TEST_CASE("TrainerConfig: max_epochs is unlimited when only max_steps is given") {
  const TrainerConfig c = TrainerConfig::resolve(TrainerOptions().max_steps(10), cpu_only());
  CHECK(c.max_epochs == -1);
  CHECK(c.options.max_steps() == 10);
}

TEST_CASE("TrainerConfig: accelerator auto picks the GPU when one is visible") {
  const TrainerConfig one = TrainerConfig::resolve(TrainerOptions(), with_gpus(1));
  CHECK(one.accelerator == fulgur::AcceleratorKind::Cuda);
  CHECK(one.devices == 1);
  CHECK(TrainerConfig::resolve(TrainerOptions().accelerator(fulgur::AcceleratorKind::Cpu), with_gpus(2)).accelerator ==
        fulgur::AcceleratorKind::Cpu);
  CHECK(TrainerConfig::resolve(TrainerOptions().devices(1), with_gpus(2)).devices == 1);
  // devices "auto" means every visible GPU, as in Lightning: with 2 that is DDP,
  // started by fulgur's launcher when nothing else started the processes.
  const TrainerConfig two = TrainerConfig::resolve(TrainerOptions(), with_gpus(2));
  CHECK(two.devices == 2);
  CHECK(two.strategy == fulgur::StrategyKind::DDP);
  CHECK(two.needs_launch);
}

TEST_CASE("TrainerConfig: process_group_backend gloo or mpi lets ranks share a GPU; auto and nccl keep one rank per GPU") {
  const TrainerOptions shared = TrainerOptions().accelerator(fulgur::AcceleratorKind::Cuda).devices(2);
  CHECK_THROWS_WITH_AS(TrainerConfig::resolve(shared, with_gpus(1)),
                       "[TrainerConfig::resolve] devices=2 but only 1 CUDA device(s) are visible", std::invalid_argument);
  CHECK_THROWS_WITH_AS(
      TrainerConfig::resolve(TrainerOptions(shared).process_group_backend(fulgur::ProcessGroupBackend::Nccl), with_gpus(1)),
      "[TrainerConfig::resolve] devices=2 but only 1 CUDA device(s) are visible", std::invalid_argument);
  const TrainerOptions gloo = TrainerOptions(shared).process_group_backend(fulgur::ProcessGroupBackend::Gloo);
  const TrainerConfig c = TrainerConfig::resolve(gloo, with_gpus(1));
  CHECK(c.devices == 2);
  CHECK(c.strategy == fulgur::StrategyKind::DDP);
  // Two ranks mpirun started on a one-GPU machine.
  Platform launched = with_gpus(1);
  launched.processes_external = true;
  launched.world_size = 2;
  const TrainerOptions mpi = TrainerOptions(shared).process_group_backend(fulgur::ProcessGroupBackend::Mpi);
  if (fulgur::MpiRuntime::built()) {
    CHECK(TrainerConfig::resolve(mpi, launched).devices == 2);
  } else {
    CHECK_THROWS_WITH_AS(TrainerConfig::resolve(mpi, launched), doctest::Contains("built without MPI"),
                         std::invalid_argument);
  }
}

TEST_CASE("TrainerConfig: strategy auto is ddp above one process; launched runs must match the launch") {
  const TrainerConfig local = TrainerConfig::resolve(TrainerOptions().accelerator(fulgur::AcceleratorKind::Cpu).devices(3), cpu_only());
  CHECK(local.strategy == fulgur::StrategyKind::DDP);
  CHECK(local.world_size == 3);
  CHECK(local.needs_launch);

  Platform torchrun;
  torchrun.world_size = 4;
  torchrun.world_size_source = "WORLD_SIZE=4";
  torchrun.processes_external = true;
  const TrainerConfig launched = TrainerConfig::resolve(TrainerOptions().devices(2).num_nodes(2), torchrun);
  CHECK_FALSE(launched.needs_launch);
  CHECK(launched.world_size == 4);

  Platform slurm = torchrun;
  slurm.world_size_source = "SLURM_NTASKS=4";
  slurm.tasks_per_node = 2;
  slurm.tasks_per_node_source = "SLURM_NTASKS_PER_NODE=2";
  CHECK_THROWS_WITH_AS(TrainerConfig::resolve(TrainerOptions().devices(4).num_nodes(1), slurm),
                       "[TrainerConfig::resolve] devices=4 but SLURM_NTASKS_PER_NODE=2 starts 2 processes per node "
                       "(one process per device is needed)",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(TrainerConfig::resolve(TrainerOptions().devices(1), slurm),
                       "[TrainerConfig::resolve] num_nodes * devices = 1 * 1 = 1 does not match the world size 4 "
                       "reported by SLURM_NTASKS=4",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(TrainerConfig::resolve(TrainerOptions().devices(2).num_nodes(2).node_rank(2), torchrun),
                       "[TrainerConfig::resolve] node_rank must be in [0, num_nodes), got 2 with num_nodes=2",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(TrainerConfig::resolve(TrainerOptions().process_group_timeout(0), cpu_only()),
                       "[TrainerOptions] process_group_timeout must be > 0, got 0",
                       std::invalid_argument);
  // NCCL moves CUDA tensors only; auto and gloo are fine on the CPU.
  CHECK_THROWS_WITH_AS(
      TrainerConfig::resolve(TrainerOptions()
                                 .accelerator(fulgur::AcceleratorKind::Cpu)
                                 .process_group_backend(fulgur::ProcessGroupBackend::Nccl),
                             cpu_only()),
      "[TrainerConfig::resolve] process_group_backend 'nccl' needs accelerator 'gpu' (NCCL moves CUDA tensors only), "
      "got accelerator 'cpu'; use 'gloo' or 'auto'",
      std::invalid_argument);
  CHECK_NOTHROW(TrainerConfig::resolve(TrainerOptions()
                                           .accelerator(fulgur::AcceleratorKind::Cpu)
                                           .process_group_backend(fulgur::ProcessGroupBackend::Gloo),
                                       cpu_only()));
}

TEST_CASE("TrainerConfig: compute threads: SLURM's CPUs per task, else each local rank's share of the CPUs") {
  Platform p = cpu_only();
  p.available_cpus = 8;
  const TrainerOptions one = TrainerOptions().accelerator(fulgur::AcceleratorKind::Cpu).devices(1);
  const TrainerOptions three = TrainerOptions().accelerator(fulgur::AcceleratorKind::Cpu).devices(3);
  CHECK_FALSE(TrainerConfig::resolve(one, p).num_threads.has_value());  // LibTorch's default
  CHECK(TrainerConfig::resolve(three, p).num_threads == 2);              // 8 CPUs / 3 ranks
  p.available_cpus = 2;
  CHECK(TrainerConfig::resolve(three, p).num_threads == 1);  // at least one
  p.omp_num_threads_set = true;
  CHECK_FALSE(TrainerConfig::resolve(three, p).num_threads.has_value());  // the user's OMP_NUM_THREADS stands
  p.cpus_per_task = 4;
  CHECK(TrainerConfig::resolve(three, p).num_threads == 4);
  CHECK(TrainerConfig::resolve(one, p).num_threads == 4);
}

TEST_CASE("TrainerConfig: exact error messages") {
  auto message = [](const TrainerOptions& o, const Platform& p = Platform{}) {
    try {
      TrainerConfig::resolve(o, p);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // A name outside the choices cannot reach the options: parse_choice (the
  // YAML reader's parse too) rejects it.
  CHECK_THROWS_WITH_AS(fulgur::parse_choice<fulgur::AcceleratorKind>("tpu"),
                       "must be one of auto, cpu, gpu, got 'tpu'; did you mean 'cpu'?", std::invalid_argument);
  CHECK(message(TrainerOptions().accelerator(fulgur::AcceleratorKind::Cuda)) ==
        "[TrainerConfig::resolve] accelerator 'gpu' was requested but no CUDA device is available (use 'cpu' or "
        "'auto')");
  CHECK(message(TrainerOptions().devices("zero")) ==
        "[TrainerConfig::resolve] devices must be 'auto', -1 (all) or a count >= 1, got 'zero'");
  CHECK(message(TrainerOptions().accelerator(fulgur::AcceleratorKind::Cuda).devices(4), with_gpus(2)) ==
        "[TrainerConfig::resolve] devices=4 but only 2 CUDA device(s) are visible");
  CHECK(message(TrainerOptions().num_nodes(0)) == "[TrainerOptions] num_nodes must be >= 1, got 0");
  CHECK_THROWS_WITH_AS(fulgur::parse_choice<fulgur::StrategyKind>("deepspeed"),
                       "must be one of auto, single_device, ddp, horovod, fsdp, model_parallel, got 'deepspeed'",
                       std::invalid_argument);
  CHECK(message(TrainerOptions().strategy(fulgur::StrategyKind::SingleDevice).devices(2)) ==
        "[TrainerConfig::resolve] strategy 'single_device' needs devices=1 and num_nodes=1, got devices=2 "
        "num_nodes=1");
  CHECK_THROWS_WITH_AS(fulgur::parse_choice<fulgur::HorovodCompression>("int8"),
                       "must be one of none, fp16, got 'int8'", std::invalid_argument);
  CHECK(message(TrainerOptions().horovod(fulgur::HorovodOptions().cycle_time_ms(0))) ==
        "[HorovodOptions] cycle_time_ms must be > 0, got 0");
  CHECK(message(TrainerOptions().accumulate_grad_batches(2).horovod(
            fulgur::HorovodOptions().backward_passes_per_step(3))) ==
        "[TrainerConfig::resolve] horovod.backward_passes_per_step (3) and accumulate_grad_batches (2) disagree; set "
        "one");
  CHECK(message(TrainerOptions().precision(fulgur::PrecisionMode::FP16Mixed)) ==
        "[TrainerConfig::resolve] precision '16-mixed' needs a GPU (float16 autocast with a gradient scaler); on "
        "CPU use 'bf16-mixed'");
  CHECK_THROWS_WITH_AS(fulgur::parse_choice<fulgur::PrecisionMode>("64"),
                       "must be one of 32-true, bf16-mixed, 16-mixed, got '64'", std::invalid_argument);
  CHECK(message(TrainerOptions().max_epochs(-2)) ==
        "[TrainerOptions] max_epochs must be -1 or >= 0, got -2");
  CHECK(message(TrainerOptions().max_steps(-3)) ==
        "[TrainerOptions] max_steps must be -1 or >= 0, got -3");
  CHECK(message(TrainerOptions().max_epochs(2).min_epochs(3)) ==
        "[TrainerConfig::resolve] min_epochs (3) must not exceed max_epochs (2)");
  CHECK(message(TrainerOptions().accumulate_grad_batches(0)) ==
        "[TrainerOptions] accumulate_grad_batches must be >= 1, got 0");
  CHECK(message(TrainerOptions().gradient_clip_val(-1.0)) ==
        "[TrainerOptions] gradient_clip_val must be >= 0, got -1");
  CHECK_THROWS_WITH_AS(fulgur::parse_choice<fulgur::ClipAlgorithm>("l1"),
                       "must be one of norm, value, got 'l1'", std::invalid_argument);
  CHECK(message(TrainerOptions().val_check_interval(1.5)) ==
        "[TrainerOptions] val_check_interval must be a fraction in (0, 1] or a batch count >= 1, got 1.5");
  CHECK(message(TrainerOptions().val_check_interval(0)) ==
        "[TrainerOptions] val_check_interval must be a fraction in (0, 1] or a batch count >= 1, got 0");
  CHECK(message(TrainerOptions().check_val_every_n_epoch(0)) ==
        "[TrainerOptions] check_val_every_n_epoch must be >= 1, got 0");
  CHECK(message(TrainerOptions().limit_train_batches(-1)) ==
        "[TrainerOptions] limit_train_batches must be a fraction in [0, 1] or a batch count >= 0, got -1");
  CHECK(message(TrainerOptions().limit_val_batches(2.0)) ==
        "[TrainerOptions] limit_val_batches must be a fraction in [0, 1] or a batch count >= 0, got 2.0");
  CHECK(message(TrainerOptions().num_sanity_val_steps(-2)) ==
        "[TrainerOptions] num_sanity_val_steps must be -1 or >= 0, got -2");
  CHECK(message(TrainerOptions().log_every_n_steps(0)) ==
        "[TrainerOptions] log_every_n_steps must be >= 1, got 0");
  CHECK(message(TrainerOptions().fast_dev_run(-1)) == "[TrainerOptions] fast_dev_run must be >= 0, got -1");
}

TEST_CASE("TrainerConfig: world size must match the environment") {
  Platform launched;
  launched.world_size = 4;
  launched.world_size_source = "WORLD_SIZE";
  try {
    TrainerConfig::resolve(TrainerOptions(), launched);
    FAIL("expected an error");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()) ==
          "[TrainerConfig::resolve] num_nodes * devices = 1 * 1 = 1 does not match the world size 4 reported by "
          "WORLD_SIZE");
  }
}

TEST_CASE("TrainerConfig: fast_dev_run limits every loop and turns logging off") {
  const TrainerConfig c = TrainerConfig::resolve(TrainerOptions().fast_dev_run(3).max_epochs(50), cpu_only());
  CHECK(c.max_epochs == 1);
  CHECK(c.options.max_steps() == 3);
  CHECK(c.options.limit_train_batches() == CountOrFraction(3));
  CHECK(c.options.limit_val_batches() == CountOrFraction(3));
  CHECK(c.options.limit_test_batches() == CountOrFraction(3));
  CHECK(c.options.num_sanity_val_steps() == 0);
  CHECK_FALSE(c.options.logger());
}

TEST_CASE("CountOrFraction: text keeps counts and fractions apart") {
  CHECK(CountOrFraction(1.0).to_string() == "1.0");
  CHECK(CountOrFraction(0.25).to_string() == "0.25");
  CHECK(CountOrFraction(1).to_string() == "1");
}

TEST_CASE("CountOrFraction: limits a loader's length") {
  CHECK(CountOrFraction(5).limit(10, "x") == 5);
  CHECK(CountOrFraction(50).limit(10, "x") == 10);
  CHECK(CountOrFraction(0.25).limit(10, "x") == 2);
  CHECK(CountOrFraction(1.0).limit(10, "x") == 10);
  CHECK(CountOrFraction(0.0).limit(10, "x") == 0);
  CHECK_THROWS_WITH_AS(CountOrFraction(0.05).limit(10, "limit_val_batches"),
                       "[CountOrFraction::limit] limit_val_batches=0.05 of 10 batches is less than one batch",
                       std::invalid_argument);
}

TEST_CASE("TrainerConfig: the SLURM job's shape must match num_nodes and devices, with one clear error") {
  Platform slurm;
  slurm.processes_external = true;
  slurm.world_size = 4;
  slurm.world_size_source = "SLURM_NTASKS=4 (SLURM_NNODES=2, SLURM_NTASKS_PER_NODE=2)";
  slurm.num_nodes = 2;
  slurm.tasks_per_node = 2;
  slurm.tasks_per_node_source = "SLURM_NTASKS_PER_NODE=2";
  const TrainerConfig ok = TrainerConfig::resolve(TrainerOptions().accelerator(fulgur::AcceleratorKind::Cpu).devices(2).num_nodes(2), slurm);
  CHECK(ok.world_size == 4);
  CHECK_FALSE(ok.needs_launch);

  // --nodes 2 in the script but --trainer.num_nodes left at 1 (and devices 4 to make the product match).
  CHECK_THROWS_WITH_AS(TrainerConfig::resolve(TrainerOptions().accelerator(fulgur::AcceleratorKind::Cpu).devices(4), slurm),
                       "[TrainerConfig::resolve] num_nodes=1 but the SLURM job has SLURM_NNODES=2 node(s) (pass "
                       "--trainer.num_nodes $SLURM_NNODES, or change '#SBATCH --nodes')",
                       std::invalid_argument);

  // --ntasks-per-node=2 with --trainer.devices 4 on one node.
  Platform one_node = slurm;
  one_node.world_size = 2;
  one_node.world_size_source = "SLURM_NTASKS=2 (SLURM_NNODES=1, SLURM_NTASKS_PER_NODE=2)";
  one_node.num_nodes = 1;
  CHECK_THROWS_WITH_AS(TrainerConfig::resolve(TrainerOptions().accelerator(fulgur::AcceleratorKind::Cpu).devices(4), one_node),
                       "[TrainerConfig::resolve] num_nodes * devices = 1 * 4 = 4 does not match the world size 2 "
                       "reported by SLURM_NTASKS=2 (SLURM_NNODES=1, SLURM_NTASKS_PER_NODE=2)",
                       std::invalid_argument);

  // --ntasks=4 without --ntasks-per-node: refused before the other checks, which it would confuse.
  Platform ntasks = slurm;
  ntasks.tasks_per_node.reset();
  ntasks.ntasks_without_ntasks_per_node = 4;
  CHECK_THROWS_WITH_AS(TrainerConfig::resolve(TrainerOptions().accelerator(fulgur::AcceleratorKind::Cpu).devices(2).num_nodes(2), ntasks),
                       "[TrainerConfig::resolve] SLURM_NTASKS=4 comes from --ntasks (or srun -n) without "
                       "--ntasks-per-node, so SLURM may place the tasks unevenly over the nodes; use '#SBATCH "
                       "--ntasks-per-node=<devices per node>' (one task per device) instead",
                       std::invalid_argument);
}

TEST_CASE("TrainerConfig: a SLURM job of several tasks run without srun is refused") {
  Platform batch_script;
  batch_script.processes_external = true;
  batch_script.world_size = 2;
  batch_script.world_size_source = "SLURM_NTASKS=2 (SLURM_NNODES=1, SLURM_NTASKS_PER_NODE=2)";
  batch_script.num_nodes = 1;
  batch_script.tasks_per_node = 2;
  batch_script.slurm_tasks_without_srun = 2;
  CHECK_THROWS_WITH_AS(TrainerConfig::resolve(TrainerOptions().accelerator(fulgur::AcceleratorKind::Cpu).devices(2), batch_script),
                       "[TrainerConfig::resolve] SLURM_NTASKS=2 but this process was not started by srun (no "
                       "SLURM_STEP_ID), so the other tasks will never start; run the program with srun in the batch "
                       "script (see examples/slurm/)",
                       std::invalid_argument);
}

}  // namespace trainer_config_test
