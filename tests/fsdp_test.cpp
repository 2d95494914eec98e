// The fully sharded strategy in real processes: ranks started by fulgur's
// launcher meet over a TCPStore on loopback, reduce-scatter gradients and
// all-gather parameters through Gloo, and must end where DDP ends.
#include "support/pickled_tensor.hpp"
#include "support/test_support.hpp"

#include <fulgur/fulgur.hpp>
#include <fulgur/strategies/fsdp_strategy.hpp>
#include <fulgur/strategies/process_group.hpp>
#include <fulgur/strategies/sharded_reducer.hpp>

#include <torch/torch.h>

#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <sstream>

using fulgur::testing::load_pickled_tensor;
using fulgur::testing::read_file;
using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {

const std::string kProbe = std::string(FULGUR_BINARY_DIR) + "/bin/fsdp_probe";

/// Runs the probe as `name` (writing name.pt and name.state.<rank>) and requires success.
void fit(const TempDir& dir, const std::string& name, const std::string& extra) {
  const std::string command =
      kProbe + " fit --seed_everything 7 --trainer.accelerator cpu --trainer.max_epochs 2 " +
      "--trainer.enable_progress_bar false --trainer.num_sanity_val_steps 0 --trainer.process_group_timeout 60 " +
      "--trainer.logger false --trainer.enable_checkpointing false --trainer.enable_model_summary false " +
      "--trainer.default_root_dir " + (dir.path() / name).string() + " --model.output " +
      (dir.path() / (name + ".pt")).string() + " --model.state_file " + (dir.path() / (name + ".state")).string() +
      " " + extra;
  const auto result = run_command(command, 300);
  INFO(command);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
}

/// Small units (the probe has 331 parameters), so several all-gathers and reduce-scatters per step.
const std::string kFsdp = "--trainer.strategy fsdp --trainer.fsdp.min_num_params 50 ";

void check_same(const TempDir& dir, const std::string& a, const std::string& b) {
  const torch::Tensor x = load_pickled_tensor(dir / (a + ".pt"));
  const torch::Tensor y = load_pickled_tensor(dir / (b + ".pt"));
  INFO(a << " vs " << b << ": largest difference " << (x - y).abs().max().item<double>());
  CHECK(torch::allclose(x, y, 1e-5, 1e-5));
}

struct StateLine {
  int64_t numel = 0;
  int64_t state_numel = 0;
};

/// name -> sizes, from the probe's state file of `rank`; "units" -> count in numel.
std::map<std::string, StateLine> read_state(const TempDir& dir, const std::string& name, int64_t rank) {
  std::istringstream in(read_file(dir / (name + ".state." + std::to_string(rank))));
  std::map<std::string, StateLine> out;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key;
    StateLine s;
    fields >> key >> s.numel;
    if (!(fields >> s.state_numel)) s.state_numel = -1;
    out[key] = s;
  }
  return out;
}

}  // namespace

TEST_CASE("fsdp: SHARD_GRAD_OP with Adam on 2 and 3 processes ends where ddp ends; each rank keeps only its shard") {
  TempDir dir("fsdp-adam");
  // Rows per parameter (dim 0) and elements per row, as the probe builds them.
  const std::map<std::string, std::pair<int64_t, int64_t>> shapes{
      {"scale", {1, 1}},       {"net.0.weight", {12, 8}}, {"net.0.bias", {12, 1}}, {"net.2.weight", {12, 12}},
      {"net.2.bias", {12, 1}}, {"net.4.weight", {5, 12}}, {"net.4.bias", {5, 1}}};
  for (const int64_t world : {2, 3}) {
    const std::string n = std::to_string(world);
    fit(dir, "ddp" + n, "--trainer.devices " + n + " --trainer.strategy ddp");
    fit(dir, "fsdp" + n, "--trainer.devices " + n + " " + kFsdp);
    check_same(dir, "ddp" + n, "fsdp" + n);
    CHECK_FALSE(torch::allclose(load_pickled_tensor(dir / ("fsdp" + n + ".pt")),
                                load_pickled_tensor(dir / ("fsdp" + n + ".pt")) * 0.0));

    // Adam's exp_avg on rank r covers rows [r*c, (r+1)*c) only, c = ceil(rows / world):
    // together exactly the parameter, padding never stored.
    std::map<std::string, int64_t> covered;
    for (int64_t rank = 0; rank < world; ++rank) {
      const auto state = read_state(dir, "fsdp" + n, rank);
      CHECK(state.at("units").numel == 3);
      for (const auto& [name, rows_and_row] : shapes) {
        const auto [rows, row] = rows_and_row;
        const int64_t chunk = (rows + world - 1) / world;
        const int64_t mine = std::max<int64_t>(0, std::min(chunk, rows - rank * chunk));
        INFO("world " << world << " rank " << rank << " " << name);
        CHECK(state.at(name).numel == rows * row);  // parameters are whole between steps
        CHECK(state.at(name).state_numel == mine * row);
        covered[name] += state.at(name).state_numel;
      }
      // ddp keeps the whole state on every rank.
      for (const auto& [name, line] : read_state(dir, "ddp" + n, rank)) {
        if (name != "units") CHECK(line.state_numel == line.numel);
      }
    }
    for (const auto& [name, rows_and_row] : shapes) CHECK(covered[name] == rows_and_row.first * rows_and_row.second);
  }
}

