#include <fulgur/trainer/slurm_requeue.hpp>

#include <fmt/format.h>

#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdio>
#include <iostream>
#include <regex>
#include <stdexcept>

extern char** environ;

namespace fulgur {

std::optional<std::string> SlurmRequeue::job_id(const EnvLookup& env) {
  const auto array_job = env("SLURM_ARRAY_JOB_ID");
  const auto array_task = env("SLURM_ARRAY_TASK_ID");
  // A task of an array job has its own SLURM_JOB_ID, but scontrol names it
  // by array and task; requeueing the array id would requeue every task.
  if (array_job && array_task) return *array_job + "_" + *array_task;
  return env("SLURM_JOB_ID");
}

bool SlurmRequeue::is_valid_job_id(const std::string& id) {
  static const std::regex pattern("[0-9]+(_[0-9]+)?");
  return std::regex_match(id, pattern);
}

int SlurmRequeue::requeue(const std::string& id) {
  if (!is_valid_job_id(id)) {
    throw std::invalid_argument(fmt::format(
        "[SlurmRequeue::requeue] job id '{}' is not a SLURM job id (expected digits, or <array job>_<task>); "
        "nothing was run",
        id));
  }
  std::string program = "scontrol", verb = "requeue", job = id;
  char* argv[] = {program.data(), verb.data(), job.data(), nullptr};
  pid_t pid = 0;
  if (::posix_spawnp(&pid, "scontrol", nullptr, nullptr, argv, environ) != 0) return 127;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return 127;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

void SlurmRequeue::requeue_current_job() {
  const auto id = job_id();
  if (!id) return;  // not a SLURM job: stopping was all there was to do
  if (!is_valid_job_id(*id)) {
    std::cerr << fmt::format("fulgur: not requeueing: job id '{}' is not a SLURM job id", *id) << std::endl;
    return;
  }
  std::cerr << fmt::format("fulgur: requeueing SLURM job {} (scontrol requeue {})", *id, *id) << std::endl;
  if (const int code = requeue(*id); code != 0) {
    std::cerr << fmt::format("fulgur: scontrol requeue {} failed with exit code {}; the job was not requeued", *id,
                             code)
              << std::endl;
  }
}

}  // namespace fulgur
