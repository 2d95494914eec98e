// LibTorch's CUDA half is loaded only where a CUDA driver is: programs link
// the CPU half, the fulgur_cuda module carries libtorch_cuda and NCCL.
#include "support/test_support.hpp"

#include <fulgur/strategies/accelerator.hpp>
#include <fulgur/strategies/cuda/cuda_runtime.hpp>
#include <fulgur/strategies/collectives/process_group.hpp>

#include <doctest/doctest.h>

#include <dlfcn.h>

#include <filesystem>
#include <string>

namespace cuda_runtime_test {

using fulgur::testing::run_command;

namespace {
const std::string kBin = std::string(FULGUR_BINARY_DIR) + "/bin/";
const std::string kModule = std::string(FULGUR_BINARY_DIR) + "/lib/libfulgur_cuda.so";

std::string needed(const std::string& file) {
  const auto out = run_command("readelf -d " + file + " | grep NEEDED", 60);
  REQUIRE_MESSAGE(out.exit_code == 0, out.output);
  return out.output;
}
}  // namespace

TEST_CASE("cuda runtime: programs link LibTorch's CPU half; the module links libtorch_cuda and exports NCCL") {
  REQUIRE(std::filesystem::exists(kModule));
  for (const std::string program : {"cinic10", "imagenet", "fulgur_tests"}) {
    const std::string libraries = needed(kBin + program);
    INFO(program << ": " << libraries);
    CHECK(libraries.find("[libtorch_cpu.so]") != std::string::npos);
    CHECK(libraries.find("libtorch_cuda") == std::string::npos);
    CHECK(libraries.find("[libtorch.so]") == std::string::npos);
  }
  CHECK(needed(kModule).find("[libtorch_cuda.so]") != std::string::npos);
  const auto symbols = run_command("nm -D --defined-only " + kModule, 60);
  CHECK(symbols.output.find(" T fulgur_make_nccl_backend") != std::string::npos);
}

TEST_CASE("cuda runtime: loaded exactly when a CUDA driver is installed") {
  const bool driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL) != nullptr;
  INFO(fulgur::CudaRuntime::status());
  CHECK(fulgur::CudaRuntime::load() == driver);
  if (!driver) {
    CHECK(fulgur::CudaRuntime::status() == "no CUDA driver (libcuda.so.1)");
    CHECK_FALSE(fulgur::Accelerator::is_cuda_available());
    // The module, and libtorch_cuda behind it, stay out of this process.
    CHECK(dlopen("libtorch_cuda.so", RTLD_NOW | RTLD_NOLOAD) == nullptr);
  }
}

TEST_CASE("cuda runtime: an NCCL group without CUDA is one error that says why") {
  if (fulgur::CudaRuntime::load()) return;  // a GPU machine: the NCCL path is real there (scripts/gpu_check.sh)
  fulgur::ProcessGroupOptions options;
  options.main_port = 0;
  options.device_type = torch::kCUDA;
  CHECK_THROWS_WITH(fulgur::ProcessGroup{options},
                    doctest::Contains("NCCL needs CUDA, which is not loaded here (no CUDA driver (libcuda.so.1))"));
}

}  // namespace cuda_runtime_test
