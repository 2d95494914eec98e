// The fully sharded strategy in real processes: ranks started by fulgur's
// launchers meet over a TCPStore on loopback (a free port the launcher
// picks), reduce-scatter gradients and all-gather parameters through Gloo,
// and must end where DDP and one process end on the same global batch.
// Runs of one world size that do not wait on each other's results go in one
// launch (fit_all): the ranks' start-up is most of a run's time.
// The cases of checkpoints, HYBRID_SHARD and ShardedUnit are the test suite
// fsdp_units_test, a ctest entry of its own (tests/CMakeLists.txt), so that
// neither entry takes over 90 s.
#include "support/pickled_tensor.hpp"
#include "support/probe_commands.hpp"
#include "support/test_support.hpp"

#include <fulgur/fulgur.hpp>
#include <fulgur/strategies/fsdp_strategy.hpp>

#include <torch/torch.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace fsdp_test {

using fulgur::testing::load_pickled_tensor;
using fulgur::testing::only_checkpoint;
using fulgur::testing::read_file;
using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {

const std::string kProbe = std::string(FULGUR_BINARY_DIR) + "/bin/fsdp_probe";

/// Ranks and their per-rank batch for a global batch of 24.
std::string ranks(int world) {
  return "--trainer.devices " + std::to_string(world) + " --data.batch_size " + std::to_string(24 / world) + " ";
}

/// The probe's arguments for a run as `name` (writing name.pt and name.state.<rank>).
std::string probe_args(const TempDir& dir, const std::string& name, const std::string& extra, int epochs,
                       bool checkpointing) {
  return "fit --seed_everything 7 --trainer.accelerator cpu --trainer.max_epochs " + std::to_string(epochs) +
         " --trainer.enable_progress_bar false --trainer.num_sanity_val_steps 0 --trainer.process_group_timeout 60 " +
         "--trainer.logger false --trainer.enable_model_summary false --trainer.enable_checkpointing " +
         (checkpointing ? "true " : "false ") +
         (extra.find("--data.samples") == std::string::npos ? "--data.samples 96 " : "") +
         "--trainer.default_root_dir " + (dir.path() / name).string() + " --model.output " +
         (dir.path() / (name + ".pt")).string() + " --model.state_file " + (dir.path() / (name + ".state")).string() +
         " " + extra;
}

/// Runs the probe as `name` and requires success.
void fit(const TempDir& dir, const std::string& name, const std::string& extra, int epochs = 2,
         bool checkpointing = false) {
  const std::string command = kProbe + " " + probe_args(dir, name, extra, epochs, checkpointing);
  const auto result = run_command(command, 300);
  INFO(command);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
}

struct Run {
  std::string name;
  std::string extra;
  int epochs = 2;
  bool checkpointing = false;
};

/// The runs, each as fit() would run it, one after another in one launch of
/// `world` ranks (`fsdp_probe runs`, tests/probes/probe_runs.hpp): the ranks
/// start once, not once per run. Requires every run to succeed.
void fit_all(const TempDir& dir, int world, const std::vector<Run>& runs) {
  const std::filesystem::path file = dir / (runs.front().name + ".runs");
  std::vector<std::string> lines;
  for (const Run& run : runs) lines.push_back(probe_args(dir, run.name, run.extra, run.epochs, run.checkpointing));
  const auto result = fulgur::testing::run_in_one_launch(kProbe, world, file, lines);
  INFO(read_file(file));
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
}

/// Runs the probe as `name` on 2 nodes x 2 ranks of this machine: one
/// torchrun per node, meeting on a free port; requires both to succeed.
void fit_two_nodes(const TempDir& dir, const std::string& name, const std::string& extra, bool checkpointing) {
  const int port = fulgur::testing::free_port();
  std::string script = "set -u\n";
  for (int node = 0; node < 2; ++node) {
    script += std::string(FULGUR_SOURCE_DIR) + "/.venv/bin/torchrun --no-python --nnodes 2 --nproc-per-node 2 " +
              "--node-rank " + std::to_string(node) + " --master-addr 127.0.0.1 --master-port " +
              std::to_string(port) + " " + kProbe + " " +
              probe_args(dir, name, "--trainer.num_nodes 2 --trainer.devices 2 --data.batch_size 6 " + extra, 2, checkpointing) + " > " +
              (dir.path() / (name + ".node" + std::to_string(node) + ".log")).string() + " 2>&1 &\n" +
              "pid" + std::to_string(node) + "=$!\n";
  }
  script += "wait $pid0; a=$?; wait $pid1; b=$?; cat " + (dir.path() / (name + ".node*.log")).string() +
            "; exit $((a | b))\n";
  std::ofstream(dir / (name + ".sh")) << script;
  const auto result = run_command("bash " + (dir / (name + ".sh")).string(), 300);
  INFO(script);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
}

/// Small units (the probe has 331 parameters), so several all-gathers and reduce-scatters per step.
std::string fsdp(const std::string& sharding) {
  return "--trainer.strategy fsdp --trainer.fsdp.min_num_params 50 --trainer.fsdp.sharding_strategy " + sharding + " ";
}

void check_same(const TempDir& dir, const std::string& a, const std::string& b) {
  const torch::Tensor x = load_pickled_tensor(dir / (a + ".pt"));
  const torch::Tensor y = load_pickled_tensor(dir / (b + ".pt"));
  REQUIRE(x.sizes() == y.sizes());
  INFO(a << " vs " << b << ": largest difference " << (x - y).abs().max().item<double>());
  CHECK(torch::allclose(x, y, 1e-5, 1e-5));
}

struct StateLine {
  int64_t numel = 0;
  int64_t state_numel = 0;
};

/// name -> sizes, from the probe's state file of `rank`; "units", "bytes", "largest_unit" -> the number in numel.
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

const std::map<std::string, std::pair<int64_t, int64_t>> kShapes{
    {"scale", {1, 1}},       {"net.0.weight", {12, 8}}, {"net.0.bias", {12, 1}}, {"net.2.weight", {12, 12}},
    {"net.2.bias", {12, 1}}, {"net.4.weight", {5, 12}}, {"net.4.bias", {5, 1}}};


/// Files beside `ckpt` whose names continue it (the shards of a sharded checkpoint).
std::vector<std::filesystem::path> shard_files(const std::filesystem::path& ckpt) {
  std::vector<std::filesystem::path> out;
  for (const auto& entry : std::filesystem::directory_iterator(ckpt.parent_path())) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(ckpt.filename().string() + ".", 0) == 0 && name.find(".shard-") != std::string::npos) {
      out.push_back(entry.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// Adam's exp_avg on rank r covers rows [r*c, (r+1)*c) only, c = ceil(rows / world):
/// together exactly the parameter, padding never stored. SHARD_GRAD_OP keeps
/// the parameters whole between steps; FULL_SHARD only this rank's rows.
void check_shards(const TempDir& dir, const std::string& name, int world, const std::string& sharding) {
  std::map<std::string, int64_t> covered;
  for (int64_t rank = 0; rank < world; ++rank) {
    const auto state = read_state(dir, name, rank);
    CHECK(state.at("units").numel == 3);
    for (const auto& key_rows_and_row : kShapes) {
      const auto& key = key_rows_and_row.first;  // not bound: clang 14 cannot capture a binding
      const auto& rows_and_row = key_rows_and_row.second;
      const auto [rows, row] = rows_and_row;
      const int64_t chunk = (rows + world - 1) / world;
      const int64_t mine = std::max<int64_t>(0, std::min(chunk, rows - rank * chunk));
      INFO(name << " rank " << rank << " " << key);
      CHECK(state.at(key).numel == (sharding == "FULL_SHARD" ? mine : rows) * row);
      CHECK(state.at(key).state_numel == mine * row);
      covered[key] += state.at(key).state_numel;
    }
  }
  for (const auto& [key, rows_and_row] : kShapes) CHECK(covered[key] == rows_and_row.first * rows_and_row.second);
}

}  // namespace

TEST_CASE("fsdp: FULL_SHARD, SHARD_GRAD_OP and NO_SHARD on 2 and 4 processes end where ddp and one process end, "
          "each rank keeping only its shard of the optimizer state (and under FULL_SHARD of the parameters)") {
  TempDir dir("fsdp-equal");
  const auto started = std::chrono::steady_clock::now();
  const std::vector<std::string> optimizers{"adam", "sgd"};
  const std::vector<std::string> shardings{"FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD"};
  const auto opt = [](const std::string& optimizer) { return "--model.optimizer " + optimizer + " "; };
  fit_all(dir, 1, {{"one_adam", opt("adam") + ranks(1)}, {"one_sgd", opt("sgd") + ranks(1)}});
  for (const int world : {2, 4}) {
    const std::string w = std::to_string(world);
    std::vector<Run> runs;
    for (const std::string& optimizer : optimizers) {
      runs.push_back({"ddp" + w + optimizer, opt(optimizer) + ranks(world) + "--trainer.strategy ddp"});
      for (const std::string& sharding : shardings) {
        runs.push_back({sharding + w + optimizer, opt(optimizer) + ranks(world) + fsdp(sharding)});
      }
    }
    fit_all(dir, world, runs);
  }
  for (const std::string& optimizer : optimizers) {
    // Training moved the parameters (the comparisons below are not of two starts).
    CHECK_FALSE(torch::allclose(load_pickled_tensor(dir / ("one_" + optimizer + ".pt")),
                                load_pickled_tensor(dir / ("one_" + optimizer + ".pt")) * 0.9));
    for (const int world : {2, 4}) {
      const std::string w = std::to_string(world);
      check_same(dir, "one_" + optimizer, "ddp" + w + optimizer);
      for (const std::string& sharding : shardings) {
        const std::string name = sharding + w + optimizer;
        check_same(dir, "ddp" + w + optimizer, name);
        check_same(dir, "one_" + optimizer, name);
        if (optimizer == "adam" && sharding != "NO_SHARD") check_shards(dir, name, world, sharding);
      }
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  MESSAGE("18 runs in 3 launches in " << seconds << " s");
}

TEST_CASE("fsdp: FULL_SHARD keeps at most 1/N of ddp's parameters, gradients and Adam state per rank, plus one unit") {
  TempDir dir("fsdp-bytes");
  // Wider, so padding is small beside the state (5,000+ parameters).
  const std::string wide = "--model.hidden 64 --trainer.fsdp.min_num_params 1000 ";
  for (const int world : {2, 4}) {
    const std::string w = std::to_string(world);
    fit_all(dir, world,
            {{"ddp" + w, ranks(world) + wide + "--trainer.strategy ddp"},
             {"full" + w, ranks(world) + wide + "--trainer.strategy fsdp --trainer.fsdp.sharding_strategy FULL_SHARD"},
             {"grad_op" + w,
              ranks(world) + wide + "--trainer.strategy fsdp --trainer.fsdp.sharding_strategy SHARD_GRAD_OP"}});
    check_same(dir, "ddp" + w, "full" + w);
    for (int64_t rank = 0; rank < world; ++rank) {
      const int64_t ddp = read_state(dir, "ddp" + w, rank).at("bytes").numel;
      const auto full = read_state(dir, "full" + w, rank);
      const int64_t grad_op = read_state(dir, "grad_op" + w, rank).at("bytes").numel;
      const int64_t unit_bytes = full.at("largest_unit").numel * 4;
      INFO("world " << world << " rank " << rank << ": ddp " << ddp << " B, SHARD_GRAD_OP " << grad_op
                    << " B, FULL_SHARD " << full.at("bytes").numel << " B, largest unit " << unit_bytes << " B");
      // ddp: parameters, gradient buckets, exp_avg, exp_avg_sq: 4 x 4 bytes per parameter.
      CHECK(ddp >= 16 * 5062);
      CHECK(full.at("bytes").numel <= ddp / world + unit_bytes);
      // SHARD_GRAD_OP keeps whole parameters: between the two.
      CHECK(grad_op > full.at("bytes").numel);
      CHECK(grad_op < ddp);
    }
  }
}

TEST_CASE("fsdp: clipping by norm takes the norm over every shard, as ddp does") {
  TempDir dir("fsdp-clip");
  const std::string clip = "--model.optimizer sgd --trainer.gradient_clip_val 0.05 ";
  fit(dir, "one", ranks(1) + clip);
  for (const int world : {2, 4}) {
    const std::string w = std::to_string(world);
    std::vector<Run> runs{{"ddp" + w, ranks(world) + clip + "--trainer.strategy ddp"}};
    for (const std::string sharding : {"FULL_SHARD", "SHARD_GRAD_OP"}) {
      runs.push_back({sharding + w, ranks(world) + clip + fsdp(sharding)});
    }
    // The clip bites: without it the run ends elsewhere (SGD, whose step scales with the gradient).
    if (world == 2) runs.push_back({"unclipped", ranks(2) + fsdp("FULL_SHARD") + "--model.optimizer sgd"});
    fit_all(dir, world, runs);
    check_same(dir, "one", "ddp" + w);
    for (const std::string sharding : {"FULL_SHARD", "SHARD_GRAD_OP"}) check_same(dir, "one", sharding + w);
  }
  CHECK_FALSE(torch::allclose(load_pickled_tensor(dir / "FULL_SHARD2.pt"), load_pickled_tensor(dir / "unclipped.pt"),
                              1e-4, 1e-4));
}

TEST_CASE("fsdp: gradient accumulation and manual optimization end where one process and ddp end") {
  TempDir dir("fsdp-accumulate-manual");
  const std::string accumulate = "--trainer.accumulate_grad_batches 2 --model.optimizer sgd ";
  // Global batch 24 over two batches of 12 per optimizer step.
  fit(dir, "one_acc", accumulate + "--data.batch_size 12");
  for (const int world : {2, 4}) {
    const std::string w = std::to_string(world);
    const std::string r = "--trainer.devices " + w + " --data.batch_size " + std::to_string(12 / world) + " ";
    fit_all(dir, world,
            {{"FULL_SHARD_acc" + w, accumulate + r + fsdp("FULL_SHARD")},
             {"SHARD_GRAD_OP_acc" + w, accumulate + r + fsdp("SHARD_GRAD_OP")}});
    for (const std::string sharding : {"FULL_SHARD", "SHARD_GRAD_OP"}) check_same(dir, "one_acc", sharding + "_acc" + w);
  }
  // Manual: manual_backward averages whole gradients, clip_gradients sees them whole,
  // the step slices them to the shard and steps only that.
  const std::string manual = "--trainer.devices 3 --data.batch_size 8 --model.manual true --model.manual_clip 0.05 ";
  fit_all(dir, 3,
          {{"ddp_manual", manual + "--trainer.strategy ddp"},
           {"FULL_SHARD_manual", manual + fsdp("FULL_SHARD")},
           {"SHARD_GRAD_OP_manual", manual + fsdp("SHARD_GRAD_OP")}});
  for (const std::string sharding : {"FULL_SHARD", "SHARD_GRAD_OP"}) check_same(dir, "ddp_manual", sharding + "_manual");
  const auto state = read_state(dir, "SHARD_GRAD_OP_manual", 2);
  CHECK(state.at("net.2.weight").state_numel == 4 * 12);  // rows 8..11 of 12
}

TEST_CASE("fsdp: BatchNorm buffers are broadcast as ddp does") {
  TempDir dir("fsdp-batchnorm");
  // SGD: with BatchNorm some gradients are zero up to rounding, which Adam
  // would turn into whole steps of either sign whatever the strategy.
  const std::string bn = "--trainer.devices 3 --data.batch_size 8 --model.batch_norm true --model.optimizer sgd ";
  fit_all(dir, 3,
          {{"ddp", bn + "--trainer.strategy ddp"},
           {"FULL_SHARD", bn + fsdp("FULL_SHARD")},
           {"SHARD_GRAD_OP", bn + fsdp("SHARD_GRAD_OP")}});
  for (const std::string sharding : {"FULL_SHARD", "SHARD_GRAD_OP"}) {
    check_same(dir, "ddp", sharding);  // the probe's output ends with the buffers
  }
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
  CHECK(bad.output.find("SHARD_EVERYTHING") != std::string::npos);
  CHECK(bad.output.find("FULL_SHARD, SHARD_GRAD_OP, NO_SHARD") != std::string::npos);

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
  const auto options = fulgur::TrainerOptions().strategy(fulgur::StrategyKind::FSDP).fsdp(
      fulgur::FSDPOptions()
          .sharding_strategy(fulgur::ShardingStrategy::ShardGradOp)
          .min_num_params(100000)
          .wrap_modules("encoder,head"));
  CHECK(options.strategy() == fulgur::StrategyKind::FSDP);
  CHECK(options.fsdp().wrap_modules() == "encoder,head");
  CHECK(fulgur::FSDPOptions().sharding_strategy() == fulgur::ShardingStrategy::FullShard);  // Lightning's default
  CHECK(fulgur::FSDPOptions().state_dict_type() == fulgur::StateDictType::Full);
  CHECK_THROWS_WITH_AS(fulgur::parse_choice<fulgur::ShardingStrategy>("FULL"),
                       doctest::Contains("must be one of FULL_SHARD, SHARD_GRAD_OP, NO_SHARD"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(fulgur::parse_choice<fulgur::StateDictType>("local"),
                       doctest::Contains("must be one of full, sharded"), std::invalid_argument);
}

TEST_CASE("fsdp: stop and resume from full and sharded checkpoints continues exactly, on the same and other world sizes" *
          doctest::test_suite("fsdp_units_test")) {
  TempDir dir("fsdp-resume");
  const std::string full = fsdp("FULL_SHARD");
  const std::vector<std::string> types{"full", "sharded"};
  std::vector<Run> first{{"straight", ranks(2) + full}};
  for (const std::string& type : types) {
    first.push_back({"first_" + type, ranks(2) + full + "--trainer.fsdp.state_dict_type " + type, 1, true});
  }
  fit_all(dir, 2, first);
  std::vector<Run> resumed;
  for (const std::string& type : types) {
    const std::filesystem::path ckpt = only_checkpoint(dir / ("first_" + type));
    CHECK(shard_files(ckpt).size() == (type == "sharded" ? 2u : 0u));
    resumed.push_back({"resumed_" + type, ranks(2) + full + "--ckpt_path " + ckpt.string()});
  }
  fit_all(dir, 2, resumed);
  for (const std::string& type : types) check_same(dir, "straight", "resumed_" + type);
  // A sharded checkpoint of 2 ranks resumes on 1 (no strategy at all) and on 4.
  const std::filesystem::path sharded = only_checkpoint(dir / "first_sharded");
  fit(dir, "resumed_on_1", ranks(1) + "--ckpt_path " + sharded.string());
  check_same(dir, "straight", "resumed_on_1");
  fit_all(dir, 4,
          {{"resumed_on_4", ranks(4) + full + "--ckpt_path " + sharded.string()},
           {"resumed_on_4_grad_op", ranks(4) + fsdp("SHARD_GRAD_OP") + "--ckpt_path " + sharded.string()}});
  check_same(dir, "straight", "resumed_on_4");
  check_same(dir, "straight", "resumed_on_4_grad_op");

  // The consolidation tool writes one file Python reads with weights_only=True;
  // its tensors equal the full checkpoint's.
  const std::filesystem::path joined = dir.path() / "joined.ckpt";
  const auto tool = run_command(std::string(FULGUR_BINARY_DIR) + "/bin/fulgur_consolidate " + sharded.string() + " " +
                                    joined.string(),
                                120);
  INFO(tool.output);
  REQUIRE(tool.exit_code == 0);
  const std::filesystem::path script = dir.path() / "compare.py";
  std::ofstream(script) << "import sys, torch\n"
                           "a = torch.load(sys.argv[1], weights_only=True)\n"
                           "b = torch.load(sys.argv[2], weights_only=True)\n"
                           "assert 'fsdp_shards' not in a, 'metadata left in the joined file'\n"
                           "assert tuple(a['state_dict']['net.0.weight'].shape) == (12, 8)\n"
                           "assert a['state_dict'].keys() == b['state_dict'].keys()\n"
                           "for k in a['state_dict']: assert torch.equal(a['state_dict'][k], b['state_dict'][k]), k\n"
                           "sa, sb = a['optimizer_states'][0]['state'], b['optimizer_states'][0]['state']\n"
                           "assert sa.keys() == sb.keys() and len(sa) == 7\n"
                           "for i in sa:\n"
                           "    for k in ('exp_avg', 'exp_avg_sq'): assert torch.equal(sa[i][k], sb[i][k]), (i, k)\n"
                           "print('same', len(a['state_dict']))\n";
  const auto python = run_command(std::string(FULGUR_PYTHON) + " " + script.string() + " " + joined.string() + " " +
                                      only_checkpoint(dir / "first_full").string(),
                                  120);
  INFO(python.output);
  CHECK(python.exit_code == 0);
  CHECK(python.output.find("same 7") != std::string::npos);

  // Complete only with every shard: without one, resuming names it.
  std::filesystem::remove(shard_files(sharded).back());
  const auto incomplete = run_command(kProbe + " fit --trainer.accelerator cpu --trainer.logger false "
                                               "--trainer.enable_progress_bar false --trainer.default_root_dir " +
                                          (dir.path() / "incomplete").string() + " --ckpt_path " + sharded.string(),
                                      120);
  INFO(incomplete.output);
  CHECK(incomplete.exit_code != 0);
  CHECK(incomplete.output.find("shard 1 of 2") != std::string::npos);
  CHECK(incomplete.output.find("is missing") != std::string::npos);
}

TEST_CASE("fsdp: a sharded checkpoint dropped by save_top_k takes its shards along; a link to one finds its shards" *
          doctest::test_suite("fsdp_units_test")) {
  TempDir dir("fsdp-top-k");
  std::ofstream(dir / "keep_one.yaml") << R"(trainer:
  callbacks:
    - class_path: ModelCheckpoint
      init_args:
        save_top_k: 1
        save_last: true
)";
  fit(dir, "ranked", ranks(2) + fsdp("FULL_SHARD") + "--trainer.fsdp.state_dict_type sharded --config " +
                         (dir / "keep_one.yaml").string(),
      3, true);
  const std::filesystem::path folder = dir.path() / "ranked" / "checkpoints";
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  INFO(fmt::format("{}", fmt::join(names, " ")));
  // The newest epoch's metadata and its two shards, last.ckpt (written
  // again when training ends) and its two: the shards of the two dropped
  // epochs are gone.
  REQUIRE(names.size() == 6);
  CHECK(names[0].rfind("epoch=2-", 0) == 0);
  CHECK(names[1].rfind(names[0] + ".", 0) == 0);
  CHECK(names[1].find(".shard-0-of-2") != std::string::npos);
  CHECK(names[2].find(".shard-1-of-2") != std::string::npos);
  CHECK(names[3] == "last.ckpt");
  CHECK(names[4].rfind("last.ckpt.", 0) == 0);
  CHECK(names[5].rfind("last.ckpt.", 0) == 0);
  // A link to a sharded checkpoint (what last.ckpt is between epochs) finds
  // the shards named after the file it links to, here on another world size.
  const std::filesystem::path link = folder / "linked.ckpt";
  std::filesystem::create_hard_link(folder / names[0], link);
  fit(dir, "from_link", ranks(1) + "--ckpt_path " + link.string(), 4);
}

TEST_CASE("fsdp: HYBRID_SHARD on 2 nodes x 2 ranks shards within a node, ends where ddp ends, and resumes on 1" *
          doctest::test_suite("fsdp_units_test")) {
  TempDir dir("fsdp-hybrid");
  fit_all(dir, 4, {{"ddp4", ranks(4) + "--trainer.strategy ddp"}, {"ddp4_three", ranks(4) + "--trainer.strategy ddp", 3}});
  // Two torchrun agents on this machine play two nodes of two ranks each.
  fit_two_nodes(dir, "hybrid", fsdp("HYBRID_SHARD") + "--trainer.fsdp.state_dict_type sharded", true);
  check_same(dir, "ddp4", "hybrid");
  // Ranks 0,1 and 2,3 (a node each) hold the same rows: each parameter is
  // cut in 2, not 4, and each half is held once per node.
  std::map<std::string, int64_t> covered;
  for (int64_t rank = 0; rank < 4; ++rank) {
    const auto state = read_state(dir, "hybrid", rank);
    for (const auto& key_rows_and_row : kShapes) {
      const auto& key = key_rows_and_row.first;  // not bound: clang 14 cannot capture a binding
      const auto& rows_and_row = key_rows_and_row.second;
      const auto [rows, row] = rows_and_row;
      const int64_t chunk = (rows + 1) / 2;
      const int64_t mine = std::max<int64_t>(0, std::min(chunk, rows - (rank % 2) * chunk));
      INFO("rank " << rank << " " << key);
      CHECK(state.at(key).numel == mine * row);
      CHECK(state.at(key).state_numel == mine * row);
      covered[key] += state.at(key).state_numel;
    }
  }
  for (const auto& [key, rows_and_row] : kShapes) CHECK(covered[key] == 2 * rows_and_row.first * rows_and_row.second);
  // The sharded checkpoint has one shard per rank of a node, and resumes on one process.
  const std::filesystem::path ckpt = only_checkpoint(dir / "hybrid");
  const auto shards = shard_files(ckpt);
  REQUIRE(shards.size() == 2);
  CHECK(shards[1].filename().string().find(".shard-1-of-2") != std::string::npos);
  fit(dir, "hybrid_resumed_on_1", ranks(1) + "--ckpt_path " + ckpt.string(), 3);
  check_same(dir, "ddp4_three", "hybrid_resumed_on_1");
}

TEST_CASE("fsdp: FULL_SHARD gathers a ShardedUnit before its forward and again before its backward, one unit at a time" *
          doctest::test_suite("fsdp_units_test")) {
  TempDir dir("fsdp-wrapped");
  // The cases of 2 ranks below run in the launch of the first world size.
  const std::vector<Run> more_on_2{
      {"prefetch", ranks(2) + fsdp("FULL_SHARD") + "--model.wrap true --trainer.fsdp.forward_prefetch true"},
      {"no_prefetch", ranks(2) + fsdp("FULL_SHARD") + "--model.wrap true --trainer.fsdp.backward_prefetch NONE"},
      {"wrapped_grad_op", ranks(2) + fsdp("SHARD_GRAD_OP") + "--model.wrap true"},
      {"wrapped_ddp", ranks(2) + "--trainer.strategy ddp --model.wrap true"}};
  for (const int world : {2, 4}) {
    const std::string w = std::to_string(world);
    std::vector<Run> runs{{"ddp" + w, ranks(world) + "--trainer.strategy ddp"},
                          {"root" + w, ranks(world) + fsdp("FULL_SHARD")},
                          {"wrapped" + w, ranks(world) + fsdp("FULL_SHARD") + "--model.wrap true"}};
    if (world == 2) runs.insert(runs.end(), more_on_2.begin(), more_on_2.end());
    fit_all(dir, world, runs);
    check_same(dir, "ddp" + w, "wrapped" + w);
    for (int64_t rank = 0; rank < world; ++rank) {
      const auto root = read_state(dir, "root" + w, rank);
      const auto wrapped = read_state(dir, "wrapped" + w, rank);
      INFO("world " << world << " rank " << rank << ": all-gathers " << root.at("all_gathers").numel << " vs "
                    << wrapped.at("all_gathers").numel);
      CHECK(wrapped.at("units").numel == 4);  // one per Linear, whatever min_num_params says, and `scale`
      // Reduce-scatter inputs (a unit's whole gradients) are dropped as they
      // finish: at most two units' worth in flight, not the whole model's.
      CHECK(wrapped.at("reductions_in_flight").numel >= 1);
      CHECK(wrapped.at("reductions_in_flight").numel <= 2);
      // Without wrapping every unit is whole from the forward to its backward;
      // wrapped, a unit is freed after its forward and gathered again for its backward.
      CHECK(root.at("peak_whole_units").numel == 3);
      // In validation too (after the first step): `scale` and one Linear.
      CHECK(wrapped.at("peak_whole_units").numel <= 2);
      // 8 steps x 3 units: at least one more all-gather per unit and step (before backward).
      CHECK(wrapped.at("all_gathers").numel >= root.at("all_gathers").numel + 24);
    }
  }
  // Prefetching (the next unit in forward, the one before in backward, or
  // neither) moves all-gathers earlier and changes nothing else.
  check_same(dir, "ddp2", "prefetch");
  check_same(dir, "ddp2", "no_prefetch");
  for (int64_t rank = 0; rank < 2; ++rank) {
    const auto wrapped = read_state(dir, "wrapped2", rank);
    CHECK(read_state(dir, "prefetch", rank).at("all_gathers").numel == wrapped.at("all_gathers").numel);
    CHECK(read_state(dir, "no_prefetch", rank).at("all_gathers").numel == wrapped.at("all_gathers").numel);
    CHECK(read_state(dir, "prefetch", rank).at("peak_whole_units").numel <= 3);
  }
  // Validation shards are not padded: 97 samples on 3 ranks of batch 4 give
  // 9, 8 and 8 validation batches. Validation (the sanity check too)
  // gathers a ShardedUnit per forward, and the ranks with 8 repeat their
  // gathers for rank 0's ninth batch: all-gathers pair up (same count on
  // every rank), one unit at a time, and the validation loss is ddp's.
  const std::string uneven = "--trainer.devices 3 --data.batch_size 4 --data.samples 97 --trainer.logger true "
                             "--trainer.num_sanity_val_steps 2 ";
  fit_all(dir, 3,
          {{"uneven_validation", uneven + fsdp("FULL_SHARD") + "--model.wrap true"},
           {"uneven_validation_ddp", uneven + "--trainer.strategy ddp --model.wrap true"}});
  const auto val_loss = [&](const std::string& name) {
    return fulgur::testing::last_csv_value(
        read_file(dir.path() / name / "fulgur_logs" / "version_0" / "metrics.csv"), "val_loss");
  };
  CHECK(val_loss("uneven_validation") == doctest::Approx(val_loss("uneven_validation_ddp")).epsilon(1e-5));
  const int64_t gathers = read_state(dir, "uneven_validation", 0).at("all_gathers").numel;
  for (int64_t rank = 0; rank < 3; ++rank) {
    const auto state = read_state(dir, "uneven_validation", rank);
    CHECK(state.at("all_gathers").numel == gathers);
    CHECK(state.at("peak_whole_units").numel <= 2);
  }
  // Under SHARD_GRAD_OP and ddp the wrapper is only its module.
  check_same(dir, "ddp2", "wrapped_grad_op");
  check_same(dir, "ddp2", "wrapped_ddp");
}

TEST_CASE("fsdp: FULL_SHARD gathers a large parameter whose rows split evenly straight into its whole value" *
          doctest::test_suite("fsdp_units_test")) {
  TempDir dir("fsdp-direct");
  // hidden 256: the middle Linear's weight (256 x 256, 256 KiB) is gathered
  // by itself on 2 and 4 ranks, its bias and the other Linears packed.
  const std::string wide = "--model.hidden 256 ";
  for (const int world : {2, 4}) {
    const std::string w = std::to_string(world);
    std::vector<Run> runs{{"ddp" + w, ranks(world) + wide + "--trainer.strategy ddp"},
                          {"root" + w, ranks(world) + wide + fsdp("FULL_SHARD")},
                          {"wrapped" + w, ranks(world) + wide + fsdp("FULL_SHARD") + "--model.wrap true"},
                          // The same units and steps with every parameter packed
                          // (hidden 12): one all-gather fewer per gather of the middle unit.
                          {"narrow" + w, ranks(world) + fsdp("FULL_SHARD") + "--model.wrap true"}};
    if (world == 2) {
      // Prefetched gathers (started early, some dropped unused) end the same
      // way; SHARD_GRAD_OP packs every parameter: unchanged.
      runs.push_back({"prefetch", ranks(2) + wide + fsdp("FULL_SHARD") + "--model.wrap true --trainer.fsdp.forward_prefetch true"});
      runs.push_back({"grad_op", ranks(2) + wide + fsdp("SHARD_GRAD_OP")});
    }
    fit_all(dir, world, runs);
    check_same(dir, "ddp" + w, "root" + w);
    check_same(dir, "ddp" + w, "wrapped" + w);
    for (int64_t rank = 0; rank < world; ++rank) {
      const auto wrapped = read_state(dir, "wrapped" + w, rank);
      const auto narrow = read_state(dir, "narrow" + w, rank);
      INFO("world " << world << " rank " << rank);
      CHECK(wrapped.at("units").numel == narrow.at("units").numel);
      // 8 steps (2 epochs of 96 samples in global batches of 24), each
      // gathering the middle unit before its forward and its backward.
      CHECK(wrapped.at("all_gathers").numel >= narrow.at("all_gathers").numel + 8 * 2);
    }
  }
  check_same(dir, "ddp2", "prefetch");
  check_same(dir, "ddp2", "grad_op");
}

}  // namespace fsdp_test
