#pragma once

#include <fulgur/datamodules/data_loader.hpp>
#include <fulgur/modules/stage.hpp>

#include <memory>
#include <string>

namespace fulgur {

/// Everything about data in one object: download/prepare once per node, set up
/// datasets per process, and hand out loaders. A loader that is not provided
/// (nullptr) disables that loop (no validation, say).
class DataModule {
 public:
  virtual ~DataModule() = default;

  /// Runs on local rank 0 of each node only, before setup(); for downloads
  /// or conversions that must not run concurrently.
  virtual void prepare_data() {}
  /// Runs on every process; builds the datasets the stage needs.
  virtual void setup(Stage stage) { (void)stage; }
  virtual void teardown(Stage stage) { (void)stage; }

  virtual std::shared_ptr<DataLoader> train_dataloader() { return nullptr; }
  virtual std::shared_ptr<DataLoader> val_dataloader() { return nullptr; }
  virtual std::shared_ptr<DataLoader> test_dataloader() { return nullptr; }
  virtual std::shared_ptr<DataLoader> predict_dataloader() { return nullptr; }
};

}  // namespace fulgur