TEST_CASE("fsdp: clipping by norm takes the norm over every shard, as ddp does") {
  TempDir dir("fsdp-clip");
  for (const std::string world : {"2", "3"}) {
    fit(dir, "ddp" + world, "--trainer.devices " + world + " --trainer.strategy ddp --trainer.gradient_clip_val 0.05");
    fit(dir, "fsdp" + world, "--trainer.devices " + world + " " + kFsdp + "--trainer.gradient_clip_val 0.05");
    check_same(dir, "ddp" + world, "fsdp" + world);
  }
  // The clip bites: without it the run ends elsewhere (SGD, whose step scales with the gradient).
  fit(dir, "clipped", "--trainer.devices 2 " + kFsdp + "--trainer.gradient_clip_val 0.05 --model.optimizer sgd");
  fit(dir, "clipped_ddp", "--trainer.devices 2 --trainer.strategy ddp --trainer.gradient_clip_val 0.05 --model.optimizer sgd");
  fit(dir, "unclipped", "--trainer.devices 2 " + kFsdp + "--model.optimizer sgd");
  check_same(dir, "clipped_ddp", "clipped");
  CHECK_FALSE(torch::allclose(load_pickled_tensor(dir / "clipped.pt"), load_pickled_tensor(dir / "unclipped.pt"),
                              1e-4, 1e-4));
}

TEST_CASE("fsdp: gradient accumulation and manual optimization end where ddp ends") {
  TempDir dir("fsdp-accumulate-manual");
  const std::string accumulate = "--trainer.devices 2 --trainer.accumulate_grad_batches 2 --data.batch_size 6 ";
  fit(dir, "ddp_acc", accumulate + "--trainer.strategy ddp");
  fit(dir, "fsdp_acc", accumulate + kFsdp);
  check_same(dir, "ddp_acc", "fsdp_acc");
  // Manual: manual_backward averages whole gradients, clip_gradients sees them whole,
  // the step slices them to the shard and steps only that.
  const std::string manual = "--trainer.devices 3 --model.manual true --model.manual_clip 0.05 ";
  fit(dir, "ddp_manual", manual + "--trainer.strategy ddp");
  fit(dir, "fsdp_manual", manual + kFsdp);
  check_same(dir, "ddp_manual", "fsdp_manual");
  const auto state = read_state(dir, "fsdp_manual", 2);
  CHECK(state.at("net.2.weight").state_numel == 4 * 12);  // rows 8..11 of 12
}

