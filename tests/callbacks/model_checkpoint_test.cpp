#include "support/test_support.hpp"
#include "support/tiny_modules.hpp"

#include <fulgur/callbacks/model_checkpoint.hpp>
#include <fulgur/modules/state_dict.hpp>
#include <fulgur/engine/checkpoint/checkpoint_error.hpp>
#include <fulgur/engine/checkpoint/checkpoint_io.hpp>

#include <doctest/doctest.h>

namespace model_checkpoint_test {

using namespace fulgur;
using fulgur::testing::quiet_options;
using fulgur::testing::RecordingModule;
using fulgur::testing::RegressionData;
using fulgur::testing::TempDir;

namespace {

/// Logs a scripted val_loss per epoch, so the ranking is known in advance.
class ScriptedModule : public RecordingModule {
 public:
  explicit ScriptedModule(std::vector<double> losses) : losses_(std::move(losses)) {}
  void validation_step(const Batch&, int64_t) override {
    log("val_loss", losses_.at(static_cast<size_t>(trainer()->state().current_epoch())));
  }

 private:
  std::vector<double> losses_;
};

torch::Tensor best_weight(const std::filesystem::path& file) {
  return CheckpointIO::load(file).at("state_dict").toGenericDict().at("linear.weight").toTensor();
}

std::vector<std::string> ckpt_names(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE("ModelCheckpoint: filename templates insert names and formatted values") {
  CHECK(ModelCheckpoint::format_filename("{epoch}-{step}-{val_loss:.3f}", 2, 30, {{"val_loss", 0.12345}}) ==
        "epoch=2-step=30-val_loss=0.123");
  CHECK(ModelCheckpoint::format_filename("best-{val_acc:.2f}", 0, 0, {{"val_acc", 0.5}}) == "best-val_acc=0.50");
  CHECK_THROWS_WITH_AS(ModelCheckpoint::format_filename("{epoch", 0, 0, {}),
                       "[ModelCheckpoint] filename '{epoch' has an unclosed '{'", std::invalid_argument);
  CHECK_THROWS_WITH_AS(parse_choice<MonitorMode>("up"), "must be one of min, max, got 'up'", std::invalid_argument);
  CHECK_THROWS_WITH_AS(ModelCheckpoint(ModelCheckpointOptions().save_top_k(-2)),
                       "[ModelCheckpointOptions] save_top_k must be -1 or >= 0, got -2", std::invalid_argument);
  CHECK_THROWS_WITH_AS(ModelCheckpoint(ModelCheckpointOptions().every_n_train_steps(2).every_n_epochs(1)),
                       "[ModelCheckpoint::ModelCheckpoint] every_n_train_steps, every_n_epochs and "
                       "train_time_interval are mutually exclusive",
                       std::invalid_argument);
}

TEST_CASE("ModelCheckpoint: save_top_k keeps the best files by the monitored metric") {
  TempDir dir("mc-topk");
  const std::vector<double> losses{0.5, 0.3, 0.4, 0.1};
  for (int64_t k : {2, -1, 0}) {
    CAPTURE(k);
    const auto ckpt_dir = dir / fmt::format("k{}", k);
    auto mc = std::make_shared<ModelCheckpoint>(ModelCheckpointOptions()
                                                    .dirpath(ckpt_dir.string())
                                                    .filename("{epoch}-{val_loss:.2f}")
                                                    .monitor("val_loss")
                                                    .save_top_k(k)
                                                    .save_last(true));
    ScriptedModule model(losses);
    RegressionData data(3, 1);
    Trainer trainer(quiet_options(dir.path()).max_epochs(4).num_sanity_val_steps(0), {mc});
    trainer.fit(model, data);
    if (k == 2) {
      CHECK(ckpt_names(ckpt_dir) ==
            std::vector<std::string>{"epoch=1-val_loss=0.30.ckpt", "epoch=3-val_loss=0.10.ckpt", "last.ckpt"});
    } else if (k == -1) {
      CHECK(ckpt_names(ckpt_dir).size() == 5);
    } else {
      CHECK(ckpt_names(ckpt_dir) == std::vector<std::string>{"last.ckpt"});
    }
    if (k != 0) {
      CHECK(mc->best_model_path() == (ckpt_dir / "epoch=3-val_loss=0.10.ckpt").string());
      CHECK(*mc->best_model_score() == doctest::Approx(0.1));
      // The best-k table travels in the checkpoint, under the callback's state key.
      const Checkpoint c = CheckpointIO::load(mc->best_model_path());
      const auto state = c.at("callbacks").toGenericDict().at(mc->state_key()).toGenericDict();
      CHECK(state.at("best_model_path").toStringRef() == mc->best_model_path());
    }
    // last.ckpt holds the final state and weights.
    const Checkpoint last = CheckpointIO::load(ckpt_dir / "last.ckpt");
    CHECK(last.at("global_step").toInt() == 12);
    const auto weights = last.at("state_dict").toGenericDict();
    CHECK(torch::equal(weights.at("linear.weight").toTensor(), model.linear->weight));
  }
}

TEST_CASE("ModelCheckpoint: ckpt_path best is the callback's best, in this process and in a new Trainer") {
  TempDir dir("mc-best");
  const auto options = ModelCheckpointOptions().filename("{epoch}").monitor("val_loss").save_top_k(1).save_last(true);
  const std::vector<double> losses{0.5, 0.2, 0.4};
  RegressionData data(3, 1);
  std::string best;
  {
    auto mc = std::make_shared<ModelCheckpoint>(options);
    ScriptedModule model(losses);
    Trainer trainer(quiet_options(dir.path()).max_epochs(3).num_sanity_val_steps(0), {mc});
    trainer.fit(model, data);
    best = mc->best_model_path();
    CHECK(std::filesystem::path(best).filename() == "epoch=1.ckpt");
    RecordingModule evaluated;
    trainer.validate(evaluated, data, "best");
    CHECK(torch::equal(best_weight(best), evaluated.linear->weight));
    CHECK_FALSE(torch::equal(best_weight(best), model.linear->weight));  // fit ended on other weights
  }
  // A new Trainer with the same callback asks the state it saved in last.ckpt.
  auto mc = std::make_shared<ModelCheckpoint>(options);
  RecordingModule model;
  Trainer trainer(quiet_options(dir.path()).max_epochs(3), {mc});
  trainer.validate(model, data, "best");
  CHECK(torch::equal(best_weight(best), model.linear->weight));
  // Without a monitor nothing records a best model: one clear error.
  Trainer unmonitored(quiet_options(dir.path()).max_epochs(3));
  CHECK_THROWS_WITH_AS(unmonitored.validate(model, data, "best"),
                       doctest::Contains("ckpt_path 'best': the newest checkpoint"), CheckpointError);
}

TEST_CASE("ModelCheckpoint: every_n_train_steps, save_weights_only, train_time_interval") {
  TempDir dir("mc-steps");
  auto mc = std::make_shared<ModelCheckpoint>(
      ModelCheckpointOptions().dirpath((dir / "s").string()).every_n_train_steps(3).save_top_k(-1).save_weights_only(true));
  RecordingModule model;
  RegressionData data(5, 0);
  Trainer trainer(quiet_options(dir.path()).max_epochs(2), {mc});
  trainer.fit(model, data);
  CHECK(ckpt_names(dir / "s") == std::vector<std::string>{"epoch=0-step=3.ckpt", "epoch=1-step=6.ckpt",
                                                          "epoch=1-step=9.ckpt"});
  const Checkpoint c = CheckpointIO::load(dir / "s" / "epoch=1-step=6.ckpt");
  CHECK(c.at("global_step").toInt() == 6);
  CHECK_FALSE(c.contains("optimizer_states"));

  auto timed = std::make_shared<ModelCheckpoint>(
      ModelCheckpointOptions().dirpath((dir / "t").string()).train_time_interval(1e-9).save_top_k(-1));
  RecordingModule timed_model;
  Trainer timed_trainer(quiet_options(dir.path()).max_epochs(1), {timed});
  timed_trainer.fit(timed_model, data);
  CHECK(ckpt_names(dir / "t").size() == 5);  // one per step: the interval is always over
}

TEST_CASE("ModelCheckpoint: the default one writes last.ckpt at epoch ends and when a callback stops training") {
  struct StopAtStep : Callback {
    std::string state_key() const override { return "StopAtStep"; }
    void on_train_batch_end(Trainer& t, LightningModule&, const torch::Tensor&, const Batch&, int64_t) override {
      if (t.state().global_step() == 7) t.request_stop();
    }
  };
  TempDir dir("mc-default");
  RecordingModule model;
  RegressionData data(5, 0);
  Trainer trainer(quiet_options(dir.path()).max_epochs(5), {std::make_shared<StopAtStep>()});
  trainer.fit(model, data);
  const auto ckpt_dir = trainer.log_dir() / "checkpoints";
  REQUIRE(std::filesystem::exists(ckpt_dir / "last.ckpt"));
  const Checkpoint last = CheckpointIO::load(ckpt_dir / "last.ckpt");
  CHECK(last.at("global_step").toInt() == 7);
  // The stop came mid-epoch 1: resuming continues epoch 1 after batch 2.
  const auto loop = last.at("loops").toGenericDict().at("fit_loop").toGenericDict();
  CHECK(loop.at("epoch").toInt() == 1);
  CHECK(loop.at("batch_in_epoch").toInt() == 2);

  // Disabled: no checkpoints folder at all.
  TempDir off("mc-disabled");
  RecordingModule other;
  Trainer quiet(quiet_options(off.path()).max_epochs(1).enable_checkpointing(false));
  quiet.fit(other, data);
  CHECK_FALSE(std::filesystem::exists(quiet.log_dir() / "checkpoints"));

  // trainer.save_checkpoint after fit, for users.
  trainer.save_checkpoint(dir / "final.ckpt");
  const Checkpoint final_ckpt = CheckpointIO::load(dir / "final.ckpt");
  RecordingModule restored;
  c10::Dict<std::string, torch::Tensor> weights;
  for (const auto& e : final_ckpt.at("state_dict").toGenericDict()) weights.insert(e.key().toStringRef(), e.value().toTensor());
  load_state_dict(restored, weights);
  CHECK(torch::equal(restored.linear->weight, model.linear->weight));
}

}  // namespace model_checkpoint_test
