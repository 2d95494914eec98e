#pragma once

// Byte windows of a text file: input bytes [i, i+T), targets [i+1, i+T+1).
// The first 90 % of the file trains, the rest validates.
#include <fulgur/fulgur.hpp>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace examples {

class TextData : public fulgur::DataModule {
 public:
  TextData(std::string path, int64_t context, int64_t batch_size)
      : path_(std::move(path)), context_(context), batch_size_(batch_size) {}

  void setup(fulgur::Stage) override {
    std::ifstream in(path_, std::ios::binary);
    if (!in) throw std::invalid_argument("[TextData] cannot read the corpus '" + path_ + "' (--text)");
    std::ostringstream text;
    text << in.rdbuf();
    const std::string bytes = text.str();
    if (static_cast<int64_t>(bytes.size()) < 20 * (context_ + 1)) {
      throw std::invalid_argument("[TextData] the corpus '" + path_ + "' is too short for --context " +
                                  std::to_string(context_));
    }
    torch::Tensor all = torch::from_blob(const_cast<char*>(bytes.data()), {static_cast<int64_t>(bytes.size())},
                                         torch::kUInt8).to(torch::kInt64);
    const int64_t split = all.size(0) * 9 / 10;
    train_ = windows(all.narrow(0, 0, split));
    val_ = windows(all.narrow(0, split, all.size(0) - split));
  }
  std::shared_ptr<fulgur::DataLoader> train_dataloader() override { return loader(train_, true); }
  std::shared_ptr<fulgur::DataLoader> val_dataloader() override { return loader(val_, false); }

 private:
  /// Non-overlapping windows of context + 1 bytes.
  std::shared_ptr<fulgur::TensorDataset> windows(const torch::Tensor& bytes) const {
    const int64_t count = (bytes.size(0) - 1) / context_;
    const torch::Tensor x = bytes.narrow(0, 0, count * context_).view({count, context_});
    const torch::Tensor y = bytes.narrow(0, 1, count * context_).view({count, context_});
    return std::make_shared<fulgur::TensorDataset>(x.clone(), y.clone());
  }
  std::shared_ptr<fulgur::DataLoader> loader(std::shared_ptr<fulgur::TensorDataset> data, bool shuffle) const {
    return std::make_shared<fulgur::DatasetLoader>(std::move(data),
                                                   fulgur::DatasetLoaderOptions(batch_size_).shuffle(shuffle).seed(0));
  }
  std::string path_;
  int64_t context_, batch_size_;
  std::shared_ptr<fulgur::TensorDataset> train_, val_;
};

}  // namespace examples
