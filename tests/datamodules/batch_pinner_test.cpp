// The pinning rule: a loader pins only CPU tensors, so batches a dataset
// already put on a device (GPU JPEG decoding) are never handed to LibTorch's
// pin_memory, which refuses them. Meta-device tensors stand for GPU ones: a
// CPU-only LibTorch refuses to pin them with the same error.
#include <fulgur/datamodules/datasets/imagenet.hpp>
#include <fulgur/datamodules/loading/batch_pinner.hpp>
#include <fulgur/datamodules/loading/dataset_loader.hpp>
#include <fulgur/trainer/cli/options_yaml.hpp>

#include <doctest/doctest.h>

#include "support/image_tree.hpp"
#include "support/test_support.hpp"

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace batch_pinner_test {

using namespace fulgur;
using fulgur::testing::error_of;
using fulgur::testing::TempDir;

namespace {

const torch::Device kMeta(torch::kMeta);

/// LibTorch's own pin_memory for anything that is not on the CPU (it
/// throws there, as it does for a CUDA tensor), a counted stand-in for CPU
/// tensors (pinning them needs a CUDA driver this machine lacks).
struct StrictPin {
  struct Record {
    std::mutex mutex;
    std::set<const void*> pinned;  // the stand-ins' storage
  };
  std::shared_ptr<Record> record = std::make_shared<Record>();
  torch::Tensor operator()(const torch::Tensor& tensor) const {
    if (!tensor.device().is_cpu()) return tensor.pin_memory();
    torch::Tensor copy = tensor.clone();
    std::lock_guard<std::mutex> lock(record->mutex);
    record->pinned.insert(copy.data_ptr());
    return copy;
  }
  bool pinned(const torch::Tensor& tensor) const {
    std::lock_guard<std::mutex> lock(record->mutex);
    return record->pinned.count(tensor.data_ptr()) == 1;
  }
  size_t count() const {
    std::lock_guard<std::mutex> lock(record->mutex);
    return record->pinned.size();
  }
};

/// The inner dataset's batches with the input on `device` and the target
/// left on the CPU: the shape of a batch decoded on a GPU beside host data.
class OnDevice : public Dataset {
 public:
  OnDevice(std::shared_ptr<const Dataset> inner, torch::Device device) : inner_(std::move(inner)), device_(device) {}
  int64_t size() const override { return inner_->size(); }
  Example get(int64_t index) const override { return inner_->get(index); }
  Batch get_batch(const std::vector<int64_t>& indices) const override {
    Batch batch = inner_->get_batch(indices);
    batch.input = batch.input.to(device_);
    return batch;
  }
  std::shared_ptr<const Dataset> at_epoch(int64_t epoch) const override {
    auto view = inner_->at_epoch(epoch);
    return std::make_shared<const OnDevice>(view ? view : inner_, device_);
  }

 private:
  std::shared_ptr<const Dataset> inner_;
  torch::Device device_;
};

}  // namespace

TEST_CASE("BatchPinner: only dense CPU tensors are pinned; tensors on a device pass unchanged") {
  // What the loader used to do with a device batch: LibTorch refuses it.
  CHECK(error_of([] { torch::empty({2}, kMeta).pin_memory(); }).find("only dense CPU tensors can be pinned") !=
        std::string::npos);

  StrictPin pin;
  const BatchPinner pinner{pin};
  CHECK(pinner.active());
  Batch batch{torch::empty({4, 3, 8, 8}, kMeta), torch::arange(4), {{"mask", torch::ones({4}, kMeta)}}};
  batch.tensors.emplace("lengths", torch::ones({4}));
  batch.tensors.emplace("none", torch::Tensor());
  const Batch pinned = pinner.pin(batch);
  CHECK(pin.count() == 2);  // target and lengths
  CHECK(pin.pinned(pinned.target));
  CHECK(pin.pinned(pinned["lengths"]));
  CHECK(pinned.input.is_same(batch.input));
  CHECK(pinned["mask"].is_same(batch["mask"]));
  CHECK_FALSE(pinned["none"].defined());
  CHECK_FALSE(pinned.target.is_same(batch.target));  // went through the pin function

  CHECK(BatchPinner::pinnable(torch::ones({2})));
  CHECK_FALSE(BatchPinner::pinnable(torch::ones({2}, kMeta)));
  CHECK_FALSE(BatchPinner::pinnable(torch::eye(3).to_sparse()));
  CHECK_FALSE(BatchPinner::pinnable(torch::Tensor()));
  // Without CUDA the default pinner does nothing.
  CHECK(BatchPinner().active() == torch::cuda::is_available());
}

TEST_CASE("DatasetLoader with the shipped ImageNet config (pin_memory: true): batches on a device are never pinned") {
  TempDir dir("pinner-imagenet");
  fulgur::testing::write_class_folders(dir / "train", {"n01", "n02", "n03"}, 4, 0);
  fulgur::testing::write_class_folders(dir / "val", {"n01", "n02", "n03"}, 1, 9);
  // examples/imagenet/config.yaml's data section as the command line reads it.
  YAML::Node data = YAML::LoadFile(std::string(FULGUR_SOURCE_DIR) + "/examples/imagenet/config.yaml")["data"];
  data["root"] = dir.path().string();
  data["batch_size"] = 5;  // 12 images: batches of 5, 5 and 2 (the shipped 256 would make one)
  fulgur::cli::ConfigSection section(data, "data");
  const auto options = fulgur::cli::read_options<ImageNetOptions>(section);
  REQUIRE(options.pin_memory());
  REQUIRE(options.persistent_workers());
  ImageNet imagenet(options);
  imagenet.setup(Stage::Fit);
  auto shipped = std::dynamic_pointer_cast<DatasetLoader>(imagenet.train_dataloader());
  REQUIRE(shipped);
  REQUIRE(shipped->options().pin_memory());

  // The shipped loader's options over the same images, decoded onto a device.
  DatasetLoader loader(std::make_shared<const OnDevice>(shipped->dataset(), kMeta), shipped->options());
  StrictPin pin;
  loader.set_pinner(BatchPinner(pin));
  int64_t batches = 0;
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    loader.set_epoch(epoch);
    auto it = loader.iterate();
    while (auto batch = it->next()) {  // would throw "cannot pin 'MetaFloatType'" if the input were pinned
      CHECK(batch->input.device() == kMeta);
      CHECK(batch->input.sizes() == torch::IntArrayRef{batch->size(), 3, 224, 224});
      CHECK(batch->target.device().is_cpu());
      CHECK(pin.pinned(batch->target));  // the CPU part of the batch is pinned
      ++batches;
    }
  }
  CHECK(batches == 6);
}

}  // namespace batch_pinner_test
