#include "support/tiny_modules.hpp"
#include "support/test_support.hpp"

#include <fulgur/trainer/loops/run_context.hpp>
#include <fulgur/trainer/profilers/pytorch_profiler.hpp>
#include <fulgur/trainer/profilers/simple_profiler.hpp>

#include <doctest/doctest.h>

#include <fstream>

namespace profiler_test {

using namespace fulgur;
using fulgur::testing::quiet_options;
using fulgur::testing::read_file;
using fulgur::testing::RecordingModule;
using fulgur::testing::RegressionData;
using fulgur::testing::run_command;
using fulgur::testing::TempDir;

TEST_CASE("profiler simple: every action's calls and time, in <run>/profile.txt") {
  TempDir dir("profiler-simple");
  RecordingModule model;
  RegressionData data(5, 2);
  Trainer trainer(quiet_options(dir.path()).max_epochs(2).num_sanity_val_steps(0).profiler(ProfilerKind::Simple));
  trainer.fit(model, data);
  const auto* profiler = dynamic_cast<const SimpleProfiler*>(trainer.profiler());
  REQUIRE(profiler != nullptr);
  const auto& entries = profiler->entries();
  auto calls = [&](const std::string& action) {
    const auto it = entries.find(action);
    return it == entries.end() ? int64_t{-1} : it->second.calls;
  };
  CHECK(calls("run_training_epoch") == 2);
  CHECK(calls("run_training_batch") == 10);
  CHECK(calls("[Strategy]training_step") == 10);
  CHECK(calls("[Strategy]backward") == 10);
  CHECK(calls("optimizer_step") == 10);
  CHECK(calls("[_TrainingEpochLoop].train_dataloader_next") == 10);
  CHECK(calls("[Strategy]validation_step") == 4);
  CHECK(calls("[_EvaluationLoop].val_next") == 4);
  CHECK(calls("[LightningModule]RecordingModule.on_train_epoch_start") == 2);
  CHECK(calls("[LightningModule]RecordingModule.on_train_batch_end") == 10);
  CHECK(calls("[Callback]ModelCheckpoint{'monitor': '', 'mode': 'min', 'every_n_train_steps': 0, 'every_n_epochs': 1, "
              "'train_time_interval': 0}.on_train_epoch_end") == 2);
  for (const auto& action_entry : entries) {
    const auto& action = action_entry.first;  // not bound: clang 14 cannot capture a binding
    const auto& entry = action_entry.second;
    INFO(action);
    CHECK(entry.total_s >= 0.0);
  }
  // A batch holds its step, backward and optimizer step.
  const double batch = entries.at("run_training_batch").total_s;
  CHECK(batch >= entries.at("[Strategy]training_step").total_s + entries.at("[Strategy]backward").total_s +
                     entries.at("optimizer_step").total_s);

  const std::string text = read_file(trainer.log_dir() / "profile.txt");
  INFO(text);
  for (const std::string action : {"run_training_epoch", "run_training_batch", "[Strategy]training_step",
                                   "[Strategy]backward", "optimizer_step", "train_dataloader_next"}) {
    CHECK(text.find(action) != std::string::npos);
  }
  CHECK(text.find("Mean duration (s)") != std::string::npos);
  CHECK(Profiler::rank_file("run", "profile", ".txt", 0) == std::filesystem::path("run/profile.txt"));
  CHECK(Profiler::rank_file("run", "profile", ".txt", 3) == std::filesystem::path("run/profile-rank3.txt"));
}

TEST_CASE("profiler pytorch: a Chrome trace of training steps 2-4 that parses and names the operators") {
  TempDir dir("profiler-pytorch");
  RecordingModule model;
  RegressionData data(8, 0);
  Trainer trainer(quiet_options(dir.path()).max_epochs(1).profiler(ProfilerKind::PyTorch));
  trainer.fit(model, data);
  const auto trace = trainer.log_dir() / "profile.pt.trace.json";
  REQUIRE(std::filesystem::exists(trace));
  // Python's json reads it as Chrome and Perfetto do: the operators and our annotations are there.
  std::ofstream(dir / "check.py") << R"(import json, sys
trace = json.load(open(sys.argv[1]))
names = [e.get("name", "") for e in trace["traceEvents"]]
for expected in ["aten::addmm", "aten::mse_loss", "run_training_batch", "[Strategy]backward", "optimizer_step"]:
    assert expected in names, expected
# Three steps recorded: three batches.
assert names.count("run_training_batch") == 3, names.count("run_training_batch")
print("trace ok", len(names))
)";
  const auto result = run_command("python3 " + (dir / "check.py").string() + " " + trace.string());
  INFO(result.output);
  CHECK(result.exit_code == 0);
  CHECK(result.output.find("trace ok") != std::string::npos);
}

TEST_CASE("profiler: an unknown name is refused") {
  CHECK_THROWS_WITH_AS(parse_choice<ProfilerKind>("advanced"), "must be one of simple, pytorch, got 'advanced'",
                       std::invalid_argument);
}

}  // namespace profiler_test
