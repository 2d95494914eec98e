#include "support/test_support.hpp"

#include <fulgur/engine/checkpoint/checkpoint_io.hpp>

#include <torch/torch.h>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <fstream>
#include <map>
#include <sstream>

namespace checkpoint_resume_test {

using namespace fulgur;
using fulgur::testing::read_file;
using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {

const std::string kProbe = std::string(FULGUR_BINARY_DIR) + "/bin/checkpoint_probe";

/// Runs the probe's CLI: 80 examples in batches of 8 (10 steps an epoch), 3 epochs.
std::string fit(const std::filesystem::path& root, int64_t workers, int64_t max_steps, const std::string& extra) {
  const std::string command = fmt::format(
      "{} fit --seed_everything 42 --trainer.accelerator cpu --trainer.deterministic true "
      "--trainer.enable_progress_bar false --trainer.log_every_n_steps 1 --trainer.max_epochs 3 "
      "--trainer.max_steps {} --trainer.default_root_dir {} --data.num_workers {} {}",
      kProbe, max_steps, root.string(), workers, extra);
  const auto result = run_command(command, 120);
  INFO(command << "\n" << result.output);
  REQUIRE(result.exit_code == 0);
  return result.output;
}

std::vector<torch::Tensor> load_params(const std::filesystem::path& path) {
  std::vector<torch::Tensor> params;
  torch::load(params, path.string());
  return params;
}

bool bit_identical(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!torch::equal(a[i], b[i])) return false;
  }
  return true;
}

/// step -> train_loss_step text, from the rows that carry a per-step loss.
std::map<int64_t, std::vector<std::string>> step_losses(const std::filesystem::path& csv) {
  std::istringstream in(read_file(csv));
  std::string header;
  std::getline(in, header);
  std::vector<std::string> columns;
  std::stringstream split(header);
  for (std::string c; std::getline(split, c, ',');) columns.push_back(c);
  const auto column = [&](const std::string& name) {
    return static_cast<size_t>(std::find(columns.begin(), columns.end(), name) - columns.begin());
  };
  const size_t step_col = column("step");
  const size_t loss_col = column("train_loss_step");
  REQUIRE(loss_col < columns.size());
  std::map<int64_t, std::vector<std::string>> losses;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::stringstream row(line);
    for (std::string c; std::getline(row, c, ',');) cells.push_back(c);
    cells.resize(columns.size());
    if (!cells[loss_col].empty()) losses[std::stoll(cells[step_col])].push_back(cells[loss_col]);
  }
  return losses;
}

}  // namespace

TEST_CASE("resume: stopped after k steps and resumed in a fresh process, parameters are bit-identical") {
  for (int64_t workers : {0, 2}) {
    TempDir dir(fmt::format("resume-w{}", workers));
    fit(dir / "full", workers, 30, fmt::format("--model.output {}", (dir / "full.pt").string()));
    const auto full = load_params(dir / "full.pt");
    const auto full_losses = step_losses(dir / "full" / "fulgur_logs" / "version_0" / "metrics.csv");
    REQUIRE(full_losses.size() == 30);

    // Start of epoch 1, its middle, and just before its last batch.
    for (int64_t k : {10, 15, 19}) {
      CAPTURE(workers);
      CAPTURE(k);
      const auto root = dir / fmt::format("stop{}", k);
      fit(root, workers, k, "");
      CHECK(std::filesystem::exists(root / "fulgur_logs" / "version_0" / "checkpoints" / "last.ckpt"));
      const std::string out = fit(root, workers, 30,
                                  fmt::format("--ckpt_path last --model.output {}", (root / "resumed.pt").string()));
      CHECK(out.find("restored from checkpoint") != std::string::npos);
      CHECK(bit_identical(load_params(root / "resumed.pt"), full));
      // The resumed run appends to the same run folder: every step once, same losses.
      CHECK_FALSE(std::filesystem::exists(root / "fulgur_logs" / "version_1" / "metrics.csv"));
      const auto losses = step_losses(root / "fulgur_logs" / "version_0" / "metrics.csv");
      CHECK(losses == full_losses);
    }
  }
}

