#pragma once

#include <fulgur/modules/batch.hpp>

#include <memory>

namespace fulgur {

/// A batch on its way to the device (Strategy::start_batch_to_device): on
/// CUDA its copy may still run on a side stream until `ready` is waited for
/// (Strategy::finish_batch_to_device); elsewhere it is there already.
struct DeviceBatch {
  Batch batch;
  /// The copy's completion (a CUDA event), or null when there is nothing to wait for.
  std::shared_ptr<void> ready;
};

}  // namespace fulgur
