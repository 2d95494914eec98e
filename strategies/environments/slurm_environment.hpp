#pragma once

#include <fulgur/strategies/environments/cluster_environment.hpp>

namespace fulgur {

/// Processes started by `srun` (one task per device). Reads SLURM_PROCID
/// (global rank), SLURM_NTASKS (world size), SLURM_LOCALID, SLURM_NODEID,
/// SLURM_NNODES (all required) and the tasks-per-node count.
///
/// Tasks on this node (local_world_size) come from SLURM_NTASKS_PER_NODE
/// (set by --ntasks-per-node), else SLURM_TASKS_PER_NODE (always set by srun),
/// else SLURM_NTASKS / SLURM_NNODES. Both count variables may use SLURM's
/// compressed form "2(x3),1" (2 tasks on each of 3 nodes, then 1): when the
/// list covers exactly SLURM_NNODES nodes this node's entry is used; a list
/// with one count throughout ("2", "2(x4)") applies to any node count; any
/// other mismatch is an error rather than a guess.
///
/// Rendezvous, as Lightning does it: MASTER_ADDR if set, else the first host
/// of SLURM_NODELIST (or SLURM_JOB_NODELIST); MASTER_PORT if set, else
/// 15000 + SLURM_JOB_ID % 10000 (Lightning's "last four digits of the job id
/// + 15000"), so every task of a job derives the same port and concurrent
/// jobs rarely collide.
class SlurmEnvironment : public ClusterEnvironment {
 public:
  explicit SlurmEnvironment(const EnvLookup& env = process_environment());

  /// srun started this process: SLURM_NTASKS is set and SLURM_JOB_NAME is not
  /// "bash" or "interactive". The job-name rule is Lightning's: an
  /// interactive allocation (`salloc`, or `srun --pty bash`) also exports
  /// SLURM_NTASKS, but processes started by hand from that shell were not
  /// started by srun, and their SLURM_PROCID (if any) describes the shell,
  /// not them. Naming the job "interactive" opts out so that, say, torchrun
  /// inside the allocation is detected instead.
  static bool detect(const EnvLookup& env);
  /// Inside an allocation (SLURM_JOB_ID set) but not in an srun step (no
  /// SLURM_STEP_ID / SLURM_STEPID; the batch script itself does have
  /// SLURM_PROCID=0): the user probably forgot `srun`, and only one process
  /// will run.
  static bool in_allocation_without_srun(const EnvLookup& env);

  /// SLURM_CPUS_PER_TASK (set by --cpus-per-task), the CPUs SLURM gave each
  /// task; nullopt when unset. Throws naming the variable when it is not a
  /// count >= 1.
  static std::optional<int64_t> cpus_per_task(const EnvLookup& env);

  std::string name() const override { return "slurm"; }
  bool creates_processes_externally() const override { return true; }
  std::string world_size_source() const override;

  /// Tasks per node: the first count of SLURM_NTASKS_PER_NODE, else of
  /// SLURM_TASKS_PER_NODE; nullopt when neither is set.
  std::optional<int64_t> ntasks_per_node() const { return ntasks_per_node_; }
  /// The user passed --ntasks-per-node (SLURM_NTASKS_PER_NODE is set). With
  /// only --ntasks, SLURM may spread tasks unevenly over the nodes.
  bool ntasks_per_node_given() const { return ntasks_per_node_text_.has_value(); }
  /// SLURM_NTASKS_PER_NODE as written, e.g. "2(x3)", for messages.
  const std::optional<std::string>& ntasks_per_node_text() const { return ntasks_per_node_text_; }
  /// SLURM_JOB_ID as written; nullopt when unset.
  const std::optional<std::string>& job_id() const { return job_id_; }

 private:
  std::optional<int64_t> ntasks_per_node_;
  std::optional<std::string> ntasks_per_node_text_;
  std::optional<std::string> tasks_per_node_text_;  // SLURM_TASKS_PER_NODE
  std::optional<std::string> job_id_;
};

}  // namespace fulgur
