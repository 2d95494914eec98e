#include <fulgur/strategies/cuda/cuda_runtime.hpp>

#include <fulgur/core/module_build_dir.hpp>

#include <fulgur_cuda_module_paths.hpp>

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <vector>

namespace fulgur {
namespace {

struct Loaded {
  void* module = nullptr;
  std::string status;
};

#ifdef FULGUR_CUDA_MODULE_NAME
// Where the module may be: FULGUR_CUDA_MODULE, beside the program
// (<prefix>/bin/../lib), the build tree, the install prefix.
std::vector<std::string> candidates() {
  std::vector<std::string> paths;
  if (const char* env = std::getenv("FULGUR_CUDA_MODULE"); env != nullptr && *env != '\0') paths.emplace_back(env);
  std::error_code error;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) paths.push_back((exe.parent_path().parent_path() / "lib" / FULGUR_CUDA_MODULE_NAME).string());
  paths.push_back(std::string(kModuleBuildDir) + "/" FULGUR_CUDA_MODULE_NAME);
#ifdef FULGUR_CUDA_MODULE_INSTALL_PATH
  paths.emplace_back(FULGUR_CUDA_MODULE_INSTALL_PATH);
#endif
  return paths;
}
#endif

Loaded load_module() {
#ifndef FULGUR_CUDA_MODULE_NAME
  // A LibTorch without CUDA, or FULGUR_WITH_CUDA=OFF (CMakeLists.txt).
  return {nullptr, "this LibTorch has no CUDA, or fulgur was built without its CUDA module"};
#else
  // The driver library is what a GPU machine has and a CPU machine lacks.
  if (dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL) == nullptr) return {nullptr, "no CUDA driver (libcuda.so.1)"};
  std::string errors;
  for (const auto& path : candidates()) {
    if (!std::filesystem::exists(path)) continue;
    // GLOBAL: libtorch_cuda registers CUDA with ATen when it is loaded.
    if (void* module = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL)) return {module, "loaded " + path};
    errors += std::string(dlerror()) + "; ";
  }
  Loaded failed{nullptr, "a CUDA driver is installed but " FULGUR_CUDA_MODULE_NAME " could not be loaded: " +
                             (errors.empty() ? std::string("not found beside the program, in the build tree or "
                                                           "the install prefix (set FULGUR_CUDA_MODULE)")
                                             : errors)};
  std::cerr << "fulgur: warning: " << failed.status << "; running on the CPU" << std::endl;
  return failed;
#endif
}

const Loaded& loaded() {
  static const Loaded once = load_module();
  return once;
}

}  // namespace

bool CudaRuntime::load() { return loaded().module != nullptr; }

void* CudaRuntime::symbol(const char* name) {
  return loaded().module != nullptr ? dlsym(loaded().module, name) : nullptr;
}

int64_t CudaRuntime::device_count() {
  auto count = reinterpret_cast<int (*)()>(symbol("fulgur_cuda_device_count"));
  return count != nullptr ? count() : 0;
}

std::string CudaRuntime::status() { return loaded().status; }

}  // namespace fulgur
