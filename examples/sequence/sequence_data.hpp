#pragma once

// Variable-length token sequences, generated: label 1 when token 1 occurs
// more often than token 2, else 0. A model must look at every real position
// and ignore the padding, so the batch carries a mask beside input and target.
#include <fulgur/fulgur.hpp>

namespace examples {

class TokenSequences : public fulgur::Dataset {
 public:
  TokenSequences(int64_t size, int64_t vocab, int64_t max_length, uint64_t seed) {
    torch::Generator generator = at::make_generator<at::CPUGeneratorImpl>(seed);
    for (int64_t i = 0; i < size; ++i) {
      const int64_t length = torch::randint(4, max_length + 1, {1}, generator).item<int64_t>();
      torch::Tensor tokens = torch::randint(0, vocab, {length}, generator, torch::kLong);
      const bool more_ones = (tokens == 1).sum().item<int64_t>() > (tokens == 2).sum().item<int64_t>();
      sequences_.push_back({tokens, fulgur::class_index(more_ones ? 1 : 0), {}});
    }
  }
  int64_t size() const override { return static_cast<int64_t>(sequences_.size()); }
  fulgur::Example get(int64_t index) const override { return sequences_.at(static_cast<size_t>(index)); }

  // Pads every batch to its longest sequence; the mask marks the real tokens.
  fulgur::Batch collate(std::vector<fulgur::Example> examples) const override {
    std::vector<torch::Tensor> tokens;
    std::vector<torch::Tensor> labels;
    for (const auto& example : examples) {
      tokens.push_back(example.input);
      labels.push_back(example.target);
    }
    auto [padded, mask] = fulgur::pad_sequences(tokens, 0);
    return {padded, torch::stack(labels), {{"mask", mask}}};
  }

 private:
  std::vector<fulgur::Example> sequences_;
};

class SequenceData : public fulgur::DataModule {
 public:
  SequenceData(int64_t batch_size, int64_t vocab) : batch_size_(batch_size), vocab_(vocab) {}

  void setup(fulgur::Stage) override {
    train_ = std::make_shared<TokenSequences>(512, vocab_, 24, /*seed=*/1);
    val_ = std::make_shared<TokenSequences>(256, vocab_, 24, /*seed=*/2);
  }
  std::shared_ptr<fulgur::DataLoader> train_dataloader() override { return loader(train_); }
  std::shared_ptr<fulgur::DataLoader> val_dataloader() override { return loader(val_); }

 private:
  std::shared_ptr<fulgur::DataLoader> loader(std::shared_ptr<const fulgur::Dataset> data) const {
    // In order (the sequences are random already), so one process and N
    // processes of batch_size / N see the same global batches.
    return std::make_shared<fulgur::DatasetLoader>(
        std::move(data), fulgur::DatasetLoaderOptions(batch_size_).seed(0));
  }
  int64_t batch_size_;
  int64_t vocab_;
  std::shared_ptr<const fulgur::Dataset> train_;
  std::shared_ptr<const fulgur::Dataset> val_;
};

}  // namespace examples
