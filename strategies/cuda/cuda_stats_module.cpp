// Part of the fulgur_cuda module (see nccl_module.cpp): what CudaDeviceStats
// reads through libtorch_cuda and the CUDA runtime, exported as C functions
// so that fulgur itself links no CUDA library.
#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda_runtime_api.h>

#include <cstdio>
#include <string>

namespace {

using Emit = void (*)(void* context, const char* key, double value);

void emit_array(Emit emit, void* context, const std::string& name, const c10::CachingAllocator::StatArray& stats) {
  const char* pools[] = {"all", "small_pool", "large_pool"};
  for (size_t i = 0; i < stats.size(); ++i) {
    const std::string prefix = name + "." + pools[i] + ".";
    emit(context, (prefix + "current").c_str(), static_cast<double>(stats[i].current));
    emit(context, (prefix + "peak").c_str(), static_cast<double>(stats[i].peak));
    emit(context, (prefix + "allocated").c_str(), static_cast<double>(stats[i].allocated));
    emit(context, (prefix + "freed").c_str(), static_cast<double>(stats[i].freed));
  }
}

}  // namespace

/// The caching allocator's statistics of `device`, with the keys of
/// torch.cuda.memory_stats(): allocated_bytes.all.current, num_ooms, ...
extern "C" __attribute__((visibility("default"))) void fulgur_cuda_memory_stats(int device, Emit emit,
                                                                                void* context) {
  const auto s = c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(device));
  emit_array(emit, context, "allocation", s.allocation);
  emit_array(emit, context, "segment", s.segment);
  emit_array(emit, context, "active", s.active);
  emit_array(emit, context, "inactive_split", s.inactive_split);
  emit_array(emit, context, "allocated_bytes", s.allocated_bytes);
  emit_array(emit, context, "reserved_bytes", s.reserved_bytes);
  emit_array(emit, context, "active_bytes", s.active_bytes);
  emit_array(emit, context, "inactive_split_bytes", s.inactive_split_bytes);
  emit_array(emit, context, "requested_bytes", s.requested_bytes);
  emit(context, "num_alloc_retries", static_cast<double>(s.num_alloc_retries));
  emit(context, "num_ooms", static_cast<double>(s.num_ooms));
  emit(context, "num_sync_all_streams", static_cast<double>(s.num_sync_all_streams));
  emit(context, "num_device_alloc", static_cast<double>(s.num_device_alloc));
  emit(context, "num_device_free", static_cast<double>(s.num_device_free));
  emit(context, "max_split_size", static_cast<double>(s.max_split_size));
}

/// The device's name and PCI bus id ("0000:3B:00.0", what NVML finds it by);
/// 0 on success, else the CUDA error code.
extern "C" __attribute__((visibility("default"))) int fulgur_cuda_device_identity(int device, char* name,
                                                                                  int name_size, char* pci_bus_id,
                                                                                  int pci_size) {
  cudaDeviceProp properties{};
  if (const cudaError_t error = cudaGetDeviceProperties(&properties, device); error != cudaSuccess) {
    return static_cast<int>(error);
  }
  std::snprintf(name, static_cast<size_t>(name_size), "%s", properties.name);
  return static_cast<int>(cudaDeviceGetPCIBusId(pci_bus_id, pci_size, device));
}

/// The CUDA runtime's own device count (cudaGetDeviceCount), asked without
/// ATen: ATen's answer is 0 for good once it was asked before this module
/// was loaded, this one is not.
extern "C" __attribute__((visibility("default"))) int fulgur_cuda_device_count() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}
