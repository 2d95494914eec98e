#pragma once

#include <fulgur/strategies/accelerator_kind.hpp>

#include <torch/torch.h>

namespace fulgur {

/// Which hardware runs the math: the CPU, or one CUDA device per process.
/// Builds that lack CUDA (or machines without a GPU) still compile every
/// CUDA path; is_available() decides at run time.
class Accelerator {
 public:
  /// `kind` is Cpu or Cuda (Auto is decided before).
  explicit Accelerator(AcceleratorKind kind) : kind_(kind) {}

  AcceleratorKind kind() const { return kind_; }
  /// The device a process with this local rank uses (GPUs shared round-robin
  /// when ranks outnumber them: process_group_backend gloo).
  torch::Device device(int64_t local_rank) const;
  /// Makes `device` current for this thread (CUDA) so allocations land there,
  /// and installs the HostCachingAllocator for host tensors.
  void setup_device(const torch::Device& device) const;
  /// Copies to this accelerator can be non_blocking (pinned host memory).
  bool supports_non_blocking_copy() const { return kind_ == AcceleratorKind::Cuda; }

  static bool is_cuda_available();
  static int64_t cuda_device_count();

 private:
  AcceleratorKind kind_;
};

}  // namespace fulgur
