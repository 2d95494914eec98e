#include "support/tiny_modules.hpp"
#include "support/test_support.hpp"

#include <fulgur/modules/models/resnet.hpp>
#include <fulgur/callbacks/model_summary.hpp>

#include <doctest/doctest.h>

namespace model_summary_test {

using namespace fulgur;
using fulgur::testing::quiet_options;

namespace {

int64_t numel_sum(torch::nn::Module& module, bool trainable_only) {
  int64_t total = 0;
  for (const auto& p : module.parameters()) {
    if (!trainable_only || p.requires_grad()) total += p.numel();
  }
  return total;
}

}  // namespace

TEST_CASE("model summary: counts on a ResNet-18 equal the parameters' numel, frozen ones apart") {
  models::ResNet resnet = models::resnet18(10);
  // Freeze the stem: its parameters count as non-trainable.
  const auto children = resnet->named_children();
  const auto conv1 = children["conv1"];
  for (auto& p : conv1->parameters()) p.set_requires_grad(false);
  children["bn1"]->eval();

  const auto summary = ModelSummary::summarize(*resnet, 1);
  CHECK(summary.total == numel_sum(*resnet, false));
  CHECK(summary.trainable == numel_sum(*resnet, true));
  CHECK(summary.non_trainable == numel_sum(*conv1, false));
  CHECK(summary.non_trainable > 0);
  CHECK(summary.trainable + summary.non_trainable == summary.total);
  CHECK(summary.size_mb == doctest::Approx(summary.total * 4 / 1e6));  // float32
  // Depth 1: the direct children, each with all its parameters.
  REQUIRE(summary.rows.size() == children.size());
  int64_t row_sum = 0;
  for (size_t i = 0; i < children.size(); ++i) {
    CHECK(summary.rows[i].name == children[i].key());
    CHECK(summary.rows[i].params == numel_sum(*children[i].value(), false));
    row_sum += summary.rows[i].params;
  }
  CHECK(row_sum == summary.total);  // the ResNet holds no parameter of its own
  CHECK(summary.rows[0].type == "Conv2d");
  const auto bn = std::find_if(summary.rows.begin(), summary.rows.end(), [](const auto& r) { return r.name == "bn1"; });
  REQUIRE(bn != summary.rows.end());
  CHECK(bn->type == "BatchNorm2d");
  CHECK_FALSE(bn->training);
  CHECK(summary.modules_in_eval_mode == 1);
  CHECK(summary.modules_in_train_mode + 1 == static_cast<int64_t>(resnet->modules(/*include_self=*/false).size()));

  // -1 lists every module; deeper rows carry dotted names.
  const auto all = ModelSummary::summarize(*resnet, -1);
  CHECK(all.rows.size() == resnet->modules(false).size());
  CHECK(std::any_of(all.rows.begin(), all.rows.end(), [](const auto& r) { return r.name == "layer1.0.conv1"; }));
  const std::string table = ModelSummary::format(summary);
  CHECK(table.find("| layer1") != std::string::npos);
  CHECK(table.find("Trainable params") != std::string::npos);
  CHECK(table.find("11.2 M") != std::string::npos);  // ResNet-18 with 10 classes: 11,181,642
  CHECK(summary.total == 11181642);
}

TEST_CASE("model summary: the Trainer adds one unless enable_model_summary is off or one is given") {
  auto count = [](const Trainer& trainer) {
    return std::count_if(trainer.callbacks().begin(), trainer.callbacks().end(),
                         [](const auto& c) { return dynamic_cast<ModelSummary*>(c.get()) != nullptr; });
  };
  const testing::TempDir dir("model-summary-default");
  Trainer with_default(TrainerOptions().default_root_dir(dir.path()).accelerator(AcceleratorKind::Cpu));
  CHECK(count(with_default) == 1);
  Trainer off(quiet_options(dir.path()));
  CHECK(count(off) == 0);
  auto own = std::make_shared<ModelSummary>(ModelSummaryOptions().max_depth(2));
  Trainer given(TrainerOptions().default_root_dir(dir.path()).accelerator(AcceleratorKind::Cpu), {own});
  CHECK(count(given) == 1);
  CHECK_THROWS_WITH_AS(ModelSummary(ModelSummaryOptions().max_depth(-2)),
                       "[ModelSummaryOptions] max_depth must be -1 or >= 0, got -2", std::invalid_argument);
}

TEST_CASE("model summary: under fsdp on 2 processes it counts the whole model, not one rank's shard") {
  fulgur::testing::TempDir dir("model-summary-fsdp");
  // ddp_probe's MLP: 8*32+32 + 32*4+4 = 420 parameters.
  const std::string probe = std::string(FULGUR_BINARY_DIR) + "/bin/ddp_probe";
  for (const std::string strategy : {"ddp", "fsdp"}) {
    CAPTURE(strategy);
    const auto run = fulgur::testing::run_command(
        probe + " fit --seed_everything 3 --trainer.accelerator cpu --trainer.devices 2 --trainer.strategy " + strategy +
            " --trainer.max_epochs 1 --trainer.limit_train_batches 1 --trainer.num_sanity_val_steps 0"
            " --trainer.limit_val_batches 0 --trainer.logger false --trainer.enable_checkpointing false"
            " --trainer.enable_progress_bar false --trainer.process_group_timeout 30 --trainer.default_root_dir " +
            dir.path().string(),
        120);
    INFO(run.output);
    REQUIRE(run.exit_code == 0);
    CHECK(run.output.find("420       Total params") != std::string::npos);
  }
}

}  // namespace model_summary_test
