#pragma once

#include <cstdint>
#include <string>

namespace fulgur {

/// Loads LibTorch's CUDA half (libtorch_cuda, and cuDNN, cuBLAS, NCCL behind
/// it) only on a machine with a CUDA driver. fulgur links LibTorch's CPU
/// half alone; with a CUDA build of LibTorch the fulgur_cuda module (which
/// needs libtorch_cuda and holds the NCCL backend) is loaded on first use:
/// by fulgur's entry points (Platform::detect; a Trainer, Fabric or
/// OnlineTrainer whose accelerator is not 'cpu', Platform::detect_for;
/// seed_everything; the command line), never before main, never for a run
/// on the CPU alone.
/// ATen decides once per process whether CUDA is there, so a program that
/// asks LibTorch about CUDA itself (torch::cuda::is_available,
/// torch::manual_seed) before any of those calls load() first. Without a
/// driver nothing is loaded, which spares a CPU-only run about 390 MB of
/// resident memory and part of a second of start-up, and CUDA reads as
/// unavailable, as it would anyway.
class CudaRuntime {
 public:
  /// True when the module is loaded (so torch::cuda::is_available() can be
  /// true). Loads it on the first call; later calls return the same answer.
  static bool load();
  /// The devices the CUDA runtime sees, asked through the module (0 when it
  /// is not loaded). Where torch::cuda::device_count() is 0 but this is not,
  /// something asked ATen about CUDA before load().
  static int64_t device_count();
  /// A function the module exports, or nullptr when it is not loaded.
  static void* symbol(const char* name);
  /// Why the module is not loaded ("no CUDA driver (libcuda.so.1)", the
  /// loader's error naming the file, or "this LibTorch has no CUDA").
  static std::string status();
};

}  // namespace fulgur
