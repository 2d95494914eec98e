#include <fulgur/trainer/seed.hpp>

#include <fulgur/strategies/cuda/cuda_runtime.hpp>

#include <torch/cuda.h>
#include <torch/utils.h>

#include <cstdlib>

namespace fulgur {

uint64_t seed_everything(uint64_t seed) {
  CudaRuntime::load();  // seeding asks ATen about CUDA, which decides once (CudaRuntime)
  torch::manual_seed(seed);
  if (torch::cuda::is_available()) torch::cuda::manual_seed_all(seed);
  std::srand(static_cast<unsigned>(seed));
  return seed;
}

}  // namespace fulgur
