// Stopping on SIGUSR1/SIGTERM: the handler's flag, the agreed stop in one
// process and across two real DDP ranks, the SLURM requeue command, the
// automatic-resume decision and the SLURM_CPUS_PER_TASK defaults.
#include "support/probe_commands.hpp"
#include "support/test_support.hpp"
#include "support/tiny_modules.hpp"

#include <fulgur/datamodules/loading/default_num_workers.hpp>
#include <fulgur/strategies/environments/slurm_environment.hpp>
#include <fulgur/trainer/run_identity.hpp>
#include <fulgur/trainer/connectors/signal_connector.hpp>
#include <fulgur/trainer/slurm_requeue.hpp>

#include <doctest/doctest.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>

namespace signal_stop_test {

using namespace fulgur;
using fulgur::testing::quiet_options;
using fulgur::testing::read_file;
using fulgur::testing::RegressionData;
using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {

using Vars = std::map<std::string, std::string>;

EnvLookup fake_env(Vars vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

/// Sets an environment variable for one scope and puts the old value back.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

/// A `scontrol` that only records its arguments, first on PATH for one scope.
class FakeScontrol {
 public:
  explicit FakeScontrol(const TempDir& dir, int exit_code = 0)
      : calls_(dir / "scontrol-calls"),
        path_("PATH", dir.path().string() + ":" + (std::getenv("PATH") ? std::getenv("PATH") : "")) {
    const auto script = dir / "scontrol";
    std::ofstream(script) << "#!/bin/sh\necho \"$@\" >> '" << calls_.string() << "'\nexit " << exit_code << "\n";
    std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  }
  std::string calls() const { return std::filesystem::exists(calls_) ? read_file(calls_) : ""; }

 private:
  std::filesystem::path calls_;
  ScopedEnv path_;
};

/// Raises `signal` in itself during training step `at_step` (0-based).
class SignallingModule : public fulgur::testing::RecordingModule {
 public:
  SignallingModule(int signal, int64_t at_step) : signal_(signal), at_step_(at_step) {}
  torch::Tensor training_step(const Batch& batch, int64_t batch_idx) override {
    if (trainer()->state().global_step() == at_step_) std::raise(signal_);
    return RecordingModule::training_step(batch, batch_idx);
  }
  int signal_;
  int64_t at_step_;
};

}  // namespace

TEST_CASE("SignalConnector: installs nothing until a run begins; a malformed grace period is refused") {
  struct sigaction before {};
  ::sigaction(SIGTERM, nullptr, &before);
  SignalConnector connector;
  struct sigaction after {};
  ::sigaction(SIGTERM, nullptr, &after);
  CHECK(reinterpret_cast<void*>(after.sa_handler) == reinterpret_cast<void*>(before.sa_handler));
  CHECK(connector.received() == 0);
  connector.begin_run(/*fitting=*/true);
  std::raise(SIGUSR1);  // would end the process without the handler
  CHECK(connector.received() == SIGUSR1);
  connector.end_run();
  CHECK(connector.received() == 0);
  ::sigaction(SIGTERM, nullptr, &after);
  CHECK(reinterpret_cast<void*>(after.sa_handler) == reinterpret_cast<void*>(before.sa_handler));
  CHECK(std::string(SignalConnector::name(SIGUSR1)) == "SIGUSR1");
  CHECK(std::string(SignalConnector::name(SIGTERM)) == "SIGTERM");
}

TEST_CASE("signal stop: one process stops after the step the signal arrived in, ignoring min_epochs") {
  TempDir dir("signal-stop-single");
  for (const int signal : {SIGUSR1, SIGTERM}) {
    SignallingModule model(signal, /*at_step=*/3);
    RegressionData data(10, 2);
    Trainer trainer(quiet_options(dir.path()).max_epochs(5).min_epochs(5).logger(false), {}, {}, Platform{});
    trainer.fit(model, data);
    CHECK(trainer.state().stop_signal() != 0);
    CHECK(trainer.state().stop_signal() == signal);
    CHECK(trainer.state().global_step() == 4);
    CHECK(model.count("training_step") == 4);
    CHECK(model.count("on_fit_end") == 1);  // the normal stop path, not an exception
  }
  // The next fit starts with a clean slate.
  fulgur::testing::RecordingModule model;
  RegressionData data(3, 1);
  Trainer trainer(quiet_options(dir.path()).max_epochs(1).logger(false), {}, {}, Platform{});
  trainer.fit(model, data);
  CHECK(trainer.state().stop_signal() == 0);
  CHECK(trainer.state().global_step() == 3);
}

TEST_CASE("signal stop: never inside a gradient-accumulation window") {
  TempDir dir("signal-stop-accumulate");
  SignallingModule model(SIGUSR1, /*at_step=*/1);  // arrives during batch 3 or 4 (step 1 spans batches 3-5)
  RegressionData data(12, 0);
  Trainer trainer(quiet_options(dir.path()).max_epochs(3).accumulate_grad_batches(3).logger(false), {}, {}, Platform{});
  trainer.fit(model, data);
  CHECK(trainer.state().stop_signal() == SIGUSR1);
  CHECK(trainer.state().global_step() == 2);
  CHECK(model.count("training_step") == 6);
}

TEST_CASE("signal stop: SIGUSR1 in a SLURM job requeues it through scontrol; SIGTERM does not") {
  TempDir dir("signal-stop-requeue");
  FakeScontrol scontrol(dir);
  ScopedEnv job("SLURM_JOB_ID", "4242");
  {
    SignallingModule model(SIGTERM, 1);
    RegressionData data(4, 0);
    Trainer trainer(quiet_options(dir.path()).max_epochs(1).logger(false), {}, {}, Platform{});
    trainer.fit(model, data);
    CHECK(trainer.state().stop_signal() == SIGTERM);
    CHECK(scontrol.calls().empty());
  }
  SignallingModule model(SIGUSR1, 1);
  RegressionData data(4, 0);
  Trainer trainer(quiet_options(dir.path()).max_epochs(1).logger(false), {}, {}, Platform{});
  trainer.fit(model, data);
  CHECK(trainer.state().stop_signal() == SIGUSR1);
  CHECK(scontrol.calls() == "requeue 4242\n");
}

TEST_CASE("SlurmRequeue: job ids, array jobs, validation, and the command that runs") {
  CHECK(SlurmRequeue::job_id(fake_env({})) == std::nullopt);
  CHECK(SlurmRequeue::job_id(fake_env({{"SLURM_JOB_ID", "77"}})) == "77");
  CHECK(SlurmRequeue::job_id(fake_env(
            {{"SLURM_JOB_ID", "80"}, {"SLURM_ARRAY_JOB_ID", "77"}, {"SLURM_ARRAY_TASK_ID", "3"}})) == "77_3");
  // Only one of the pair: not an array task.
  CHECK(SlurmRequeue::job_id(fake_env({{"SLURM_JOB_ID", "80"}, {"SLURM_ARRAY_JOB_ID", "77"}})) == "80");

  for (const char* good : {"0", "123456", "77_3", "1_0"}) CHECK(SlurmRequeue::is_valid_job_id(good));
  for (const char* bad : {"", "_", "12_", "_3", "1_2_3", "12a", "12 ", " 12", "12;reboot", "$(id)", "12\n", "-1",
                          "1-3", "1,2", "12_3\n"}) {
    CAPTURE(bad);
    CHECK_FALSE(SlurmRequeue::is_valid_job_id(bad));
  }

  TempDir dir("slurm-requeue-fake");
  {
    FakeScontrol scontrol(dir);
    CHECK(SlurmRequeue::requeue("77_3") == 0);
    CHECK(SlurmRequeue::requeue("91") == 0);
    CHECK(scontrol.calls() == "requeue 77_3\nrequeue 91\n");
    CHECK_THROWS_WITH_AS(SlurmRequeue::requeue("91; touch x"),
                         "[SlurmRequeue::requeue] job id '91; touch x' is not a SLURM job id (expected digits, or "
                         "<array job>_<task>); nothing was run",
                         std::invalid_argument);
    CHECK(scontrol.calls() == "requeue 77_3\nrequeue 91\n");
  }
  TempDir failing_dir("slurm-requeue-fails");
  FakeScontrol failing(failing_dir, 3);
  CHECK(SlurmRequeue::requeue("5") == 3);
}

TEST_CASE("restart_count and run_identity: what a restarted job reads and what its checkpoints record") {
  CHECK(restart_count(fake_env({})) == 0);
  CHECK(restart_count(fake_env({{"SLURM_RESTART_COUNT", "2"}, {"TORCHELASTIC_RESTART_COUNT", "1"}})) == 3);
  CHECK_THROWS_WITH_AS(restart_count(fake_env({{"SLURM_RESTART_COUNT", "one"}})),
                       "[restart_count] SLURM_RESTART_COUNT='one' is not a restart count (a non-negative integer)",
                       std::invalid_argument);

  YAML::Node hparams;
  hparams["model"]["lr"] = 0.1;
  hparams["seed_everything"] = 7;
  const std::string id = run_identity(hparams, "M", fake_env({{"SLURM_JOB_ID", "42"}}));
  CHECK(id.rfind("job=42 module=M hparams=", 0) == 0);
  YAML::Node reseeded = YAML::Clone(hparams);
  reseeded["seed_everything"] = 8;  // an unseeded CLI run draws a new seed on every attempt
  CHECK(run_identity(reseeded, "M", fake_env({{"SLURM_JOB_ID", "42"}})) == id);
  CHECK(run_identity(hparams, "M", fake_env({{"SLURM_JOB_ID", "43"}})) != id);
  CHECK(run_identity(hparams, "Other", fake_env({{"SLURM_JOB_ID", "42"}})) != id);
  YAML::Node changed = YAML::Clone(hparams);
  changed["model"]["lr"] = 0.2;
  CHECK(run_identity(changed, "M", fake_env({{"SLURM_JOB_ID", "42"}})) != id);
  CHECK(run_identity(hparams, "M", fake_env({{"TORCHELASTIC_RUN_ID", "r1"}})).rfind("job=r1 ", 0) == 0);
}

TEST_CASE("auto-resume: a restarted job resumes its own newest checkpoint, another job's is left alone") {
  TempDir dir("auto-resume");
  RegressionData data(5, 1);
  auto fit = [&](const std::string& job, const std::string& restarts, double lr, int64_t epochs) {
    ScopedEnv job_id("SLURM_JOB_ID", job);
    ScopedEnv restart("SLURM_RESTART_COUNT", restarts);
    fulgur::testing::RecordingModule model(4, lr);
    model.save_hyperparameters({{"lr", lr}});
    Trainer trainer(quiet_options(dir.path()).max_epochs(epochs), {}, {}, Platform{});
    trainer.fit(model, data);
    return std::make_pair(trainer.state().global_step(), model.count("training_step"));
  };
  CHECK(fit("11", "0", 0.1, 1) == std::make_pair<int64_t, int64_t>(5, 5));
  // Requeued (same job, same config): continues from epoch 1, running only epoch 2's steps.
  CHECK(fit("11", "1", 0.1, 2) == std::make_pair<int64_t, int64_t>(10, 5));
  // Another job in the same folder that happens to be a restart: starts fresh.
  CHECK(fit("12", "1", 0.1, 1) == std::make_pair<int64_t, int64_t>(5, 5));
  // The same job with another config (a new model): starts fresh too.
  CHECK(fit("11", "2", 0.05, 1) == std::make_pair<int64_t, int64_t>(5, 5));
}

TEST_CASE("SLURM_CPUS_PER_TASK: default loader workers and compute threads") {
  CHECK(default_num_workers(2, std::nullopt) == 2);
  CHECK(default_num_workers(2, std::string("6")) == 6);
  for (const char* bad : {"0", "-1", "x", "", "4 "}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(default_num_workers(2, std::string(bad)), std::invalid_argument);
  }
  CHECK_THROWS_WITH_AS(default_num_workers(2, std::string("0")),
                       "[default_num_workers] SLURM_CPUS_PER_TASK='0' is not a CPU count >= 1", std::invalid_argument);

  CHECK(SlurmEnvironment::cpus_per_task(fake_env({})) == std::nullopt);
  CHECK(SlurmEnvironment::cpus_per_task(fake_env({{"SLURM_CPUS_PER_TASK", "3"}})) == 3);
  CHECK_THROWS_WITH_AS(SlurmEnvironment::cpus_per_task(fake_env({{"SLURM_CPUS_PER_TASK", "0"}})),
                       "[SlurmEnvironment::cpus_per_task] SLURM_CPUS_PER_TASK='0' must be at least 1",
                       std::invalid_argument);

  Platform platform;
  platform.cpus_per_task = 1;
  {
    TempDir dir("cpus-per-task");
    Trainer trainer(quiet_options(dir.path()).logger(false), {}, {}, platform);
    CHECK(trainer.config().num_threads == 1);  // set during runs (tests/trainer/guest_test.cpp)
  }
  CHECK(TrainerConfig::resolve(TrainerOptions(), Platform{}).num_threads == std::nullopt);
}

namespace {

std::string probe_fit(const TempDir& dir, const std::string& extra) {
  return fulgur::testing::ddp_probe_fit(dir.path(),
                                        "--trainer.max_epochs 4 --model.stop_file " + (dir / "stop").string() + " " + extra);
}

/// "<global_step> <stop_signal>" as written by the probe's rank `rank`.
std::string stop_record(const TempDir& dir, int rank) {
  const auto path = dir / ("stop." + std::to_string(rank));
  return std::filesystem::exists(path) ? read_file(path) : "(no file)";
}

}  // namespace

TEST_CASE("signal stop: two DDP ranks, SIGUSR1 to rank 1 only: both stop after the same step, exit 138") {
  TempDir dir("signal-stop-ddp");
  // 64 samples, 8 per rank and batch: 4 steps per epoch. Rank 1 is signalled
  // during step 5 (0-based); the ranks agree every 3 steps (and at epoch
  // ends, after steps 4 and 8), so both must stop with global_step 6, mid-epoch.
  const auto result = run_command(
      probe_fit(dir, "--trainer.devices 2 --data.batch_size 8 --model.signal_rank 1 --model.signal_step 5 "
                     "--trainer.stop_check_every_n_steps 3"),
      180);
  INFO(result.output);
  CHECK(result.exit_code == 128 + SIGUSR1);
  CHECK(stop_record(dir, 0) == "6 10\n");
  CHECK(stop_record(dir, 1) == "6 10\n");
  CHECK(result.output.find("rank 0: SIGUSR1 received, stopping after step 6") != std::string::npos);
  CHECK(result.output.find("rank 1: SIGUSR1 received, stopping after step 6") != std::string::npos);
}

TEST_CASE("signal stop: SIGTERM from outside to one torchrun rank stops both at the same step, exit 143") {
  TempDir dir("signal-stop-torchrun");
  // Slow steps (0.2 s, 32 of them) so the signal lands mid-run; the rank's
  // pid comes from the file it writes when training starts.
  const std::string torchrun =
      std::string(FULGUR_SOURCE_DIR) + "/.venv/bin/torchrun --no-python --nproc-per-node 2 --master-port " +
      std::to_string(fulgur::testing::free_port()) + " ";
  const std::string pid_file = (dir / "pid").string();
  const std::string command =
      "( " + torchrun +
      probe_fit(dir, "--trainer.devices 2 --data.batch_size 8 --model.step_seconds 0.2 --trainer.max_epochs 8 "
                     "--model.pid_file " + pid_file) +
      " > " + (dir / "log").string() + " 2>&1; echo $? > " + (dir / "rc").string() + " ) & " +
      "for i in $(seq 300); do [ -f " + pid_file + ".1 ] && break; sleep 0.1; done; sleep 1; " +
      "kill -TERM $(cat " + pid_file + ".1); wait";
  const auto result = run_command(command, 180);
  const std::string log = std::filesystem::exists(dir / "log") ? read_file(dir / "log") : "";
  INFO(result.output);
  INFO(log);
  REQUIRE(std::filesystem::exists(dir / "rc"));
  // torchrun reports a failed worker with exit code 1; each rank's own code is in its log.
  CHECK(read_file(dir / "rc") != "0\n");
  CHECK(log.find("rank 0: SIGTERM received, stopping after step") != std::string::npos);
  const std::string rank0 = stop_record(dir, 0);
  CHECK(rank0 == stop_record(dir, 1));
  CHECK(rank0.size() > 3);
  CHECK(rank0.substr(rank0.size() - 4) == " 15\n");
  const int64_t step = std::atoll(rank0.c_str());
  CHECK(step > 0);
  CHECK(step < 32);
}

TEST_CASE("signal stop: an own main() returning trainer.exit_code() exits as the CLI does: 143 after SIGTERM") {
  TempDir dir("own-main-exit");
  // The GAN example's main() ends with `return trainer.exit_code();`. It is
  // signalled once its run folder is announced (fit handles signals from its
  // start on), long before its 1000 epochs end.
  const std::string gan = std::string(FULGUR_BINARY_DIR) + "/bin/gan";
  const std::string log = (dir / "log").string();
  const std::string command = gan + " --max_epochs 1000 --default_root_dir " + dir.path().string() + " > " + log + " 2>&1 & pid=$!; " +
                              "for i in $(seq 600); do grep -q 'run folder' " + log + " && break; sleep 0.1; done; " +
                              "kill -TERM $pid; wait $pid; echo \"rc=$?\"";
  const auto result = run_command(command, 180);
  const std::string output = read_file(dir / "log");
  INFO(result.output);
  INFO(output);
  CHECK(result.output.find("rc=143") != std::string::npos);
  CHECK(output.find("rank 0: SIGTERM received, stopping after step") != std::string::npos);
  CHECK(std::filesystem::exists(dir / "fulgur_logs" / "version_0" / "checkpoints" / "last.ckpt"));
}

TEST_CASE("own main(): a peer killed mid-run fails the program with one line naming the rank, as under the CLI") {
  TempDir dir("own-main-dead-peer");
  const std::string gan = std::string(FULGUR_BINARY_DIR) + "/bin/gan";
  const std::string log = (dir / "log").string();
  // The Trainer started rank 1 as a child of this process; kill it once training runs.
  const std::string command = gan + " --devices 2 --strategy ddp --max_epochs 1000 --default_root_dir " + dir.path().string() +
                              " > " + log + " 2>&1 & pid=$!; " + "for i in $(seq 600); do grep -q 'run folder' " + log +
                              " && break; sleep 0.1; done; sleep 0.5; kill -KILL $(pgrep -P $pid); wait $pid; "
                              "echo \"rc=$?\"";
  const auto result = run_command(command, 180);
  const std::string output = read_file(dir / "log");
  INFO(result.output);
  INFO(output);
  CHECK(result.output.find("rc=1\n") != std::string::npos);
  CHECK(output.find("[SubprocessLauncher] rank 1 was killed by signal 9") != std::string::npos);
}

TEST_CASE("signal stop: SIGTERM or SIGINT while a rank is held in a collective ends every rank, 143 or 130") {
  // Rank 1 sleeps in its third step, so rank 0 waits for it in the gradient
  // all_reduce; neither reaches a step boundary. Both are signalled (as
  // scancel or Ctrl-C signal every rank) and, after the grace period, each
  // says where it was held: rank 1, in its own code, would stop at its next
  // hook (the library never ends a process held in the program's code);
  // rank 0, in a collective, ends the run — its launcher stops rank 1 — and
  // the command line returns 128 + signal from the StopSignalError.
  for (const int signal : {SIGTERM, SIGINT}) {
    CAPTURE(signal);
    TempDir dir("signal-stop-held");
    const std::string pid_file = (dir / "pid").string();
    const std::string command =
        "( FULGUR_SIGNAL_GRACE_S=2 " +
        probe_fit(dir, "--trainer.devices 2 --data.batch_size 8 --trainer.max_epochs 2 --model.sleep_rank 1 "
                       "--model.sleep_step 2 --model.sleep_s 600 --model.pid_file " + pid_file) +
        " > " + (dir / "log").string() + " 2>&1; echo $? > " + (dir / "rc").string() + " ) & " +
        "for i in $(seq 300); do [ -f " + pid_file + ".0 ] && [ -f " + pid_file + ".1 ] && break; sleep 0.1; done; " +
        "sleep 1; kill -" + (signal == SIGTERM ? "TERM" : "INT") + " $(cat " + pid_file + ".0) $(cat " + pid_file +
        ".1); wait";
    const auto result = run_command(command, 120);
    const std::string log = std::filesystem::exists(dir / "log") ? read_file(dir / "log") : "";
    INFO(result.output);
    INFO(log);
    REQUIRE(std::filesystem::exists(dir / "rc"));
    CHECK(read_file(dir / "rc") == std::to_string(128 + signal) + "\n");
    const std::string name = SignalConnector::name(signal);
    // Rank 0 waits in the gradient all_reduce until its grace period ends,
    // or until rank 1's exit breaks the collective: either way it says so.
    const std::string rank0 = "rank 0: " + name + " not acted on at a step boundary";
    const bool waited = log.find(rank0 + " within 2 s; waiting in ") != std::string::npos;
    const bool broken = log.find(rank0 + "; the run failed meanwhile") != std::string::npos;
    CHECK((waited || broken));
    CHECK(log.find("rank 1: " + name + " not acted on at a step boundary within 2 s; not waiting in a collective; "
                   "the run stops where it next reaches the Trainer") != std::string::npos);
  }
}

TEST_CASE("a host program keeps its SIGTERM handler and its child through a 2-rank fit, also when held in a collective") {
  // tests/probes/host_probe.cpp: the host installs its own SIGTERM handler
  // and starts its own child, then fits on 2 ranks. In "held", rank 1 sends
  // SIGTERM to rank 0 and stops itself (SIGSTOP) mid-run, so rank 0 waits in a
  // collective for a rank that never comes: after the grace period (2 s here)
  // the Trainer aborts the group and ends rank 1 (SIGTERM, SIGKILL 5 s later),
  // and fit throws StopSignalError. The SIGTERM came to the Trainer and, as
  // Lightning's signal connector does, to the host's own handler too (once,
  // when it came); the handler is the host's again afterwards.
  const std::string probe = fulgur::testing::probe_program("host_probe");
  for (const std::string mode : {"finish", "held"}) {
    CAPTURE(mode);
    TempDir dir("host-probe-" + mode);
    const auto result = run_command("FULGUR_SIGNAL_GRACE_S=2 " + probe + " " + mode + " " + dir.path().string(), 120);
    INFO(result.output);
    CHECK(result.exit_code == 0);
    const std::string heard = mode == "held" ? "1" : "0";
    CHECK(result.output.find("handler_back=1 handler_runs=1 child_alive=1 sigterms_before=" + heard) !=
          std::string::npos);
    if (mode == "finish") {
      CHECK(result.output.find("host: fit returned exit_code=0 ") != std::string::npos);
    } else {
      CHECK(result.output.find("host: fit threw StopSignalError(15) exit_code=143 ") != std::string::npos);
      CHECK(result.output.find("rank 0: SIGTERM not acted on at a step boundary within 2 s; waiting in ") !=
            std::string::npos);
      // Back within ~30 s of the signal: 2 s of grace and 5 s for rank 1 to end, on a busy machine.
      std::smatch seconds;
      REQUIRE(std::regex_search(result.output, seconds, std::regex("seconds=([0-9]+) ")));
      CHECK(std::stoi(seconds[1]) < 30);
    }
  }
}

TEST_CASE("two Trainers of one program handed one SubprocessLauncher fit on the same two ranks") {
  // The second Trainer starts nothing: rank 1, started for the first, runs
  // the program's second Trainer too; 8 batches per rank per epoch. Rank 0
  // holds the first Trainer's group a second after its fit, so rank 1's
  // second group comes while the first still lives: both meet on the
  // launcher's store, each group under its own keys (LauncherStore).
  TempDir dir("host-probe-two");
  const auto result =
      run_command(fulgur::testing::probe_program("host_probe") + " two " + dir.path().string(), 120);
  INFO(result.output);
  CHECK(result.exit_code == 0);
  CHECK(result.output.find("rank 0: steps 8 16") != std::string::npos);
  CHECK(result.output.find("rank 1: steps 8 16") != std::string::npos);
}

}  // namespace signal_stop_test
