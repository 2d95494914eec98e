// Training parity with PyTorch Lightning: the cinic10 example with
// --model.arch resnet18 and a plain Lightning script with torchvision's
// resnet18 train from the same initial weights (written by torchvision) on
// the digits folder with the same settings (SGD + momentum, lr, weight decay,
// batch size, epochs, no augmentation) and the same shuffled order of
// batches, and must end within 1 % test accuracy and 1 % test loss of each
// other. The order is shared (fulgur's --data.seed, a one-replica
// DistributedSampler on the Python side) because with each side shuffling on
// its own the two runs are two samples of a noisy process: on the 270 test
// images they differ by a few percent whatever the framework, so 1 % would
// test luck. With it both compute the same steps with the same kernels (the
// wheel's LibTorch on both sides, one thread each): the test loss, which a
// different weight decay, momentum or batch-norm update moves where the
// accuracy may not, agreed to all six printed digits (2026-11-30).
#include "support/test_support.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <regex>
#include <sstream>
#include <vector>

namespace training_parity_test {

using fulgur::testing::read_file;
using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {
const std::string kSource = FULGUR_SOURCE_DIR;
const std::string kDigits = kSource + "/data/digits-cinic";
// 3 epochs (120 steps). At 6 both were at 82.6 % (lr 0.05 without a schedule
// overshoots by then): twice the time, no stronger check.
constexpr int kEpochs = 3;
// lr 0.05 sat on the edge of divergence: both sides agreed, but on 90.0 %
// (2026-11-30, AMD EPYC), 70.0 % and a loss of 2.9 (2026-12-02, an AVX-512
// Xeon), 63.3 % with LibTorch's and oneDNN's AVX2 kernels forced there. At
// 0.002 the same four numeric paths gave 92.2-95.6 % (test losses 0.15-0.24).
const std::string kLr = "0.002";
const std::string kOrderSeed = "7";

// The last non-empty value of `column` in a metrics.csv.
double last_value(const std::string& csv, const std::string& column) {
  std::istringstream in(csv);
  std::string header;
  std::getline(in, header);
  std::vector<std::string> names;
  std::stringstream header_cells(header);
  for (std::string name; std::getline(header_cells, name, ',');) names.push_back(name);
  const auto index = std::find(names.begin(), names.end(), column) - names.begin();
  double value = -1;
  for (std::string line; std::getline(in, line);) {
    std::stringstream cells(line);
    std::string cell;
    for (int64_t i = 0; std::getline(cells, cell, ','); ++i) {
      if (i == index && !cell.empty()) value = std::stod(cell);
    }
  }
  return value;
}

double number_after(const std::string& text, const std::string& pattern) {
  std::smatch match;
  REQUIRE_MESSAGE(std::regex_search(text, match, std::regex(pattern + "([0-9.]+)")), pattern);
  return std::stod(match[1]);
}
}  // namespace

TEST_CASE("training parity: fulgur resnet18 and Lightning + torchvision reach the same test accuracy and loss") {
  REQUIRE_MESSAGE(std::filesystem::exists(kDigits + "/train"), "demo data missing: run scripts/setup.sh");
  TempDir dir("training-parity");
  const std::string init = (dir / "init.pt").string();
  const std::string python = FULGUR_PYTHON;

  // Both sides at once, one compute thread and one loader worker each. Neither validates: the test set's accuracy
  // after the last epoch is what is compared (a validation pass changes no weight and cost 7 % of the time).
  // The Lightning side writes the initial weights (torchvision's, from seed 0) before it trains, and fulgur
  // starts from them once the file is there: a Python process of its own to write them took 10 s, alone.
  const std::string epochs = std::to_string(kEpochs);
  const std::string ours = std::string(FULGUR_BINARY_DIR) + "/bin/cinic10 fit --config " + kSource +
                           "/examples/cinic10/digits.yaml --data.root " + kDigits + " --data.num_workers 1" +
                           " --trainer.default_root_dir " + dir.path().string() + " --trainer.max_epochs " + epochs +
                           " --trainer.enable_progress_bar false --model.arch resnet18 --model.weights " + init +
                           " --model.lr " + kLr + " --model.lr_step_size 0 --data.batch_size 32 --data.seed " + kOrderSeed +
                           " --trainer.limit_val_batches 0";
  const std::string theirs = python + " " + kSource + "/bench/lightning/train_cinic.py --root " + kDigits +
                             " --arch resnet18 --init-out " + init + " --epochs " + epochs +
                             " --batch-size 32 --lr " + kLr + " --momentum 0.9 --weight-decay 0.0005 --workers 1"
                             " --threads 1 --limit-val-batches 0 --order-seed " + kOrderSeed + " --out " +
                             (dir / "lightning").string();
  const auto both = run_command(theirs + " > " + (dir / "theirs.log").string() + " 2>&1 & " +
                                    "while [ ! -e " + init + " ] && kill -0 $! 2>/dev/null; do sleep 0.1; done; " +
                                    "OMP_NUM_THREADS=1 " + ours + " > " + (dir / "ours.log").string() + " 2>&1; " +
                                    "ours=$?; wait $!; theirs=$?; echo exit $ours $theirs",
                                600);
  const std::string ours_log = read_file(dir / "ours.log");
  const std::string theirs_log = read_file(dir / "theirs.log");
  INFO(ours_log);
  INFO(theirs_log);
  REQUIRE(both.output == "exit 0 0\n");

  const std::string csv = read_file(dir / "fulgur_logs" / "version_0" / "metrics.csv");
  const double ours_acc = last_value(csv, "test_acc");
  const double theirs_acc = number_after(theirs_log, "test_acc=");
  const double ours_loss = last_value(csv, "test_loss");
  const double theirs_loss = number_after(theirs_log, "test_loss=");
  MESSAGE("test accuracy: fulgur " << ours_acc << ", lightning " << theirs_acc);
  MESSAGE("test loss: fulgur " << ours_loss << ", lightning " << theirs_loss);
  CHECK(ours_acc > 0.8);
  CHECK(theirs_acc > 0.8);
  CHECK(std::abs(ours_acc - theirs_acc) <= 0.01);
  REQUIRE(theirs_loss > 0);
  CHECK(std::abs(ours_loss - theirs_loss) <= 0.01 * theirs_loss);
}

}  // namespace training_parity_test
