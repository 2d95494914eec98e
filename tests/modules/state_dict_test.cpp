// fulgur::state_dict / load_state_dict: names, order, strictness, errors
// that leave the module unchanged; weights files written and read back.
#include <torch/torch.h>

#include <fulgur/modules/state_dict.hpp>
#include <fulgur/modules/weights_file.hpp>

#include "support/test_support.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

namespace state_dict_test {

using fulgur::testing::error_of;
using fulgur::testing::TempDir;

namespace {

struct NetImpl : torch::nn::Module {
  NetImpl() {
    conv = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 4, 3).bias(false)));
    bn = register_module("bn", torch::nn::BatchNorm2d(4));
    head = register_module("head", torch::nn::Sequential(torch::nn::Linear(4, 2)));
  }
  torch::nn::Conv2d conv{nullptr};
  torch::nn::BatchNorm2d bn{nullptr};
  torch::nn::Sequential head{nullptr};
};
TORCH_MODULE(Net);

std::vector<std::string> keys(const c10::Dict<std::string, torch::Tensor>& state) {
  std::vector<std::string> names;
  for (const auto& entry : state) names.push_back(entry.key());
  return names;
}

}  // namespace

TEST_CASE("state_dict: parameters then buffers with dotted names in registration order") {
  Net net;
  const auto state = fulgur::state_dict(*net);
  CHECK(keys(state) == std::vector<std::string>{"conv.weight", "bn.weight", "bn.bias", "head.0.weight", "head.0.bias",
                                                "bn.running_mean", "bn.running_var", "bn.num_batches_tracked"});
  CHECK((state.at("bn.num_batches_tracked").scalar_type() == torch::kLong));
  CHECK_FALSE(state.at("conv.weight").requires_grad());
}

TEST_CASE("load_state_dict copies every tensor and keeps the module's dtype") {
  torch::manual_seed(1);
  Net source;
  Net target;
  source->bn->running_mean.uniform_(-1, 1);
  auto state = fulgur::state_dict(*source);
  state.insert_or_assign("head.0.bias", state.at("head.0.bias").to(torch::kFloat64));  // converted on copy
  fulgur::load_state_dict(*target, state);
  for (const auto& entry : fulgur::state_dict(*target)) {
    INFO(entry.key());
    CHECK(torch::equal(entry.value(), fulgur::state_dict(*source).at(entry.key())));
  }
  CHECK((target->head[0]->as<torch::nn::Linear>()->bias.scalar_type() == torch::kFloat32));
  CHECK(target->conv->weight.requires_grad());
}

TEST_CASE("load_state_dict strict: missing, unexpected and mis-shaped keys are named; nothing is copied") {
  Net net;
  const torch::Tensor before = net->conv->weight.clone();
  Net other;
  {
    auto state = fulgur::state_dict(*other);
    CHECK(state.erase("bn.running_var") == 1);
    CHECK(error_of([&] { fulgur::load_state_dict(*net, state); }) ==
          "[load_state_dict] missing key 'bn.running_var' in the state dict");
    CHECK_NOTHROW(fulgur::load_state_dict(*net, state, /*strict=*/false));
    CHECK(torch::equal(net->conv->weight, other->conv->weight));
  }
  net->conv->weight.data().copy_(before);
  {
    auto state = fulgur::state_dict(*other);
    state.insert("fc.weight", torch::zeros({2}));
    CHECK(error_of([&] { fulgur::load_state_dict(*net, state); }) ==
          "[load_state_dict] unexpected key 'fc.weight' in the state dict (the module has no such parameter or "
          "buffer)");
    CHECK(torch::equal(net->conv->weight, before));
  }
  {
    auto state = fulgur::state_dict(*other);
    state.insert_or_assign("head.0.weight", torch::zeros({3, 4}));
    const std::string message = error_of([&] { fulgur::load_state_dict(*net, state, /*strict=*/false); });
    CHECK(message ==
          "[load_state_dict] size mismatch for 'head.0.weight': the state dict has [3, 4], the module has [2, 4]");
    CHECK(torch::equal(net->conv->weight, before));
  }
}

TEST_CASE("write_state_dict / read_state_dict round trip; bad files are named") {
  TempDir dir("state-dict");
  torch::manual_seed(2);
  Net net;
  const std::string path = (dir / "weights.pt").string();
  fulgur::write_state_dict(fulgur::state_dict(*net), path);
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
  const auto loaded = fulgur::read_state_dict(path);
  CHECK(keys(loaded) == keys(fulgur::state_dict(*net)));
  CHECK(torch::equal(loaded.at("conv.weight"), net->conv->weight));

  CHECK(error_of([&] { fulgur::read_state_dict((dir / "none.pt").string()); }) ==
        "[read_state_dict] cannot open weights file '" + (dir / "none.pt").string() + "'");
  std::ofstream((dir / "junk.pt").string()) << "not a checkpoint";
  CHECK(error_of([&] { fulgur::read_state_dict((dir / "junk.pt").string()); })
            .rfind("[read_state_dict] '" + (dir / "junk.pt").string() + "' is not a file written by torch.save", 0) ==
        0);
}

}  // namespace state_dict_test