TEST_CASE("resume: from a checkpoint saved inside on_train_batch_end (mid-epoch and at the last batch)") {
  TempDir dir("resume-batch-end");
  for (int64_t step : {5, 20}) {
    CAPTURE(step);
    const auto root = dir / fmt::format("full{}", step);
    fit(root, 2, 30, fmt::format("--model.save_at_step {} --model.output {}", step, (root / "full.pt").string()));
    const auto ckpt = root / "fulgur_logs" / "version_0" / "checkpoints" / fmt::format("step={}.ckpt", step);
    REQUIRE(std::filesystem::exists(ckpt));
    const Checkpoint c = CheckpointIO::load(ckpt);
    CHECK(c.at("global_step").toInt() == step);
    const auto fresh = dir / fmt::format("resumed{}", step);
    fit(fresh, 2, 30, fmt::format("--ckpt_path {} --model.output {}", ckpt.string(), (fresh / "resumed.pt").string()));
    CHECK(bit_identical(load_params(fresh / "resumed.pt"), load_params(root / "full.pt")));
    // Steps after the checkpoint, each once; validation that was due at the
    // checkpointed batch (step 20 ends epoch 1) runs after the resume.
    const auto losses = step_losses(fresh / "fulgur_logs" / "version_0" / "metrics.csv");
    CHECK(losses.size() == static_cast<size_t>(30 - step));
    CHECK(losses.begin()->first == step + 1);
    if (step == 20) {
      const std::string csv = read_file(fresh / "fulgur_logs" / "version_0" / "metrics.csv");
      CHECK(csv.find("\n1,20,") != std::string::npos);  // epoch 1's validation row at step 20
    }
  }
}

TEST_CASE("resume: the checkpoint loads in Python with the module's dotted names and PyTorch's optimizer layout") {
  TempDir dir("resume-python");
  fit(dir.path(), 0, 12, "");
  const auto ckpt = dir / "fulgur_logs" / "version_0" / "checkpoints" / "last.ckpt";
  const std::string script = fmt::format(R"(import torch
c = torch.load('{}', weights_only=True)
assert list(c['state_dict'].keys()) == ['net.0.weight', 'net.0.bias', 'net.3.weight', 'net.3.bias'], list(c['state_dict'])
assert c['global_step'] == 12 and c['epoch'] == 1, (c['global_step'], c['epoch'])
opt = c['optimizer_states'][0]
assert sorted(opt.keys()) == ['param_groups', 'state']
g = opt['param_groups'][0]
assert g['params'] == [0, 1, 2, 3] and g['momentum'] == 0.9 and abs(g['lr'] - 0.1) < 1e-12, g
assert sorted(opt['state'].keys()) == [0, 1, 2, 3]
assert opt['state'][0]['momentum_buffer'].shape == (16, 6)
# The optimizer state drops into a real torch.optim.SGD over the same shapes.
net = torch.nn.Module()
net.net = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Dropout(0.3), torch.nn.Linear(16, 3))
net.load_state_dict(c['state_dict'])
sgd = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
sgd.load_state_dict(opt)
assert c['loops']['fit_loop']['batch_in_epoch'] == 2
assert c['rng_states']['torch'].dtype == torch.uint8
assert c['lr_schedulers'][0]['_step_count'] == 1
assert c['hyper_parameters']['seed_everything'] == 42
assert any(k.startswith('ModelCheckpoint') for k in c['callbacks'])
print('python-ok')
)",
                                         ckpt.string());
  std::ofstream(dir / "check.py") << script;
  const auto result = run_command(std::string(FULGUR_PYTHON) + " " + (dir / "check.py").string(), 120);
  INFO(result.output);
  CHECK(result.exit_code == 0);
  CHECK(result.output.find("python-ok") != std::string::npos);
}

TEST_CASE("resume: 'last' skips a corrupt newest checkpoint with a warning; validate/test load weights") {
  TempDir dir("resume-last");
  fit(dir.path(), 0, 10, "");
  const auto checkpoints = dir / "fulgur_logs" / "version_0" / "checkpoints";
  // A newer, corrupt checkpoint (a torn copy) must be skipped.
  const std::string bytes = read_file(checkpoints / "last.ckpt");
  std::ofstream(checkpoints / "zz-newer.ckpt", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  const std::string out = fit(dir.path(), 0, 20, "--ckpt_path last");
  CHECK(out.find("warning: skipping checkpoint " + (checkpoints / "zz-newer.ckpt").string()) != std::string::npos);
  CHECK(out.find("restored from checkpoint " + (checkpoints / "last.ckpt").string()) != std::string::npos);

  const auto validate = run_command(
      fmt::format("{} validate --seed_everything 1 --trainer.accelerator cpu --trainer.enable_progress_bar false "
                  "--trainer.default_root_dir {} --ckpt_path {}",
                  kProbe, dir.path().string(), (checkpoints / "last.ckpt").string()),
      120);
  INFO(validate.output);
  CHECK(validate.exit_code == 0);
  CHECK(validate.output.find("restored from checkpoint") != std::string::npos);

  const auto missing = run_command(
      fmt::format("{} test --trainer.accelerator cpu --trainer.default_root_dir {} --ckpt_path {}", kProbe,
                  dir.path().string(), (dir / "nope.ckpt").string()),
      120);
  CHECK(missing.exit_code == 2);
  CHECK(missing.output.find("cannot read checkpoint " + (dir / "nope.ckpt").string()) != std::string::npos);
}

}  // namespace checkpoint_resume_test
