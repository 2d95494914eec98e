#pragma once

#include <fulgur/datamodules/data_loader.hpp>
#include <fulgur/modules/stage.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

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

  /// Several validation loaders (Lightning's list of loaders), run one after
  /// the other: each step gets its loader's index as `dataloader_idx`, and a
  /// value it logs is named `<name>/dataloader_idx_<i>`. Each loader is
  /// sharded over the processes as a single one is. Default: val_dataloader()
  /// alone (no index in the names).
  virtual std::vector<std::shared_ptr<DataLoader>> val_dataloaders() { return one(val_dataloader()); }
  /// Several test loaders, as val_dataloaders(). Default: test_dataloader() alone.
  virtual std::vector<std::shared_ptr<DataLoader>> test_dataloaders() { return one(test_dataloader()); }
  /// Several predict loaders, run one after the other (predict_step gets
  /// each one's index). Default: predict_dataloader() alone.
  virtual std::vector<std::shared_ptr<DataLoader>> predict_dataloaders() { return one(predict_dataloader()); }

  /// The batch-size option called `name`, which the loaders made afterwards
  /// use; nullptr when the module has none by that name. Tuner::scale_batch_size
  /// changes it (its batch_arg_name, "batch_size" unless told otherwise).
  virtual int64_t* batch_arg(const std::string& name) {
    (void)name;
    return nullptr;
  }

 private:
  static std::vector<std::shared_ptr<DataLoader>> one(std::shared_ptr<DataLoader> loader) {
    if (!loader) return {};
    return {std::move(loader)};
  }
};

}  // namespace fulgur
