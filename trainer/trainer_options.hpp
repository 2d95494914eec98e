#pragma once

#include <fulgur/modules/clip_algorithm.hpp>
#include <fulgur/core/options.hpp>
#include <fulgur/strategies/accelerator_kind.hpp>
#include <fulgur/strategies/options/ddp_options.hpp>
#include <fulgur/strategies/options/fsdp_options.hpp>
#include <fulgur/strategies/options/model_parallel_options.hpp>
#include <fulgur/strategies/options/horovod_options.hpp>
#include <fulgur/strategies/precision_mode.hpp>
#include <fulgur/strategies/options/process_group_backend.hpp>
#include <fulgur/strategies/strategy_kind.hpp>
#include <fulgur/trainer/count_or_fraction.hpp>
#include <fulgur/trainer/openmp_wait_policy.hpp>
#include <fulgur/trainer/profilers/profiler_kind.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace fulgur::check {

/// limit_*_batches: a fraction in [0, 1] or a batch count >= 0.
struct BatchLimit {
  Result operator()(const CountOrFraction& limit) const {
    const bool ok = limit.is_fraction() ? limit.value() >= 0.0 && limit.value() <= 1.0 : limit.count() >= 0;
    return ok ? std::nullopt : Result("must be a fraction in [0, 1] or a batch count >= 0");
  }
};

/// val_check_interval: a fraction in (0, 1] or a batch count >= 1.
struct CheckInterval {
  Result operator()(const CountOrFraction& interval) const {
    const bool ok = interval.is_fraction() ? interval.value() > 0.0 && interval.value() <= 1.0 : interval.count() >= 1;
    return ok ? std::nullopt : Result("must be a fraction in (0, 1] or a batch count >= 1");
  }
};

}  // namespace fulgur::check

