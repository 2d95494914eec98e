// Asynchronous checkpointing: the saving step only copies the state, the
// file is the same as a synchronous save's, write errors are never lost,
// and a Trainer with async_checkpoint ends every run with its files on disk.
#include "support/file_size_limit.hpp"
#include "support/test_support.hpp"
#include "support/tiny_modules.hpp"

#include <fulgur/fulgur.hpp>
#include <fulgur/engine/checkpoint/async_checkpoint_io.hpp>
#include <fulgur/engine/checkpoint/checkpoint_error.hpp>
#include <fulgur/engine/checkpoint/checkpoint_io.hpp>

#include <doctest/doctest.h>

#include <condition_variable>
#include <mutex>

namespace async_checkpointing_test {

using namespace fulgur;
using fulgur::testing::quiet_options;
using fulgur::testing::read_file;
using fulgur::testing::RecordingModule;
using fulgur::testing::RegressionData;
using fulgur::testing::TempDir;

namespace {

Checkpoint weights_checkpoint(const torch::Tensor& weight, int64_t step) {
  Checkpoint c = new_state_dict();
  c.insert(CheckpointIO::kVersionKey, std::string(FULGUR_VERSION));
  c.insert("global_step", step);
  auto weights = new_state_dict();
  weights.insert("weight", weight);
  weights.insert("row", weight[1]);  // a view of the same storage
  c.insert("state_dict", weights);
  return c;
}

/// Holds the writer thread before each write until opened.
class Latch {
 public:
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    opened_.wait(lock, [&] { return open_; });
  }
  void open() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      open_ = true;
    }
    opened_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable opened_;
  bool open_ = false;
};

}  // namespace

TEST_CASE("AsyncCheckpointIO: save returns before the write; the file holds the state at save time") {
  TempDir dir("async-io");
  const auto path = dir / "last.ckpt";
  torch::Tensor weight = torch::arange(12, torch::kFloat32).reshape({3, 4});
  const torch::Tensor saved = weight.clone();
  AsyncCheckpointIO writer;
  Latch latch;
  writer.set_test_hooks([&](const std::filesystem::path&) { latch.wait(); }, {});

  writer.save(weights_checkpoint(weight, 1), path);
  // The write is held: save() returned with nothing on disk yet.
  CHECK(writer.pending());
  CHECK_FALSE(std::filesystem::exists(path));
  weight.mul_(-1);  // the next step changes the weights
  bool linked = false;
  writer.after_write([&] { linked = std::filesystem::exists(path); });
  latch.open();
  writer.wait();
  CHECK_FALSE(writer.pending());
  CHECK(linked);  // after_write ran once the file existed
  const Checkpoint c = CheckpointIO::load(path);
  const auto weights = c.at("state_dict").toGenericDict();
  CHECK(torch::equal(weights.at("weight").toTensor(), saved));
  CHECK(torch::equal(weights.at("row").toTensor(), saved[1]));
  // Host buffers are reused by the next save of the same sizes.
  CHECK(writer.buffer_allocations() == 1);
  writer.save(weights_checkpoint(weight, 2), path);
  writer.wait();
  CHECK(writer.buffer_allocations() == 1);
  CHECK(torch::equal(CheckpointIO::load(path).at("state_dict").toGenericDict().at("weight").toTensor(), weight));
  // What a synchronous save writes: the view still shares the weight's storage.
  const auto loaded = CheckpointIO::load(path).at("state_dict").toGenericDict();
  CHECK(loaded.at("row").toTensor().storage().is_alias_of(loaded.at("weight").toTensor().storage()));
}

TEST_CASE("AsyncCheckpointIO: a failed write is rethrown unchanged, keeps the previous file, drops after_write") {
  TempDir dir("async-io-error");
  const auto path = dir / "last.ckpt";
  AsyncCheckpointIO writer;
  writer.save(weights_checkpoint(torch::ones({4}), 1), path);
  writer.wait();
  const std::string before = read_file(path);

  // Writes past 64 KiB fail with EFBIG, like a full disk.
  bool ran = false;
  std::string message;
  {
    fulgur::testing::FileSizeLimit limit(64 * 1024);
    writer.save(weights_checkpoint(torch::zeros({1 << 20}), 2), path);  // 4 MiB
    writer.after_write([&] { ran = true; });
    try {
      writer.wait();
    } catch (const CheckpointError& e) {
      message = e.what();
    }
  }
  INFO(message);
  CHECK(message.rfind("[CheckpointIO::save] cannot write checkpoint " + path.string(), 0) == 0);
  CHECK(message.find("too large") != std::string::npos);
  CHECK_FALSE(ran);
  CHECK(read_file(path) == before);
  writer.wait();  // reported once
}

TEST_CASE("Trainer async_checkpoint: the same checkpoints as synchronous saves, top-k pruned, resumable") {
  TempDir dir("async-trainer");
  RegressionData data(4, 2);
  auto fit = [&](const std::string& name, bool async, int64_t epochs, const std::string& ckpt_path) {
    auto mc = std::make_shared<ModelCheckpoint>(ModelCheckpointOptions()
                                                    .dirpath((dir / name).string())
                                                    .filename("{epoch}")
                                                    .monitor("val_loss")
                                                    .save_top_k(1)
                                                    .save_last(true));
    torch::manual_seed(7);
    auto model = std::make_shared<RecordingModule>();
    Trainer trainer(quiet_options((dir / name).string()).max_epochs(epochs).async_checkpoint(async).logger(false),
                    {mc});
    trainer.fit(*model, data, ckpt_path);
    return std::make_pair(model, mc->best_model_path());
  };
  const auto [sync_model, sync_best] = fit("sync", false, 3, "");
  const auto [async_model, async_best] = fit("async", true, 3, "");
  CHECK(torch::equal(sync_model->linear->weight, async_model->linear->weight));
  CHECK(std::filesystem::path(async_best).filename() == std::filesystem::path(sync_best).filename());
  // Pruning waited for each new file: one ranked file and last.ckpt, as with synchronous saves.
  std::set<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir / "async")) {
    if (entry.is_regular_file() || entry.is_symlink()) files.insert(entry.path().filename().string());
  }
  CHECK(files == std::set<std::string>{std::filesystem::path(async_best).filename().string(), "last.ckpt"});
  const auto weights = [](const std::filesystem::path& file) {
    return CheckpointIO::load(file).at("state_dict").toGenericDict().at("linear.weight").toTensor();
  };
  CHECK(torch::equal(weights(dir / "async" / "last.ckpt"), async_model->linear->weight));
  CHECK(torch::equal(weights(dir / "async" / "last.ckpt"), weights(dir / "sync" / "last.ckpt")));
  // Resuming an asynchronous run continues exactly like a synchronous one.
  const auto [sync_resumed, unused_sync] = fit("sync", false, 5, "last");
  const auto [async_resumed, unused_async] = fit("async", true, 5, "last");
  CHECK(torch::equal(sync_resumed->linear->weight, async_resumed->linear->weight));
  CHECK(async_resumed->count("training_step") == 2 * 4);
}

}  // namespace async_checkpointing_test
