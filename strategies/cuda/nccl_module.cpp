// The fulgur_cuda module: loaded by CudaRuntime on machines with a CUDA
// driver. Linking it pulls in libtorch_cuda (which registers CUDA with
// ATen); it also holds the one fulgur function that needs libtorch_cuda's
// symbols, c10d's NCCL backend.
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <chrono>
#include <stdexcept>

extern "C" __attribute__((visibility("default"))) void fulgur_make_nccl_backend(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, int64_t timeout_ms,
    c10::intrusive_ptr<c10d::Backend>& backend) {
#ifdef USE_C10D_NCCL
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = std::chrono::milliseconds(timeout_ms);
  backend = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, options);
#else
  (void)store, (void)rank, (void)size, (void)timeout_ms, (void)backend;
  throw std::runtime_error("[make_nccl_backend] this LibTorch was built without NCCL; use accelerator 'cpu' (Gloo)");
#endif
}