namespace fulgur {

// clang-format off
#define FULGUR_TRAINER_OPTIONS(X)                                                                              \
  X(std::optional<int64_t>, max_epochs, std::nullopt,                                                         \
    "epochs to train; -1 = no limit; null = 1000 unless max_steps is set", fulgur::check::NoLimitOrAtLeast{0}) \
  X(int64_t, max_steps, -1, "optimizer steps to train; -1 = no limit", fulgur::check::NoLimitOrAtLeast{0})     \
  X(int64_t, min_epochs, 0, "epochs to train at least (early stopping waits)", fulgur::check::AtLeast{0})      \
  X(fulgur::AcceleratorKind, accelerator, fulgur::AcceleratorKind::Auto,                                      \
    "auto (a GPU if there is one), cpu, gpu (or cuda)", fulgur::check::Any{})                                  \
  X(std::string, devices, "auto", "devices (processes) per node: auto, a count, or -1 for all",              \
    fulgur::check::NotEmpty{})                                                                                \
  X(int64_t, num_nodes, 1, "machines the run spans", fulgur::check::AtLeast{1})                               \
  X(fulgur::StrategyKind, strategy, fulgur::StrategyKind::Auto,                                               \
    "auto (single_device for one process, else ddp), single_device, ddp, horovod, fsdp, model_parallel (pp x dp x cp x tp mesh)", fulgur::check::Any{})     \
  X(fulgur::PrecisionMode, precision, fulgur::PrecisionMode::Full32,                                          \
    "32-true (or 32), bf16-mixed, 16-mixed (GPU only)", fulgur::check::Any{})                                  \
  X(int64_t, accumulate_grad_batches, 1, "batches per optimizer step", fulgur::check::AtLeast{1})            \
  X(std::optional<double>, gradient_clip_val, std::nullopt, "clip gradients at this value (null = off)",      \
    fulgur::check::AtLeast{0})                                                                                \
  X(fulgur::ClipAlgorithm, gradient_clip_algorithm, fulgur::ClipAlgorithm::Norm,                              \
    "norm (total 2-norm) or value (element-wise clamp)", fulgur::check::Any{})                                 \
  X(fulgur::CountOrFraction, val_check_interval, 1.0,                                                         \
    "validate every fraction of the training epoch (0.25 = four times) or every N batches",                  \
    fulgur::check::CheckInterval{})                                                                           \
  X(std::optional<int64_t>, check_val_every_n_epoch, 1,                                                       \
    "validate every N epochs; null = by val_check_interval across epochs", fulgur::check::AtLeast{1})         \
  X(fulgur::CountOrFraction, limit_train_batches, 1.0, "fraction or number of training batches per epoch",    \
    fulgur::check::BatchLimit{})                                                                              \
  X(fulgur::CountOrFraction, limit_val_batches, 1.0, "fraction or number of validation batches",              \
    fulgur::check::BatchLimit{})                                                                              \
  X(fulgur::CountOrFraction, limit_test_batches, 1.0, "fraction or number of test batches",                   \
    fulgur::check::BatchLimit{})                                                                              \
  X(fulgur::CountOrFraction, limit_predict_batches, 1.0, "fraction or number of predict batches",             \
    fulgur::check::BatchLimit{})                                                                              \
  X(int64_t, fast_dev_run, 0, "n > 0 runs n batches of every loop once, without logging (true = 1)",         \
    fulgur::check::AtLeast{0})                                                                                \
  X(int64_t, num_sanity_val_steps, 2, "validation batches run before training; -1 = all",                     \
    fulgur::check::NoLimitOrAtLeast{0})                                                                       \
  X(int64_t, log_every_n_steps, 50, "how often training steps are sent to the loggers",                       \
    fulgur::check::AtLeast{1})                                                                                \
  X(int64_t, stop_check_every_n_steps, 10,                                                                    \
    "with several processes: optimizer steps between the ranks' agreement on stopping (a signal, a Timer) "   \
    "and at every epoch's end; 1 = every step",                                                               \
    fulgur::check::AtLeast{1})                                                                                \
  X(bool, deterministic, false, "deterministic algorithms only", fulgur::check::Any{})                        \
  X(bool, cuda_graph, false,                                                                                  \
    "GPU: capture the training step (forward, backward, SGD step) into a CUDA graph after cuda_graph_warmup "  \
    "eager steps and replay it; a step that cannot be captured runs eager with one line saying why",          \
    fulgur::check::Any{})                                                                                     \
  X(int64_t, cuda_graph_warmup, 3, "eager training steps before the CUDA-graph capture",                      \
    fulgur::check::AtLeast{1})                                                                                \
  X(bool, activation_checkpointing, false,                                                                    \
    "recompute each ShardedUnit's forward during backward instead of keeping its activations (any strategy): " \
    "less memory for one more forward per step",                                                              \
    fulgur::check::Any{})                                                                                     \
  X(bool, benchmark, false, "cuDNN benchmark mode (during runs; the program's own is back after)",            \
    fulgur::check::Any{})                                                                                     \
  X(bool, auto_requeue, true,                                                                                 \
    "after a SIGUSR1 stop under SLURM, rank 0 requeues the job (scontrol requeue), as Lightning's "           \
    "SLURMEnvironment(auto_requeue=True)",                                                                    \
    fulgur::check::Any{})                                                                                     \
  X(fulgur::OpenMPWaitPolicy, openmp_wait_policy, fulgur::OpenMPWaitPolicy::Launched,                       \
    "where OMP_WAIT_POLICY is unset, idle OpenMP threads sleep (PASSIVE) in: launched: the ranks the Trainer " \
    "starts; passive: those, and a warning when this program itself started without the variable (the "       \
    "runtime reads it at start-up; fulgur never restarts a program); environment: nowhere (the runtime spins)", \
    fulgur::check::Any{})                                                                                     \
  X(std::string, default_root_dir, ".", "where the run folder and checkpoints go", fulgur::check::NotEmpty{}) \
  X(bool, enable_progress_bar, true, "show the progress bar (rank 0)", fulgur::check::Any{})                  \
  X(bool, enable_model_summary, true, "print the model's modules and parameter counts at fit start (rank 0)",   \
    fulgur::check::Any{})                                                                                     \
  X(std::optional<fulgur::ProfilerKind>, profiler, std::nullopt,                                              \
    "simple (time per action, <run>/profile.txt) or pytorch (LibTorch's profiler, a Chrome trace); null = off", \
    fulgur::check::Any{})                                                                                     \
  X(bool, enable_checkpointing, true, "add a ModelCheckpoint (last.ckpt) unless one is given",                \
    fulgur::check::Any{})                                                                                     \
  X(bool, async_checkpoint, false,                                                                            \
    "checkpoints are written by a background thread: the saving step only copies the state to host buffers", \
    fulgur::check::Any{})                                                                                     \
  X(bool, logger, true,                                                                                       \
    "write the run folder (CSV); in a config also logger names (csv, tensorboard, wandb, or one registered "    \
    "in LoggerRegistry), a list, or class_path entries",                                                      \
    fulgur::check::Any{})                                                                                     \
  X(double, process_group_timeout, 1800.0, "seconds a collective may wait for a peer before the run fails",   \
    fulgur::check::Positive{})                                                                                \
  X(fulgur::ProcessGroupBackend, process_group_backend, fulgur::ProcessGroupBackend::Auto,                    \
    "collectives' backend: auto (mpi when mpi_communicator is set; else nccl on the GPU, gloo on the CPU), "  \
    "gloo (also CUDA tensors: several ranks may share one GPU), nccl (GPU only), mpi (the MPI that started "   \
    "the ranks, or mpi_communicator; ranks may share a GPU)",                                                 \
    fulgur::check::Any{})                                                                                     \
  X(int64_t, mpi_communicator, -1,                                                                            \
    "the program's MPI communicator, as its Fortran handle (MPI_Comm_c2f(comm)): its ranks are the run's, "     \
    "over process_group_backend mpi; -1: the launcher's ranks (MPICH's handles are negative numbers too)",  \
    (fulgur::check::Between{INT32_MIN, INT32_MAX}))                                                           \
  X(int64_t, node_rank, 0, "this machine's index when fulgur starts several nodes", fulgur::check::AtLeast{0}) \
  X(bool, use_distributed_sampler, true, "give each process its share of the data", fulgur::check::Any{})    \
  X(std::string, timeline, "", "Chrome-trace JSON of every gradient collective (ddp, horovod) and pipeline pass; empty = off",  \
    fulgur::check::Any{})                                                                                     \
  X(fulgur::DDPOptions, ddp, {}, "strategy ddp", fulgur::check::Any{})                                        \
  X(fulgur::HorovodOptions, horovod, {}, "strategy horovod", fulgur::check::Any{})                            \
  X(fulgur::FSDPOptions, fsdp, {}, "strategy fsdp (and model_parallel's dp)", fulgur::check::Any{})           \
  X(fulgur::ModelParallelOptions, model_parallel, {}, "strategy model_parallel", fulgur::check::Any{})
// clang-format on

/// What the user asks of a Trainer, with Lightning's names and defaults.
/// Chainable setters in the torch::nn options style:
///
///   TrainerOptions().max_epochs(10).accelerator(AcceleratorKind::Cuda).devices(4).num_nodes(16)
///       .strategy(StrategyKind::DDP).precision(PrecisionMode::BF16Mixed)
///
/// Each field is declared once above (name, default, doc, check); the YAML
/// reader, --print_config, hparams.yaml and the table in docs/user-guide.md come from
/// it. TrainerConfig::resolve() checks them and decides every "auto", once,
/// before the Trainer has any side effect.
struct TrainerOptions {
  FULGUR_OPTIONS(TrainerOptions, FULGUR_TRAINER_OPTIONS)

  TrainerOptions& devices(int64_t count) {
    devices_ = std::to_string(count);
    return *this;
  }
};

}  // namespace fulgur
