#pragma once

#include <fulgur/strategies/environments/cluster_environment.hpp>

#include <optional>
#include <string>

namespace fulgur {

/// Puts the running SLURM job back into the queue with
/// `scontrol requeue <id>`, so that a run stopped by SLURM's time-limit
/// warning (SIGUSR1) starts again and resumes from its last checkpoint.
/// For an array job the id is `<SLURM_ARRAY_JOB_ID>_<SLURM_ARRAY_TASK_ID>`
/// (only that task is requeued), otherwise SLURM_JOB_ID.
///
/// The id is checked against `^[0-9]+(_[0-9]+)?$` before anything runs, and
/// scontrol is started without a shell, so no variable can inject a command.
class SlurmRequeue {
 public:
  /// The id to requeue, from the job's variables; nullopt when this process
  /// is not part of a SLURM job (no SLURM_JOB_ID). The id is returned as
  /// found: check it with is_valid_job_id().
  static std::optional<std::string> job_id(const EnvLookup& env = process_environment());

  /// True when `id` fully matches `^[0-9]+(_[0-9]+)?$`.
  static bool is_valid_job_id(const std::string& id);

  /// Runs `scontrol requeue <id>` (scontrol from PATH) and waits for it.
  /// Returns its exit code (127: scontrol could not be started). Throws
  /// std::invalid_argument, without running anything, for an invalid id.
  static int requeue(const std::string& id);

  /// Requeues this process's job, if it is one, saying what it does on
  /// stderr; a bad id or a failed scontrol is reported, not thrown (the run
  /// already stopped cleanly).
  static void requeue_current_job();
};

}  // namespace fulgur
