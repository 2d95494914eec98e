#pragma once

// Eight 2-D Gaussians on a ring of radius 2 (std 0.1): the classic toy
// target for a GAN, where a collapsed generator covers only some modes.
// Every sample carries its own generator noise `z` (drawn from the sample's
// index and the epoch), so one process and N processes of batch B / N see
// the same global batches and the same noise.
#include <fulgur/fulgur.hpp>

#include <cmath>
#include <numbers>

namespace examples {

constexpr int64_t kModes = 8;
constexpr double kRadius = 2.0;
constexpr double kModeStd = 0.1;

/// The modes' centres, [kModes, 2].
inline torch::Tensor ring_centres() {
  torch::Tensor angles = torch::arange(kModes, torch::kDouble) * (2.0 * std::numbers::pi / kModes);
  return torch::stack({angles.cos(), angles.sin()}, 1).to(torch::kFloat) * kRadius;
}

class RingOfGaussians : public fulgur::Dataset {
 public:
  RingOfGaussians(int64_t size, int64_t latent_dim, uint64_t seed, int64_t epoch = 0)
      : size_(size), latent_dim_(latent_dim), seed_(seed), epoch_(epoch), centres_(ring_centres()) {}

  int64_t size() const override { return size_; }
  fulgur::Example get(int64_t index) const override {
    // The point is fixed per index; its noise changes with the epoch.
    torch::Generator point_rng = at::make_generator<at::CPUGeneratorImpl>(seed_ * 1000003 + static_cast<uint64_t>(index));
    const int64_t mode = torch::randint(0, kModes, {1}, point_rng).item<int64_t>();
    torch::Tensor point = centres_[mode] + torch::randn({2}, point_rng) * kModeStd;
    torch::Generator noise_rng = at::make_generator<at::CPUGeneratorImpl>(
        (seed_ * 1000003 + static_cast<uint64_t>(index)) * 7919 + static_cast<uint64_t>(epoch_) + 1);
    return {point, fulgur::class_index(mode), {{"z", torch::randn({latent_dim_}, noise_rng)}}};
  }
  std::shared_ptr<const fulgur::Dataset> at_epoch(int64_t epoch) const override {
    return std::make_shared<RingOfGaussians>(size_, latent_dim_, seed_, epoch);
  }

 private:
  int64_t size_, latent_dim_;
  uint64_t seed_;
  int64_t epoch_;
  torch::Tensor centres_;
};

class RingData : public fulgur::DataModule {
 public:
  RingData(int64_t batch_size, int64_t latent_dim) : batch_size_(batch_size), latent_dim_(latent_dim) {}

  void setup(fulgur::Stage) override {
    train_ = std::make_shared<RingOfGaussians>(4096, latent_dim_, /*seed=*/1);
    val_ = std::make_shared<RingOfGaussians>(1000, latent_dim_, /*seed=*/2);
  }
  std::shared_ptr<fulgur::DataLoader> train_dataloader() override { return loader(train_); }
  std::shared_ptr<fulgur::DataLoader> val_dataloader() override { return loader(val_); }

 private:
  std::shared_ptr<fulgur::DataLoader> loader(std::shared_ptr<const fulgur::Dataset> data) const {
    // In order (the points are random already): 1 and N processes see the same global batches.
    return std::make_shared<fulgur::DatasetLoader>(std::move(data), fulgur::DatasetLoaderOptions(batch_size_).seed(0));
  }
  int64_t batch_size_, latent_dim_;
  std::shared_ptr<const fulgur::Dataset> train_, val_;
};

}  // namespace examples
