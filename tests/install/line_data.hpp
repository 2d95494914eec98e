// The consumers' data: a Dataset of their own, read by DatasetLoader worker threads.
#pragma once

#include <fulgur/fulgur.hpp>

// y = 3x + 1 at 16 points of [-1, 1]; the target is a float tensor [1].
struct LinePoints : fulgur::Dataset {
  int64_t size() const override { return 16; }
  fulgur::Example get(int64_t i) const override {
    const float x = -1.0f + 2.0f * static_cast<float>(i) / 15.0f;
    return {torch::tensor({x}), torch::tensor({3 * x + 1}), {}};
  }
};

struct Points : fulgur::DataModule {
  std::shared_ptr<fulgur::DataLoader> train_dataloader() override {
    return std::make_shared<fulgur::DatasetLoader>(std::make_shared<LinePoints>(),
                                                   fulgur::DatasetLoaderOptions(16).num_workers(2));
  }
};
