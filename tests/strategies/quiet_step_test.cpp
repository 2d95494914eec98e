// What a training step does besides computing, counted on 2 real ranks
// (Gloo over TCP, started by fulgur's launcher): the process group counts
// every collective it issues, the metric path every host read. A
// steady-state step issues the gradient buckets' allreduces (and one
// broadcast of all buffers) and reads nothing from the device.
#include "support/test_support.hpp"

#include <fulgur/strategies/single_device_strategy.hpp>

#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

namespace quiet_step_test {

using fulgur::testing::read_file;
using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {

const std::string kProbe = std::string(FULGUR_BINARY_DIR) + "/bin/ddp_probe";

// 256 samples, 2 ranks, 8 per batch: 16 steps per epoch, 2 epochs.
constexpr int64_t kLogEvery = 5;
constexpr int64_t kStopCheckEvery = 4;

struct Step {
  int64_t batches_done = 0;
  int64_t global_step = 0;
  bool last_batch = false;
  int64_t collectives = 0;
  int64_t host_reads = 0;
};

struct Counts {
  int64_t buckets = -1;
  int64_t buffers = -1;
  int64_t horovod_last_step = -1;
  std::vector<Step> steps;
};

Counts parse(const std::string& text) {
  Counts c;
  std::istringstream in(text);
  std::string word;
  in >> word >> c.buckets >> word >> c.buffers;
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    if (line.rfind("horovod_last_step", 0) == 0) {
      fields >> word >> c.horovod_last_step;
      continue;
    }
    Step s;
    int last = 0;
    fields >> s.batches_done >> s.global_step >> last >> s.collectives >> s.host_reads;
    s.last_batch = last != 0;
    c.steps.push_back(s);
  }
  return c;
}

Counts run_probe(const TempDir& dir, const std::string& name, const std::string& extra) {
  const auto result = run_command(
      kProbe + " fit --seed_everything 7 --trainer.accelerator cpu --trainer.devices 2 --trainer.max_epochs 2 " +
          "--trainer.num_sanity_val_steps 0 --trainer.process_group_timeout 60 --data.samples 256 " +
          "--data.batch_size 8 --model.batch_norm true --trainer.log_every_n_steps " + std::to_string(kLogEvery) +
          " --trainer.stop_check_every_n_steps " + std::to_string(kStopCheckEvery) +
          " --trainer.default_root_dir " + (dir.path() / name).string() + " --model.count_file " +
          (dir.path() / (name + ".counts")).string() + " " + extra,
      300);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  const Counts rank0 = parse(read_file(dir.path() / (name + ".counts.0")));
  const Counts rank1 = parse(read_file(dir.path() / (name + ".counts.1")));
  REQUIRE(rank0.steps.size() == 31);  // 32 steps; the last one has no next batch to end its window
  REQUIRE(rank1.steps.size() == rank0.steps.size());
  for (size_t i = 0; i < rank0.steps.size(); ++i) {
    CAPTURE(i);
    // Collectives pair up: both ranks issue the same number in every step.
    CHECK(rank0.steps[i].collectives == rank1.steps[i].collectives);
  }
  return rank0;
}

bool logging_step(const Step& s) { return s.batches_done % kLogEvery == 0; }
bool stop_check_step(const Step& s) { return s.global_step % kStopCheckEvery == 0; }
bool steady(const Step& s) { return !s.last_batch && !logging_step(s) && !stop_check_step(s); }

}  // namespace

TEST_CASE("quiet step, ddp: a steady-state step is the gradient buckets plus one buffer broadcast, no host reads") {
  TempDir dir("quiet-step-ddp");
  for (const bool broadcast_buffers : {true, false}) {
    CAPTURE(broadcast_buffers);
    const std::string name = broadcast_buffers ? "broadcast" : "no-broadcast";
    const Counts c = run_probe(dir, name, std::string("--trainer.ddp.broadcast_buffers ") +
                                              (broadcast_buffers ? "true" : "false"));
    REQUIRE(c.buckets >= 1);
    REQUIRE(c.buffers == 3);  // BatchNorm1d: running mean, running variance, batches tracked
    const int64_t per_step = c.buckets + (broadcast_buffers ? 1 : 0);
    int64_t steady_steps = 0, logging_steps = 0, checks = 0;
    for (const Step& s : c.steps) {
      CAPTURE(s.batches_done);
      if (s.last_batch) continue;  // epoch end: aggregates, validation, the stop check
      if (steady(s)) {
        ++steady_steps;
        CHECK(s.collectives == per_step);
        CHECK(s.host_reads == 0);
      } else if (stop_check_step(s)) {
        ++checks;
        CHECK(s.collectives == per_step + 1);  // the ranks' agreement on stopping
      }
      if (logging_step(s)) {
        ++logging_steps;
        CHECK(s.host_reads == 1);  // every pending value in one copy
      } else {
        CHECK(s.host_reads == 0);
      }
    }
    CHECK(steady_steps >= 15);
    CHECK(logging_steps >= 5);
    CHECK(checks >= 5);
  }
}

TEST_CASE("quiet step, horovod: the main group broadcasts the buffers once a step; gradients go in one fused allreduce") {
  TempDir dir("quiet-step-horovod");
  // A cycle far longer than a step: each exchange then waits for the whole
  // step's gradients. With the default 5 ms, a backward pass slowed by a
  // loaded machine spans two cycles and its gradients go in two allreduces.
  const Counts c = run_probe(dir, "horovod", "--trainer.strategy horovod --trainer.horovod.cycle_time_ms 60000");
  REQUIRE(c.buffers == 3);
  // Gradients travel on the controller's own group, fused into one buffer
  // (the model is far below the 64 MiB fusion threshold).
  CHECK(c.horovod_last_step == 1);
  int64_t steady_steps = 0;
  for (const Step& s : c.steps) {
    CAPTURE(s.batches_done);
    if (!steady(s)) continue;
    ++steady_steps;
    CHECK(s.collectives == 1);
    CHECK(s.host_reads == 0);
  }
  CHECK(steady_steps >= 15);
}

TEST_CASE("quiet step: on the CPU a batch moves when its step starts, with nothing to wait for") {
  using namespace fulgur;
  SingleDeviceStrategy strategy(Accelerator(AcceleratorKind::Cpu), PrecisionMode::Full32, torch::kCPU);
  CHECK_FALSE(strategy.copies_batches_ahead());
  const Batch batch{torch::arange(6).reshape({3, 2}), torch::tensor({0, 1, 2}), {{"mask", torch::ones({3})}}};
  DeviceBatch moving = strategy.start_batch_to_device(batch);
  CHECK(moving.ready == nullptr);
  const Batch ready = strategy.finish_batch_to_device(std::move(moving));
  // Already on the root device: the same tensors, not copies.
  CHECK(ready.input.data_ptr() == batch.input.data_ptr());
  CHECK(ready.target.data_ptr() == batch.target.data_ptr());
  CHECK(ready["mask"].data_ptr() == batch["mask"].data_ptr());
}

}  // namespace quiet_step_test
