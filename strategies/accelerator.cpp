#include <fulgur/strategies/accelerator.hpp>

#include <fulgur/strategies/cuda/cuda_runtime.hpp>
#include <fulgur/strategies/cuda/host_caching_allocator.hpp>

#include <c10/core/DeviceGuard.h>
#include <torch/cuda.h>

namespace fulgur {

torch::Device Accelerator::device(int64_t local_rank) const {
  if (kind_ == AcceleratorKind::Cuda) {
    // More ranks than GPUs only with process_group_backend gloo or mpi: they share them round-robin.
    const int64_t count = cuda_device_count();
    const int64_t index = count > 0 ? local_rank % count : local_rank;
    return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
  }
  return torch::Device(torch::kCPU);
}

void Accelerator::setup_device(const torch::Device& device) const {
  // Host tensors (all of them on the CPU; batches on the way to a GPU) are
  // freed and allocated again every step.
  HostCachingAllocator::install();
  if (device.is_cuda()) c10::impl::getDeviceGuardImpl(device.type())->setDevice(device);
}

bool Accelerator::is_cuda_available() { return CudaRuntime::load() && torch::cuda::is_available(); }

int64_t Accelerator::cuda_device_count() { return static_cast<int64_t>(torch::cuda::device_count()); }

}  // namespace fulgur
