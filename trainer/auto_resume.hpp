#pragma once

#include <fulgur/strategies/cluster_environment.hpp>

#include <filesystem>
#include <optional>
#include <string>

namespace fulgur {

/// Where a restarted job resumes from when the user did not say.
///
/// A job that SLURM restarted (SLURM_RESTART_COUNT > 0: requeued after the
/// time-limit warning, preempted, or a node failure) or that torchrun
/// restarted (TORCHELASTIC_RESTART_COUNT > 0) runs the same command line
/// again; it should continue from the checkpoint the previous attempt left,
/// not start over. Returns the newest `version_<N>/checkpoints/last.ckpt`
/// under `logs_root` (the logger's folder holding the version_<N> run
/// folders), choosing the highest N that has one. With the CSV logger the
/// resumed attempt continues the checkpoint's version folder (the logger's
/// version is in the checkpoint), with a logger that keeps no state it gets
/// a new one; either way the highest N with a last.ckpt is the previous
/// attempt's. Without any version folder holding one, `logs_root/checkpoints/
/// last.ckpt` (a run without a logger: its run folder is default_root_dir).
///
/// Returns nullopt when `ckpt_path` is given (the user's choice wins), when
/// this is not a restart, or when no earlier attempt left a last.ckpt (it
/// failed before its first checkpoint: start from scratch). Throws
/// std::invalid_argument "[auto_resume_checkpoint] ..." for a restart count
/// that is not a non-negative integer.
std::optional<std::filesystem::path> auto_resume_checkpoint(const std::optional<std::string>& ckpt_path,
                                                            const std::filesystem::path& logs_root,
                                                            const EnvLookup& env = process_environment());

}  // namespace fulgur
