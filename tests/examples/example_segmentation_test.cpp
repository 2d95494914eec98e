// The segmentation example (examples/segmentation): float mask targets
// through DatasetLoader worker threads on 1 and 2 processes, and an IoU
// that is exact over any number of ranks because the module sums counts
// and reduces them before dividing.
#include "support/pickled_tensor.hpp"
#include "support/test_support.hpp"

#include <torch/torch.h>

#include <doctest/doctest.h>

namespace example_segmentation_test {

using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {

const std::string kSegmentation = std::string(FULGUR_BINARY_DIR) + "/bin/segmentation";

fulgur::testing::CommandResult run(const std::string& flags) { return run_command(kSegmentation + " " + flags, 300); }

std::string metrics_line(const std::string& output) {
  const auto at = output.find("val_iou ");
  REQUIRE(at != std::string::npos);
  return output.substr(at, output.find('\n', at) - at);
}

}  // namespace

TEST_CASE("segmentation example: float masks through loader workers, ddp equals 1 process, IoU exact on 1-3 ranks") {
  TempDir dir("example-segmentation");
  const auto one = run("--devices 1 --batch_size 32 --max_epochs 3 --default_root_dir " + (dir / "one").string());
  INFO(one.output);
  REQUIRE(one.exit_code == 0);
  const std::string fitted = metrics_line(one.output);
  CHECK(std::stod(fitted.substr(8)) > 0.8);  // val_iou: the masks are learned
  CHECK(fitted.find("val_images 301") != std::string::npos);

  // One epoch (32 Adam steps) on 1 and 2 processes: Adam turns rounding
  // differences in near-zero gradients into full steps, so longer runs drift.
  const auto first = run("--devices 1 --batch_size 32 --max_epochs 1 --default_root_dir " + (dir / "first").string() +
                         " --weights " + (dir / "first.pt").string());
  INFO(first.output);
  REQUIRE(first.exit_code == 0);
  const auto two = run("--devices 2 --strategy ddp --batch_size 16 --max_epochs 1 --default_root_dir " + (dir / "two").string() +
                       " --weights " + (dir / "two.pt").string());
  INFO(two.output);
  REQUIRE(two.exit_code == 0);
  const torch::Tensor reference = fulgur::testing::load_pickled_tensor(dir / "first.pt");
  CHECK(torch::allclose(fulgur::testing::load_pickled_tensor(dir / "two.pt"), reference, 1e-5, 1e-5));
  CHECK(torch::equal(fulgur::testing::load_pickled_tensor(dir / "two.pt.rank1"),
                     fulgur::testing::load_pickled_tensor(dir / "two.pt")));

  // The same weights validated on 1, 2 and 3 ranks (uneven shards of 301
  // images): the counts are integers, so IoU and Dice agree to every digit.
  const auto ckpt = dir / "one" / "fulgur_logs" / "version_0" / "checkpoints" / "last.ckpt";
  for (const int devices : {1, 2, 3}) {
    CAPTURE(devices);
    const auto validated = run("--validate_only true --ckpt_path " + ckpt.string() + " --devices " + std::to_string(devices) +
                               " --strategy " + (devices == 1 ? "auto" : "ddp") + " --default_root_dir " +
                               (dir / ("validate" + std::to_string(devices))).string());
    INFO(validated.output);
    REQUIRE(validated.exit_code == 0);
    CHECK(metrics_line(validated.output) == fitted);
  }
}

}  // namespace example_segmentation_test
