#include <fulgur/strategies/cuda/cuda_device_stats.hpp>

#include <fulgur/strategies/cuda/cuda_runtime.hpp>

#include <dlfcn.h>

namespace fulgur {
namespace {

using MemoryStatsFn = void (*)(int, void (*)(void*, const char*, double), void*);
using IdentityFn = int (*)(int, char*, int, char*, int);

// The few NVML entry points used, declared as nvml.h declares them (its ABI
// is stable), so no NVML header or library is needed to build.
using NvmlDevice = void*;
struct NvmlUtilization {
  unsigned int gpu;
  unsigned int memory;
};
struct NvmlMemory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct Nvml {
  int (*by_pci_bus_id)(const char*, NvmlDevice*) = nullptr;
  int (*utilization)(NvmlDevice, NvmlUtilization*) = nullptr;
  int (*memory)(NvmlDevice, NvmlMemory*) = nullptr;
  int (*temperature)(NvmlDevice, int, unsigned int*) = nullptr;
  int (*power)(NvmlDevice, unsigned int*) = nullptr;
  bool ready = false;
};

const Nvml& nvml() {
  static const Nvml loaded = [] {
    Nvml n;
    void* library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) return n;
    auto init = reinterpret_cast<int (*)()>(dlsym(library, "nvmlInit_v2"));
    n.by_pci_bus_id = reinterpret_cast<decltype(n.by_pci_bus_id)>(dlsym(library, "nvmlDeviceGetHandleByPciBusId_v2"));
    n.utilization = reinterpret_cast<decltype(n.utilization)>(dlsym(library, "nvmlDeviceGetUtilizationRates"));
    n.memory = reinterpret_cast<decltype(n.memory)>(dlsym(library, "nvmlDeviceGetMemoryInfo"));
    n.temperature = reinterpret_cast<decltype(n.temperature)>(dlsym(library, "nvmlDeviceGetTemperature"));
    n.power = reinterpret_cast<decltype(n.power)>(dlsym(library, "nvmlDeviceGetPowerUsage"));
    n.ready = init != nullptr && n.by_pci_bus_id != nullptr && init() == 0;
    return n;
  }();
  return loaded;
}

bool identity(int device, std::string& name, std::string& pci_bus_id) {
  if (!CudaRuntime::load()) return false;
  auto fn = reinterpret_cast<IdentityFn>(CudaRuntime::symbol("fulgur_cuda_device_identity"));
  if (fn == nullptr) return false;
  char name_buffer[256] = {};
  char pci_buffer[64] = {};
  if (fn(device, name_buffer, sizeof(name_buffer), pci_buffer, sizeof(pci_buffer)) != 0) return false;
  name = name_buffer;
  pci_bus_id = pci_buffer;
  return true;
}

}  // namespace

std::map<std::string, double> CudaDeviceStats::memory_stats(int device) {
  std::map<std::string, double> stats;
  if (!CudaRuntime::load()) return stats;
  auto fn = reinterpret_cast<MemoryStatsFn>(CudaRuntime::symbol("fulgur_cuda_memory_stats"));
  if (fn == nullptr) return stats;
  fn(
      device,
      [](void* context, const char* key, double value) {
        (*static_cast<std::map<std::string, double>*>(context))[key] = value;
      },
      &stats);
  return stats;
}

std::map<std::string, double> CudaDeviceStats::nvml_stats(int device) {
  std::map<std::string, double> stats;
  const Nvml& n = nvml();
  std::string name, pci_bus_id;
  if (!n.ready || !identity(device, name, pci_bus_id)) return stats;
  NvmlDevice handle = nullptr;
  // By PCI bus id: NVML numbers all devices, CUDA only the visible ones.
  if (n.by_pci_bus_id(pci_bus_id.c_str(), &handle) != 0) return stats;
  constexpr double kMB = 1024.0 * 1024.0;
  if (NvmlUtilization u{}; n.utilization != nullptr && n.utilization(handle, &u) == 0) {
    stats["utilization.gpu (%)"] = u.gpu;
    stats["utilization.memory (%)"] = u.memory;
  }
  if (NvmlMemory m{}; n.memory != nullptr && n.memory(handle, &m) == 0) {
    stats["memory.used (MB)"] = static_cast<double>(m.used) / kMB;
    stats["memory.free (MB)"] = static_cast<double>(m.free) / kMB;
    stats["memory.total (MB)"] = static_cast<double>(m.total) / kMB;
  }
  if (unsigned int celsius = 0;
      n.temperature != nullptr && n.temperature(handle, /*NVML_TEMPERATURE_GPU=*/0, &celsius) == 0) {
    stats["temperature.gpu (C)"] = celsius;
  }
  if (unsigned int milliwatts = 0; n.power != nullptr && n.power(handle, &milliwatts) == 0) {
    stats["power.draw (W)"] = milliwatts / 1000.0;
  }
  return stats;
}

std::optional<std::string> CudaDeviceStats::name(int device) {
  std::string name, pci_bus_id;
  if (!identity(device, name, pci_bus_id)) return std::nullopt;
  return name;
}

}  // namespace fulgur
