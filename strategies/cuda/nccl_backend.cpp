#include <fulgur/strategies/cuda/nccl_backend.hpp>

#include <fulgur/strategies/cuda/cuda_runtime.hpp>

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <stdexcept>

namespace fulgur {

c10::intrusive_ptr<c10d::Backend> make_nccl_backend(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                    int size, std::chrono::milliseconds timeout) {
  // The NCCL backend lives in the fulgur_cuda module (nccl_module.cpp), the
  // one part of fulgur that links libtorch_cuda; see CudaRuntime.
  using Make = void (*)(const c10::intrusive_ptr<c10d::Store>&, int, int, int64_t, c10::intrusive_ptr<c10d::Backend>&);
  const auto make = reinterpret_cast<Make>(CudaRuntime::symbol("fulgur_make_nccl_backend"));
  if (make == nullptr) {
    throw std::runtime_error("[make_nccl_backend] NCCL needs CUDA, which is not loaded here (" +
                             CudaRuntime::status() + "); use accelerator 'cpu' (Gloo)");
  }
  c10::intrusive_ptr<c10d::Backend> backend;
  make(store, rank, size, timeout.count(), backend);
  return backend;
}

}  // namespace fulgur
