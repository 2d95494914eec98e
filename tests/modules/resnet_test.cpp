// The ResNet family against the real torchvision in the venv: parameter and
// buffer names, weights moving both ways, eval outputs and train-mode
// gradients equal for the same weights and input.
#include <torch/torch.h>

#include <fulgur/fulgur.hpp>

#include "support/test_support.hpp"

#include <doctest/doctest.h>

namespace resnet_test {

using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {

const std::string kParity = std::string(FULGUR_PYTHON) + " " + FULGUR_SOURCE_DIR + "/tests/python/torchvision_parity.py";

fulgur::models::ResNet make(const std::string& arch) {
  auto module = fulgur::models::create_model(arch, 10, 3);
  return fulgur::models::ResNet(module.ptr<fulgur::models::ResNetImpl>());
}

std::vector<std::string> keys(const c10::Dict<std::string, torch::Tensor>& state) {
  std::vector<std::string> names;
  for (const auto& entry : state) names.push_back(entry.key());
  std::sort(names.begin(), names.end());
  return names;
}

// torchvision wrote the model into `dir` (tests/python/torchvision_parity.py
// make); fulgur loads it and must reproduce its eval logits, train logits,
// gradients and updated batch-norm buffers.
void check_torchvision_to_fulgur(const TempDir& dir, const std::string& arch) {
  INFO(arch);
  const auto weights = fulgur::read_state_dict((dir / (arch + ".weights.pt")).string());
  const auto expected = fulgur::read_state_dict((dir / (arch + ".expected.pt")).string());

  auto model = make(arch);
  CHECK(keys(fulgur::state_dict(*model)) == keys(weights));
  fulgur::load_state_dict(*model, weights);

  model->eval();
  {
    torch::NoGradGuard no_grad;
    const torch::Tensor out = model->forward(expected.at("input"));
    INFO("eval max diff " << (out - expected.at("eval_output")).abs().max().item<double>());
    CHECK(torch::allclose(out, expected.at("eval_output"), 1e-4, 1e-4));
  }
  model->train();
  const torch::Tensor logits = model->forward(expected.at("input"));
  torch::nn::functional::cross_entropy(logits, expected.at("target")).backward();
  CHECK(torch::allclose(logits.detach(), expected.at("train_output"), 1e-4, 1e-4));
  int64_t compared = 0;
  for (const auto& item : model->named_parameters()) {
    const torch::Tensor& want = expected.at("grad." + item.key());
    INFO(item.key() << " grad max diff " << (item.value().grad() - want).abs().max().item<double>());
    CHECK(torch::allclose(item.value().grad(), want, 1e-4, 1e-5));
    ++compared;
  }
  for (const auto& item : model->named_buffers()) {
    INFO(item.key());
    CHECK(torch::allclose(item.value().to(torch::kFloat64), expected.at("after." + item.key()).to(torch::kFloat64),
                          1e-5, 1e-6));
  }
  CHECK(compared == static_cast<int64_t>(model->parameters().size()));
}

// fulgur writes its weights and its eval logits into `dir`; torchvision loads
// them (strict, weights_only) and must produce the same logits
// (tests/python/torchvision_parity.py check, once for every arch).
void write_fulgur_model(const TempDir& dir, const std::string& arch, int64_t side) {
  torch::manual_seed(3);
  auto model = make(arch);
  {
    torch::NoGradGuard no_grad;
    for (const auto& item : model->named_buffers()) {
      if (item.key().find("running_mean") != std::string::npos) item.value().uniform_(-0.1, 0.1);
    }
  }
  model->eval();
  const torch::Tensor input = torch::randn({2, 3, side, side});
  c10::Dict<std::string, torch::Tensor> io;
  io.insert("input", input);
  {
    torch::NoGradGuard no_grad;
    io.insert("output", model->forward(input));
  }
  fulgur::write_state_dict(fulgur::state_dict(*model), (dir / (arch + ".weights.pt")).string());
  fulgur::write_state_dict(io, (dir / (arch + ".io.pt")).string());
}

}  // namespace

TEST_CASE("resnet18: parameter and buffer names are torchvision's") {
  auto model = fulgur::models::resnet18(1000);
  const auto state = fulgur::state_dict(*model);
  for (const char* name : {"conv1.weight", "bn1.weight", "bn1.running_mean", "bn1.num_batches_tracked",
                           "layer1.0.conv1.weight", "layer1.1.bn2.running_var", "layer2.0.downsample.0.weight",
                           "layer2.0.downsample.1.bias", "layer4.1.conv2.weight", "fc.weight", "fc.bias"}) {
    INFO(name);
    CHECK(state.contains(name));
  }
  CHECK_FALSE(state.contains("layer1.0.downsample.0.weight"));  // same shape in and out: identity shortcut
  CHECK(state.at("conv1.weight").sizes() == torch::IntArrayRef({64, 3, 7, 7}));
  CHECK(state.at("fc.weight").sizes() == torch::IntArrayRef({1000, 512}));
  CHECK(state.size() == 122);  // torchvision's resnet18().state_dict() has 122 entries

  auto cifar = fulgur::models::resnet18(10, 1, /*cifar_stem=*/true);
  CHECK(fulgur::state_dict(*cifar).at("conv1.weight").sizes() == torch::IntArrayRef({64, 1, 3, 3}));
  CHECK(cifar->forward(torch::randn({2, 1, 8, 8})).sizes() == torch::IntArrayRef({2, 10}));
}

TEST_CASE("resnet50: bottleneck names and sizes are torchvision's") {
  auto model = fulgur::models::resnet50(1000);
  const auto state = fulgur::state_dict(*model);
  CHECK(state.size() == 320);  // torchvision's resnet50().state_dict() has 320 entries
  CHECK(state.at("layer1.0.conv3.weight").sizes() == torch::IntArrayRef({256, 64, 1, 1}));
  CHECK(state.at("layer1.0.downsample.0.weight").sizes() == torch::IntArrayRef({256, 64, 1, 1}));
  CHECK(state.at("layer3.5.bn3.running_mean").sizes() == torch::IntArrayRef({1024}));
  CHECK(state.at("fc.weight").sizes() == torch::IntArrayRef({1000, 2048}));
  int64_t count = 0;
  for (const auto& p : model->parameters()) count += p.numel();
  CHECK(count == 25557032);  // torchvision's figure for ResNet-50
}

TEST_CASE("create_model: every listed arch builds and runs; unknown arch is named") {
  for (const auto& arch : fulgur::models::model_names()) {
    if (arch.find("101") != std::string::npos || arch.find("152") != std::string::npos) continue;  // slow to build
    INFO(arch);
    auto model = fulgur::models::create_model(arch, 7, 3);
    model.ptr()->eval();
    torch::NoGradGuard no_grad;
    CHECK(model.forward(torch::randn({1, 3, 32, 32})).sizes() == torch::IntArrayRef({1, 7}));
  }
  CHECK(fulgur::state_dict(*fulgur::models::create_model("resnet101", 10).ptr()).size() == 626);
  CHECK(fulgur::state_dict(*fulgur::models::create_model("resnet152", 10).ptr()).size() == 932);
  CHECK_THROWS_WITH(fulgur::models::create_model("resnet19", 10),
                    doctest::Contains("[create_model] unknown arch 'resnet19' (expected one of resnet18, resnet34"));
}

TEST_CASE("resnet: zero_init_residual zeroes each block's last BN; channels_last gives the same logits") {
  torch::manual_seed(4);
  fulgur::models::ResNet plain(fulgur::models::resnet_options(18).num_classes(10).cifar_stem(true));
  fulgur::models::ResNet zeroed(
      fulgur::models::resnet_options(50).num_classes(10).cifar_stem(true).zero_init_residual(true));
  const auto zeroed_state = fulgur::state_dict(*zeroed);
  CHECK(zeroed_state.at("layer1.0.bn3.weight").abs().sum().item<double>() == 0);
  CHECK(zeroed_state.at("layer1.0.bn2.weight").min().item<double>() == 1);
  CHECK(fulgur::state_dict(*plain).at("layer1.0.bn2.weight").min().item<double>() == 1);

  fulgur::models::ResNet nhwc(fulgur::models::resnet_options(18).num_classes(10).cifar_stem(true).channels_last(true));
  CHECK(nhwc->named_parameters()["conv1.weight"].is_contiguous(torch::MemoryFormat::ChannelsLast));
  fulgur::load_state_dict(*nhwc, fulgur::state_dict(*plain));
  CHECK(nhwc->named_parameters()["conv1.weight"].is_contiguous(torch::MemoryFormat::ChannelsLast));
  plain->eval();
  nhwc->eval();
  torch::NoGradGuard no_grad;
  const torch::Tensor x = torch::randn({2, 3, 16, 16});
  CHECK(torch::allclose(plain->forward(x), nhwc->forward(x), 1e-4, 1e-5));
}

TEST_CASE("resnet18, resnet50 and resnet18_cifar: torchvision weights give torchvision's outputs and gradients") {
  TempDir dir("resnet-from-torchvision");
  const auto made = run_command(kParity + " make " + dir.path().string() + " resnet18 resnet50 resnet18_cifar", 600);
  INFO(made.output);
  REQUIRE(made.exit_code == 0);
  for (const std::string arch : {"resnet18", "resnet50", "resnet18_cifar"}) check_torchvision_to_fulgur(dir, arch);
}

TEST_CASE("resnet18 and resnet50: fulgur weights load into torchvision with the same outputs") {
  TempDir dir("resnet-to-torchvision");
  write_fulgur_model(dir, "resnet18", 64);
  write_fulgur_model(dir, "resnet50", 64);
  const auto checked = run_command(kParity + " check " + dir.path().string() + " resnet18 resnet50", 600);
  INFO(checked.output);
  CHECK(checked.exit_code == 0);
  CHECK(checked.output.find("resnet18: max |torchvision - fulgur|") != std::string::npos);
  CHECK(checked.output.find("resnet50: max |torchvision - fulgur|") != std::string::npos);
}

TEST_CASE("load_pretrained: a different head keeps its fresh init; other mismatches are errors") {
  TempDir dir("pretrained");
  torch::manual_seed(5);
  auto source = fulgur::models::resnet18(1000, 3, true);
  const std::string path = (dir / "w.pt").string();
  fulgur::write_state_dict(fulgur::state_dict(*source), path);
  auto target = fulgur::models::resnet18(10, 3, true);
  const torch::Tensor fresh_fc = target->named_parameters()["fc.weight"].clone();
  const auto skipped = fulgur::load_pretrained(*target, path);
  CHECK(skipped == std::vector<std::string>{"fc.weight", "fc.bias"});
  CHECK(torch::equal(target->named_parameters()["fc.weight"], fresh_fc));
  CHECK(torch::equal(target->named_parameters()["layer3.1.conv2.weight"],
                     source->named_parameters()["layer3.1.conv2.weight"]));

  auto imagenet_stem = fulgur::models::resnet18(1000, 3, false);
  CHECK_THROWS_WITH(fulgur::load_pretrained(*imagenet_stem, path),
                    doctest::Contains("size mismatch for 'conv1.weight': the state dict has [64, 3, 3, 3], the "
                                      "module has [64, 3, 7, 7]"));
}

}  // namespace resnet_test
