#include <fulgur/engine/checkpoint/checkpoint_writer.hpp>

#include <fulgur/engine/checkpoint/checkpoint_error.hpp>
#include <fulgur/engine/checkpoint/mesh_sharded_checkpoint.hpp>
#include <fulgur/engine/checkpoint/pipeline_checkpoint.hpp>
#include <fulgur/engine/checkpoint/sharded_state_writer.hpp>
#include <fulgur/strategies/model_parallel/device_mesh.hpp>
#include <fulgur/strategies/strategy.hpp>

#include <fmt/format.h>

#include <iostream>
#include <optional>

namespace fulgur {

CheckpointWriter::CheckpointWriter(Strategy& strategy, bool async) : strategy_(strategy), async_(async) {}

CheckpointWriter::~CheckpointWriter() { finish_writes_quietly(); }

AsyncCheckpointIO& CheckpointWriter::async_io() {
  if (!async_io_) async_io_ = std::make_unique<AsyncCheckpointIO>();
  return *async_io_;
}

void CheckpointWriter::save(const std::filesystem::path& path, torch::nn::Module& module,
                            const std::vector<const torch::optim::Optimizer*>& optimizers,
                            const std::function<Checkpoint()>& dump) {
  std::string error;
  std::optional<Checkpoint> gathered;
  const ShardLayout* layout = strategy_.shard_layout();
  const DeviceMesh& mesh = strategy_.device_mesh();
  if (strategy_.sharded_state_dict() && (layout == nullptr || mesh.world_size() > 1)) {  // a mesh's parts
    Checkpoint parts = dump();
    // fsdp along dp: each tp slice whole over dp first, as ddp's ranks hold it.
    if (layout != nullptr) ShardedStateWriter(strategy_, layout, module, optimizers).gather_slices(parts);
    MeshShardedCheckpoint(strategy_, module, optimizers).save(std::move(parts), path);
    return;
  }
  if (layout != nullptr || strategy_.shards_parameters()) {
    const ShardedStateWriter writer(strategy_, layout, module, optimizers);
    // Every rank dumps its state: the collectives pair up.
    if (strategy_.sharded_state_dict()) {
      writer.save_sharded(dump(), path);
      return;
    }
    gathered = dump();
    writer.gather_whole(*gathered);
  }
  if (strategy_.device_mesh().spans("pp")) {  // rank 0 holds the first stage: the others' come to it
    if (!gathered) gathered = dump();
    PipelineCheckpoint(strategy_, module, optimizers).gather(*gathered);
  }
  if (strategy_.is_global_zero()) {
    try {
      const Checkpoint checkpoint = gathered ? *gathered : dump();
      if (async_) {
        async_io().save(checkpoint, path);
      } else {
        CheckpointIO::save(checkpoint, path);
      }
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  agree_on_failure(strategy_, error, fmt::format("[CheckpointWriter::save] rank 0 failed to write {}", path.string()));
}

void CheckpointWriter::save_alone(const Checkpoint& checkpoint, const std::filesystem::path& path, bool quiet) {
  if (async_io_) {
    if (quiet) {
      finish_writes_quietly();
    } else {
      async_io_->wait();
    }
  }
  CheckpointIO::save(checkpoint, path);
}

void CheckpointWriter::after_write(std::function<void()> action) {
  if (async_io_) {
    async_io_->after_write(std::move(action));
  } else {
    action();
  }
}

void CheckpointWriter::finish_writes() {
  if (!async_) return;  // nothing is ever in flight: no collective either
  std::string error;
  if (async_io_) {
    try {
      async_io_->wait();
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  agree_on_failure(strategy_, error, "[CheckpointWriter] rank 0 failed to write the last checkpoint");
}

void CheckpointWriter::finish_writes_quietly() {
  if (!async_io_) return;
  try {
    async_io_->wait();
  } catch (const std::exception& e) {
    std::cerr << "fulgur: error: " << e.what() << std::endl;
  }
}

void CheckpointWriter::end_run() {
  finish_writes_quietly();
  async_io_.reset();  // joins the writer thread
}

}  // namespace fulgur
