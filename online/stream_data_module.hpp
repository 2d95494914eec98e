#pragma once

#include <fulgur/datamodules/data_module.hpp>
#include <fulgur/online/sample_stream.hpp>

#include <memory>

namespace fulgur {

/// A DataModule whose training data is a SampleStream, for Trainer::fit on
/// a thread beside the producer; no validation, test or predict data.
///
///   StreamDataModule data(stream);
///   std::thread training([&] { trainer.fit(model, data); });
class StreamDataModule : public DataModule {
 public:
  explicit StreamDataModule(std::shared_ptr<SampleStream> stream) : stream_(std::move(stream)) {}
  std::shared_ptr<DataLoader> train_dataloader() override { return stream_; }
  SampleStream& stream() { return *stream_; }

 private:
  std::shared_ptr<SampleStream> stream_;
};

}  // namespace fulgur
