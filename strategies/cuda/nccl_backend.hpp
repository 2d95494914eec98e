#pragma once

#include <torch/torch.h>

#include <chrono>

namespace c10d {
class Backend;
class Store;
}  // namespace c10d

namespace fulgur {

/// c10d's NCCL backend for CUDA tensors. In a LibTorch without NCCL this is
/// a stub that throws a clear error; the rest of fulgur does not change.
c10::intrusive_ptr<c10d::Backend> make_nccl_backend(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                    int size, std::chrono::milliseconds timeout);

}  // namespace fulgur