TEST_CASE("fsdp: BatchNorm buffers are broadcast as ddp does; NO_SHARD is ddp") {
  TempDir dir("fsdp-batchnorm");
  // SGD: with BatchNorm some gradients are zero up to rounding, which Adam
  // would turn into whole steps of either sign whatever the strategy.
  const std::string bn = "--trainer.devices 3 --model.batch_norm true --model.optimizer sgd ";
  fit(dir, "ddp", bn + "--trainer.strategy ddp");
  fit(dir, "fsdp", bn + kFsdp);
  check_same(dir, "ddp", "fsdp");  // the probe's output ends with the buffers
  fit(dir, "no_shard", "--trainer.devices 2 --trainer.strategy fsdp --trainer.fsdp.sharding_strategy NO_SHARD");
  fit(dir, "ddp2", "--trainer.devices 2 --trainer.strategy ddp");
  check_same(dir, "ddp2", "no_shard");
  for (const auto& [name, line] : read_state(dir, "no_shard", 1)) CHECK(line.state_numel == line.numel);
}

TEST_CASE("fsdp: a bad sharding_strategy or wrap module is one clear error naming it") {
  TempDir dir("fsdp-bad");
  const auto bad = run_command(kProbe + " fit --trainer.accelerator cpu --trainer.devices 2 --trainer.strategy fsdp "
                                        "--trainer.fsdp.sharding_strategy SHARD_EVERYTHING --trainer.default_root_dir " +
                                   dir.path().string(),
                               120);
  INFO(bad.output);
  CHECK(bad.exit_code != 0);
  CHECK(bad.output.find("sharding_strategy") != std::string::npos);
  CHECK(bad.output.find("SHARD_GRAD_OP, NO_SHARD") != std::string::npos);

  const auto wrap = run_command(kProbe + " fit --trainer.accelerator cpu --trainer.devices 2 --trainer.strategy fsdp "
                                         "--trainer.max_epochs 1 --trainer.process_group_timeout 60 "
                                         "--trainer.fsdp.wrap_modules net.9 --trainer.default_root_dir " +
                                    dir.path().string(),
                                120);
  INFO(wrap.output);
  CHECK(wrap.exit_code != 0);
  CHECK(wrap.output.find("fsdp.wrap_modules: 'net.9' names no submodule") != std::string::npos);
}

TEST_CASE("fsdp: from a program's own main, TrainerOptions name the strategy and its options") {
  const auto options = fulgur::TrainerOptions().strategy("fsdp").fsdp(
      fulgur::FSDPOptions().sharding_strategy("SHARD_GRAD_OP").min_num_params(100000).wrap_modules("encoder,head"));
  CHECK(options.strategy() == fulgur::StrategyKind::FSDP);
  CHECK(options.fsdp().wrap_modules() == "encoder,head");
  CHECK_THROWS_WITH_AS(fulgur::FSDPOptions().sharding_strategy("FULL").validate(),
                       doctest::Contains("sharding_strategy must be one of SHARD_GRAD_OP, NO_SHARD"),
                       std::invalid_argument);
}

TEST_CASE("fsdp: the wrap policy groups parameters into units by size at module boundaries and by name") {
  // A group of one (any free port): enough to build units.
  fulgur::ProcessGroupOptions group_options;
  group_options.main_port = 0;
  fulgur::ProcessGroup group(group_options);
  torch::nn::Sequential net(torch::nn::Linear(10, 10), torch::nn::Linear(10, 10), torch::nn::Linear(10, 3));
  std::vector<torch::Tensor> params;
  std::vector<std::string> names;
  for (const auto& item : net->named_parameters()) {
    names.push_back(item.key());
    params.push_back(item.value());
  }
  {
    fulgur::ShardedReducer::Options o;
    o.min_unit_numel = 100;  // a Linear(10, 10) is 110: one unit each, never split inside a module
    fulgur::ShardedReducer reducer(params, names, group, o);
    const auto units = reducer.unit_parameter_names();
    REQUIRE(units.size() == 3);
    // Launch order: the last layers first, as backward produces them.
    CHECK(units[0] == std::vector<std::string>{"2.weight", "2.bias"});
    CHECK(units[2] == std::vector<std::string>{"0.weight", "0.bias"});
  }
  {
    fulgur::ShardedReducer::Options o;
    o.min_unit_numel = 1000000;
    o.unit_modules = {"1"};
    fulgur::ShardedReducer reducer(params, names, group, o);
    const auto units = reducer.unit_parameter_names();
    REQUIRE(units.size() == 2);
    CHECK(units[0] == std::vector<std::string>{"1.weight", "1.bias"});
    CHECK(units[1] == std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"});
  }
}
