#pragma once

#include <map>
#include <optional>
#include <string>

namespace fulgur {

/// What a CUDA device reports about itself, read without linking CUDA:
/// the caching allocator's statistics through the fulgur_cuda module
/// (CudaRuntime), utilisation, memory and temperature through NVML
/// (libnvidia-ml.so.1, opened at run time where the driver installed it).
class CudaDeviceStats {
 public:
  /// torch.cuda.memory_stats(device)'s keys and values (allocated_bytes.all.current,
  /// reserved_bytes.all.peak, num_ooms, ...); empty when CUDA is not loaded.
  static std::map<std::string, double> memory_stats(int device);
  /// NVML's view of the device, keyed as nvidia-smi's query fields:
  /// utilization.gpu (%), utilization.memory (%), memory.used (MB),
  /// memory.free (MB), memory.total (MB), temperature.gpu (C), power.draw (W);
  /// empty when NVML is not there.
  static std::map<std::string, double> nvml_stats(int device);
  /// The device's name ("NVIDIA H100 80GB HBM3"), nullopt when CUDA is not loaded.
  static std::optional<std::string> name(int device);
};

}  // namespace fulgur
