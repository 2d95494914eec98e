// The cinic10 example's model options: torchvision weights loaded with
// --model.weights, a new head for --model.num_classes, clear errors.
#include "support/test_support.hpp"

#include <doctest/doctest.h>

#include <filesystem>

namespace model_weights_cli_test {

using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {
const std::string kBinary = std::string(FULGUR_BINARY_DIR) + "/bin/cinic10";
const std::string kDigits = std::string(FULGUR_SOURCE_DIR) + "/data/digits-cinic";
const std::string kConfig = std::string(FULGUR_SOURCE_DIR) + "/examples/cinic10/digits.yaml";

// torchvision's resnet18 with an ImageNet-size head, saved by torch.save
// (as a dict: LibTorch cannot read the OrderedDict state_dict() returns).
std::string save_torchvision_resnet18(const TempDir& dir) {
  const std::string path = (dir / "resnet18-imagenet.pt").string();
  const auto saved = run_command(std::string(FULGUR_PYTHON) +
                                 " -c \"import torch, torchvision; torch.manual_seed(0); "
                                 "torch.save(dict(torchvision.models.resnet18(num_classes=1000).state_dict()), '" +
                                 path + "')\"");
  INFO(saved.output);
  REQUIRE(saved.exit_code == 0);
  return path;
}
}  // namespace

TEST_CASE("cinic10 --model.weights: torchvision resnet18 weights fine-tune with a new 10-class head") {
  REQUIRE_MESSAGE(std::filesystem::exists(kDigits + "/train"), "demo data missing: run scripts/setup.sh");
  TempDir dir("model-weights");
  const std::string weights = save_torchvision_resnet18(dir);
  const std::string common = kBinary + " fit --config " + kConfig + " --data.root " + kDigits +
                             " --trainer.default_root_dir " + dir.path().string() +
                             " --trainer.max_epochs 1 --trainer.limit_train_batches 2 --trainer.limit_val_batches 1"
                             " --test_after_fit false --trainer.enable_progress_bar false";
  const auto tuned = run_command(common + " --model.arch resnet18 --model.num_classes 10 --model.weights " + weights);
  INFO(tuned.output);
  CHECK(tuned.exit_code == 0);
  CHECK(tuned.output.find("fulgur: loaded weights from " + weights +
                          " except fc.weight, fc.bias (shape differs: new head for num_classes 10)\n") !=
        std::string::npos);

  const auto wrong_arch = run_command(common + " --model.arch resnet50 --model.weights " + weights);
  CHECK(wrong_arch.exit_code == 2);
  CHECK(wrong_arch.output.find("error: [load_state_dict]") != std::string::npos);
  CHECK(wrong_arch.output.find("(weights file '" + weights + "')") != std::string::npos);

  const auto missing = run_command(common + " --model.arch resnet18 --model.weights " + dir.path().string() + "/no.pt");
  CHECK(missing.exit_code == 2);
  CHECK(missing.output.find("error: model.weights: must be an existing file, got " + dir.path().string() +
                            "/no.pt\n") != std::string::npos);

  const auto unknown = run_command(common + " --model.arch resnet17");
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.output.find("resnet17") != std::string::npos);
}

}  // namespace model_weights_cli_test
