#pragma once

// Synthetic segmentation data: 32x32 grey images holding one filled circle
// or rectangle over noise; the target is the shape's mask, a float tensor
// [1, 32, 32] (1 inside). Every sample is drawn from its index alone.
#include <fulgur/fulgur.hpp>

namespace examples {

constexpr int64_t kImageSize = 32;

class Shapes : public fulgur::Dataset {
 public:
  Shapes(int64_t size, uint64_t seed) : size_(size), seed_(seed) {}

  int64_t size() const override { return size_; }
  fulgur::Example get(int64_t index) const override {
    torch::Generator rng = at::make_generator<at::CPUGeneratorImpl>(seed_ * 1000003 + static_cast<uint64_t>(index));
    auto uniform = [&](double lo, double hi) { return lo + (hi - lo) * torch::rand({1}, rng).item<double>(); };
    const torch::Tensor y = torch::arange(kImageSize, torch::kFloat).view({kImageSize, 1});
    const torch::Tensor x = torch::arange(kImageSize, torch::kFloat).view({1, kImageSize});
    const double cy = uniform(8, 24), cx = uniform(8, 24);
    torch::Tensor mask;
    if (uniform(0, 1) < 0.5) {
      const double r = uniform(4, 9);
      mask = ((y - cy).square() + (x - cx).square() <= r * r);
    } else {
      const double h = uniform(3, 8), w = uniform(3, 8);
      mask = ((y - cy).abs() <= h) & ((x - cx).abs() <= w);
    }
    mask = mask.to(torch::kFloat).unsqueeze(0);
    const torch::Tensor image = mask * uniform(0.6, 1.4) + torch::randn({1, kImageSize, kImageSize}, rng) * 0.3;
    return {image, mask, {}};
  }

 private:
  int64_t size_;
  uint64_t seed_;
};

class ShapesData : public fulgur::DataModule {
 public:
  ShapesData(int64_t batch_size, int64_t num_workers) : batch_size_(batch_size), num_workers_(num_workers) {}

  void setup(fulgur::Stage) override {
    train_ = std::make_shared<Shapes>(1024, /*seed=*/1);
    val_ = std::make_shared<Shapes>(301, /*seed=*/2);  // uneven shards on 2 and 3 ranks
  }
  std::shared_ptr<fulgur::DataLoader> train_dataloader() override { return loader(train_); }
  std::shared_ptr<fulgur::DataLoader> val_dataloader() override { return loader(val_); }

 private:
  std::shared_ptr<fulgur::DataLoader> loader(std::shared_ptr<const fulgur::Dataset> data) const {
    // In order, built by worker threads: 1 and N processes see the same global batches.
    return std::make_shared<fulgur::DatasetLoader>(
        std::move(data), fulgur::DatasetLoaderOptions(batch_size_).num_workers(num_workers_).seed(0));
  }
  int64_t batch_size_, num_workers_;
  std::shared_ptr<const fulgur::Dataset> train_, val_;
};

}  // namespace examples
