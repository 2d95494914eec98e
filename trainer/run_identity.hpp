#pragma once

#include <fulgur/strategies/environments/cluster_environment.hpp>

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>

namespace fulgur {

/// How often this job was restarted: SLURM_RESTART_COUNT (requeued after the
/// time-limit warning, preempted, a node failure) plus
/// TORCHELASTIC_RESTART_COUNT (torchrun --max-restarts). A restarted job runs
/// the same command line again and should continue from the checkpoint its
/// previous attempt left. Throws std::invalid_argument "[restart_count] ..."
/// for a count that is not a non-negative integer.
int64_t restart_count(const EnvLookup& env = process_environment());

/// What a checkpoint records about the run that wrote it, so a restarted job
/// resumes only its own checkpoints: the job (SLURM_JOB_ID, else
/// TORCHELASTIC_RUN_ID, else none), the module's type, and a hash of its
/// hyper-parameters without seed_everything (the CLI draws a new seed for an
/// unseeded run on every attempt). Example:
/// "job=4242 module=N7LitDemo hparams=9f1c2d3e4b5a6978".
std::string run_identity(const YAML::Node& hparams, const std::string& module_type,
                         const EnvLookup& env = process_environment());

}  // namespace fulgur
