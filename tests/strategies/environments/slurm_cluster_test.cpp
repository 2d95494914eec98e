// The SLURM workflow on a real one-node SLURM cluster (slurmctld + slurmd +
// munge on this machine), started by the ctest fixture slurm_cluster_start
// (scripts/slurm_cluster.sh start) and stopped by slurm_cluster_stop. The
// jobs are the example scripts in examples/slurm/, adapted only by sbatch
// options and the FULGUR_* environment variables they document: CPU, two
// processes, the demo digits.
//
// Three ctest entries run this file, so that none takes over 90 s: the
// test suites slurm_requeue_reference (the requeue case's uninterrupted
// run) and slurm_requeue_test (the requeue case, against that run), and
// slurm_cluster_test (the other cases); tests/CMakeLists.txt.
#include "support/test_support.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>

namespace slurm_cluster_test {

using fulgur::testing::read_file;
using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {

const std::string kSource = FULGUR_SOURCE_DIR;
const std::string kBinary = FULGUR_BINARY_DIR;

/// Fails (does not skip) when the cluster is not up, saying how to start it.
void require_cluster() {
  const auto ping = run_command("sinfo -h -o %T 2>&1", 30);
  INFO("sinfo: " << ping.output);
  REQUIRE_MESSAGE(ping.exit_code == 0,
                  "the local SLURM cluster is not running: ctest starts it with the slurm_cluster_start fixture, or "
                  "run `scripts/slurm_cluster.sh start` (root, Debian 12)");
}

/// `sbatch ...` for the example script `script`, on CPU with the demo digits:
/// the environment variables and sbatch options the script's comments document.
std::string sbatch(const std::filesystem::path& dir, const std::string& script, const std::string& env,
                   const std::string& options, const std::string& fulgur_args) {
  return "FULGUR_ACCELERATOR=cpu FULGUR_CONFIG=examples/cinic10/digits.yaml FULGUR_BUILD_DIR=" + kBinary + " " + env +
         " FULGUR_ARGS='--trainer.default_root_dir " + (dir / "runs").string() +
         " --trainer.enable_progress_bar false --test_after_fit false --data.num_workers 0 " + fulgur_args +
         "' sbatch --parsable --chdir=" + kSource + " --output=" + (dir / "job.out").string() +
         " --ntasks-per-node=2 --cpus-per-task=1 --gres=none " + options + " " + kSource + "/examples/slurm/" + script;
}

std::string job_output(const std::filesystem::path& dir) {
  return std::filesystem::exists(dir / "job.out") ? read_file(dir / "job.out") : "(no job output)";
}

std::string job_field(const std::string& job, const std::string& field) {
  const auto show = run_command("scontrol show job " + job, 30);
  const std::regex pattern(field + "=([^ \n]*)");
  std::smatch match;
  return std::regex_search(show.output, match, pattern) ? match[1].str() : "";
}

/// Waits until `done()` or `seconds` pass; returns done().
template <class Done>
bool wait_for(Done done, int seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  return done();
}

bool job_ended(const std::string& state) {
  return state == "COMPLETED" || state == "FAILED" || state == "CANCELLED" || state == "TIMEOUT" ||
         state == "NODE_FAIL" || state == "OUT_OF_MEMORY" || state == "BOOT_FAIL" || state == "DEADLINE";
}

struct JobResult {
  int exit_code = -1;  // as `sbatch --wait` gives it: the job's exit code, 1 if a signal ended it, -1 if not ended
  std::string output;  // sbatch's and then `scontrol show job`'s
};

/// `sbatch --parsable ...` without --wait, then polls every 0.5 s until the
/// job ends (cancelled after `seconds`). Not --wait: sbatch polls after
/// 2 s, 8 s and then every 32 s, so a job of 12 s returned after 42 s.
JobResult run_job(const std::string& sbatch_command, int seconds) {
  const auto submitted = run_command(sbatch_command, 60);
  JobResult result{-1, submitted.output};
  if (submitted.exit_code != 0) return result;
  const std::string job = std::regex_replace(submitted.output, std::regex("\\s+"), "");
  if (!wait_for([&] { return job_ended(job_field(job, "JobState")); }, seconds)) {
    run_command("scancel " + job, 30);
    result.output += "(job " + job + " did not end within " + std::to_string(seconds) + " s: cancelled)\n";
    return result;
  }
  const auto show = run_command("scontrol show job " + job, 30);
  result.output += show.output;
  std::smatch code;  // ExitCode=<exit status>:<signal>
  if (std::regex_search(show.output, code, std::regex("ExitCode=([0-9]+):([0-9]+)"))) {
    result.exit_code = std::stoi(code[1]) != 0 ? std::stoi(code[1]) : (std::stoi(code[2]) != 0 ? 1 : 0);
  }
  return result;
}

/// Starts a requeued job that SLURM holds (PENDING, Reason=BeginTime, for
/// about two minutes) at once instead of waiting. Not too early: slurmd
/// refuses a job whose credential is not newer, in whole seconds, than the
/// revocation of its previous attempt's, and the job then ends FAILED
/// (slurmctld.log: "Killing non-startable batch JobId=N: Job credential
/// revoked"). So only once the hold has been seen for two seconds and the
/// node is idle again (the previous attempt is cleaned up). The restarted
/// attempt gets 10 minutes: with the first one's minute it would be warned
/// again on a busy machine and requeue once more (as a real job does near
/// its limit), which the case has already shown.
class HeldJobStarter {
 public:
  explicit HeldJobStarter(std::string job) : job_(std::move(job)) {}

  /// Call repeatedly while waiting.
  void poll() {
    if (job_field(job_, "JobState") != "PENDING" || job_field(job_, "Reason") != "BeginTime") {
      held_since_.reset();
      return;
    }
    const auto now = std::chrono::steady_clock::now();
    if (!held_since_) held_since_ = now;
    if (now - *held_since_ < std::chrono::seconds(2)) return;
    if (run_command("sinfo -h -o %T", 30).output.rfind("idle", 0) != 0) return;
    run_command("scontrol update JobId=" + job_ + " StartTime=now TimeLimit=10", 30);
    held_since_.reset();
  }

 private:
  std::string job_;
  std::optional<std::chrono::steady_clock::time_point> held_since_;
};

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

/// Seconds since the epoch of a time as SLURM prints it (local time,
/// "2026-11-29T08:53:03" in scontrol, with ".288" in its logs).
double slurm_time(const std::string& text) {
  std::tm tm{};
  std::istringstream in(text);
  in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
  tm.tm_isdst = -1;
  double seconds = static_cast<double>(std::mktime(&tm));
  if (const auto dot = text.find('.'); dot != std::string::npos) seconds += std::stod("0" + text.substr(dot));
  return seconds;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

/// slurmctld checks time limits, and sends --signal's warning, only on a
/// timer of its own that ticks every 30 s (a constant; 30.1-30.2 s apart
/// here), logged at debug2. The time of the last tick, if logged.
std::optional<double> last_time_limit_tick() {
  const auto found = run_command("grep -a 'Testing job time limits' /var/log/slurm/slurmctld.log | tail -n 1", 30);
  std::smatch match;
  if (!std::regex_search(found.output, match, std::regex("^\\[([0-9T:.-]+)\\]"))) return std::nullopt;
  return slurm_time(match[1].str());
}

}  // namespace

TEST_CASE("slurm: sbatch examples/slurm/cinic10-1node.sbatch with --ntasks-per-node=2 trains on CPU") {
  require_cluster();
  TempDir dir("slurm-1node");
  const std::string short_run = "--trainer.max_epochs 2 --trainer.limit_train_batches 8 --trainer.limit_val_batches 4";
  const auto result = run_job(sbatch(dir.path(), "cinic10-1node.sbatch", "FULGUR_DEVICES=2", "", short_run), 300);
  const std::string out = job_output(dir.path());
  INFO(result.output);
  INFO(out);
  CHECK(result.exit_code == 0);
  // Rank 0 alone writes one run folder; both processes trained (DDP over srun's two tasks).
  const auto run = dir / "runs" / "fulgur_logs" / "version_0";
  REQUIRE(std::filesystem::exists(run / "metrics.csv"));
  CHECK_FALSE(std::filesystem::exists(dir / "runs" / "fulgur_logs" / "version_1"));
  const std::string metrics = read_file(run / "metrics.csv");
  CHECK(metrics.find("val_acc") != std::string::npos);
  CHECK(count(out, "fit: ") == 1);
  CHECK(count(out, "fulgur: run folder ") == 1);
}

TEST_CASE("slurm: FULGUR_BACKEND=mpi: srun --mpi=pmix starts the tasks and the collectives go over MPI") {
  require_cluster();
  TempDir dir("slurm-mpi");
  const std::string short_run = "--trainer.max_epochs 1 --trainer.limit_train_batches 8 --trainer.limit_val_batches 4";
  const auto result =
      run_job(sbatch(dir.path(), "cinic10-1node.sbatch", "FULGUR_DEVICES=2 FULGUR_BACKEND=mpi", "", short_run), 300);
  const std::string out = job_output(dir.path());
  INFO(result.output);
  INFO(out);
  CHECK(result.exit_code == 0);
  CHECK(std::filesystem::exists(dir / "runs" / "fulgur_logs" / "version_0" / "metrics.csv"));
  CHECK(count(out, "fit: ") == 1);
}

TEST_CASE("slurm: --ntasks-per-node=2 with --trainer.devices 4 fails before training, with the clear message") {
  require_cluster();
  TempDir dir("slurm-mismatch");
  const auto result = run_job(sbatch(dir.path(), "cinic10-1node.sbatch", "", "", ""), 120);
  const std::string out = job_output(dir.path());
  INFO(result.output);
  INFO(out);
  CHECK(result.exit_code != 0);
  // Each of the two tasks says why and exits 2; nothing was written.
  CHECK(count(out,
              "error: [TrainerConfig::resolve] num_nodes * devices = 1 * 4 = 4 does not match the world size 2 "
              "reported by SLURM_NTASKS=2 (SLURM_NNODES=1, SLURM_NTASKS_PER_NODE=2)") == 2);
  CHECK(out.find("Exited with exit code 2") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir / "runs"));
}

TEST_CASE("slurm: a batch script that forgets srun: refused with several tasks, warned with one") {
  require_cluster();
  TempDir dir("slurm-no-srun");
  const std::string program = kBinary + "/bin/cinic10 fit --config examples/cinic10/digits.yaml --trainer.accelerator "
                              "cpu --trainer.enable_progress_bar false --test_after_fit false --data.num_workers 0 "
                              "--trainer.max_epochs 1 --trainer.limit_train_batches 2 --trainer.limit_val_batches 1 "
                              "--trainer.default_root_dir " + (dir / "runs").string();
  const std::string submit = "sbatch --parsable --chdir=" + kSource + " --output=" + (dir / "job.out").string();
  const auto two = run_job(submit + " --ntasks-per-node=2 --cpus-per-task=1 --wrap '" + program +
                               " --trainer.devices 2'", 120);
  std::string out = job_output(dir.path());
  INFO(two.output);
  INFO(out);
  CHECK(two.exit_code != 0);
  CHECK(out.find("error: [TrainerConfig::resolve] SLURM_NTASKS=2 but this process was not started by srun (no "
                 "SLURM_STEP_ID), so the other tasks will never start") != std::string::npos);

  std::filesystem::remove(dir / "job.out");
  const auto one = run_job(submit + " --cpus-per-task=1 --wrap '" + program + "'", 120);
  out = job_output(dir.path());
  INFO(one.output);
  INFO(out);
  CHECK(one.exit_code == 0);
  CHECK(out.find("fulgur: warning: running inside a SLURM allocation (SLURM_JOB_ID is set) but not started by srun") !=
        std::string::npos);
}

// The requeue case's run, and the folder of its uninterrupted reference.
// With --time=1 --signal=USR1@20 SLURM's warning comes on the first tick of
// slurmctld's 30 s timer at least 10 s after the start; the case submits the
// job so that this is the first tick after it starts (10-15 s after the
// start). The run must outlast that on the fastest machine it meets: 800
// steps took about 20 s on two idle CPU ranks, but 13 s on a fast night of
// the same VM (2026-12-01: the job ended before the warning and the case
// failed). 1400 take 24 s there, after 1.5 s of start-up (3-5 s on a busy
// machine): the warning comes mid-run on a machine half as fast again.
const std::string kRequeueSteps = "--trainer.max_steps 1400 --trainer.max_epochs -1 --trainer.deterministic true";
const std::filesystem::path kReference = kBinary + "/Testing/slurm-requeue-reference";

// The same job as the requeue case's, without --time: what it must end equal
// to. A ctest entry of its own, a fixture of slurm_requeue_test's.
TEST_CASE("slurm requeue reference: the requeue case's job, uninterrupted" *
          doctest::test_suite("slurm_requeue_reference")) {
  require_cluster();
  std::filesystem::remove_all(kReference);
  std::filesystem::create_directories(kReference);
  const auto whole = run_job(sbatch(kReference, "cinic10-1node.sbatch", "FULGUR_DEVICES=2", "", kRequeueSteps), 600);
  INFO(whole.output);
  INFO(job_output(kReference));
  REQUIRE(whole.exit_code == 0);
  std::ofstream(kReference / "ended") << "0\n";  // what slurm_requeue_test looks for
}

// One job covers the whole path (SLURM's warning comes on a 30 s timer, so
// every job that waits for it costs about a minute): every rank stops at the
// same step, the job requeues itself, resumes in the same run folder and
// ends equal to the uninterrupted run of the case above.
TEST_CASE("slurm requeue: --time and --signal=USR1: ranks stop at one step, the job requeues, resumes and equals an "
          "uninterrupted run" * doctest::test_suite("slurm_requeue_test")) {
  require_cluster();
  REQUIRE_MESSAGE(std::filesystem::exists(kReference / "ended"),
                  "no uninterrupted run in " << kReference.string()
                                             << ": ctest runs slurm_requeue_reference first (a fixture)");
  TempDir dir("slurm-resume");
  // The warning is due 10 s after the start (--time=1 minus 20 s minus one
  // tick of 30 s) and comes on the first tick from then. Submitted 16 s
  // before the next tick, the job gets it on that tick, 10-15 s after its
  // start, instead of anywhere in 10-41 s (which needed 2000 steps in each
  // run); a job that started too late for that tick (over 6 s after it was
  // submitted, on a busy machine) is cancelled and submitted again before
  // the one after.
  run_command("scontrol setdebug debug2", 30);  // the ticks in the log (scripts/slurm_cluster.sh sets it too)
  std::string job;
  struct Cancel {
    const std::string& job;
    ~Cancel() {
      if (!job.empty()) run_command("scancel " + job, 30);
    }
  } cancel{job};
  for (int attempt = 0; attempt < 3 && job.empty(); ++attempt) {
    double tick = 0;  // the next tick (at the earliest)
    REQUIRE_MESSAGE(wait_for(
                        [&] {
                          const auto last = last_time_limit_tick();
                          if (last) tick = *last + 30;
                          return last && tick - now_s() >= 16;
                        },
                        45),
                    "no 'Testing job time limits' line in /var/log/slurm/slurmctld.log within 45 s");
    std::this_thread::sleep_for(std::chrono::duration<double>(tick - 16 - now_s()));
    const auto submitted = run_command(
        sbatch(dir.path(), "cinic10-1node.sbatch", "FULGUR_DEVICES=2", "--time=1 --signal=USR1@20", kRequeueSteps), 60);
    INFO(submitted.output);
    REQUIRE(submitted.exit_code == 0);
    job = std::regex_replace(submitted.output, std::regex("\\s+"), "");
    REQUIRE(wait_for([&] { return job_field(job, "JobState") != "PENDING"; }, 60));
    const double start = slurm_time(job_field(job, "StartTime"));
    // slurmctld compares whole seconds: due when time(NULL) >= start + 10.
    if (std::floor(tick) < start + 10) {
      MESSAGE("job " << job << " started " << tick - start << " s before the next tick, too late for it: cancelled");
      run_command("scancel " + job, 30);
      REQUIRE(wait_for([&] { return job_ended(job_field(job, "JobState")); }, 60));
      job.clear();
      std::filesystem::remove_all(dir / "runs");
      std::filesystem::remove(dir / "job.out");
    }
  }
  REQUIRE_MESSAGE(!job.empty(), "no job started in time for slurmctld's next tick in 3 tries");
  // Every requeue is held for two minutes by SLURM; start it sooner.
  HeldJobStarter starter(job);
  const bool finished = wait_for(
      [&] {
        starter.poll();
        return job_ended(job_field(job, "JobState"));
      },
      540);
  const std::string out = job_output(dir.path());
  INFO(out);
  REQUIRE(finished);
  CHECK(job_field(job, "JobState") == "COMPLETED");
  const int restarts = std::stoi(job_field(job, "Restarts"));
  CHECK(restarts >= 1);

  // The first attempt: both ranks stopped after the same step, and the job requeued itself.
  std::smatch stop;
  REQUIRE(std::regex_search(out, stop, std::regex("rank 0: SIGUSR1 received, stopping after step ([0-9]+)")));
  CHECK(out.find("rank 1: SIGUSR1 received, stopping after step " + stop[1].str() + "\n") != std::string::npos);
  CHECK(out.find("fulgur: requeueing SLURM job " + job + " (scontrol requeue " + job + ")") != std::string::npos);
  // Every later attempt continues from the checkpoint the one before wrote
  // when it stopped, in the same run folder: a resumed fit restores the CSV
  // logger's version from the checkpoint, so there is no version_1.
  const auto run = dir / "runs" / "fulgur_logs" / "version_0";
  CHECK(count(out, "fulgur: run folder " + run.string() + "\n") == static_cast<size_t>(restarts) + 1);
  CHECK(count(out, "fulgur: restarted job: resuming from " + (run / "checkpoints" / "last.ckpt").string() + "\n") ==
        static_cast<size_t>(restarts));
  CHECK_FALSE(std::filesystem::exists(dir / "runs" / "fulgur_logs" / "version_1"));

  // The final checkpoints' state_dicts, compared in Python torch.
  const std::string compare = std::string(FULGUR_PYTHON) + " -c \"import glob,sys,torch\n"
      "last=lambda d: sorted(glob.glob(d+'/runs/fulgur_logs/version_*/checkpoints/last.ckpt'), key=lambda p: int(p.split('version_')[1].split('/')[0]))[-1]\n"
      "a=torch.load(last(sys.argv[1]),weights_only=True)['state_dict']; b=torch.load(last(sys.argv[2]),weights_only=True)['state_dict']\n"
      "assert a.keys()==b.keys(); bad=[k for k in a if not torch.equal(a[k],b[k])]; print('differ:',bad); sys.exit(1 if bad else 0)\" " +
      dir.path().string() + " " + kReference.string();
  const auto compared = run_command(compare, 120);
  INFO(compared.output);
  CHECK(compared.exit_code == 0);
}

}  // namespace slurm_cluster_test
