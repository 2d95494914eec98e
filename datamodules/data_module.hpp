#pragma once

#include <fulgur/datamodules/data_loader.hpp>
#include <fulgur/modules/stage.hpp>

#include <cstdint>
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

  /// The batch-size option called `name`, which the loaders made afterwards
  /// use; nullptr when the module has none by that name. Tuner::scale_batch_size
  /// changes it (its batch_arg_name, "batch_size" unless told otherwise).
  virtual int64_t* batch_arg(const std::string& name) {
    (void)name;
    return nullptr;
  }
};

}  // namespace fulgur
