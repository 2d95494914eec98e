// WorkerPool threads run tensor ops on one intra-op thread (PyTorch's
// DataLoader workers do the same), leaving the training thread's setting alone.
#include <fulgur/datamodules/loading/worker_pool.hpp>

#include <doctest/doctest.h>
#include <torch/torch.h>

#include <dlfcn.h>

#include <future>

namespace worker_pool_test {

namespace {
int openmp_max_threads() {
  using MaxThreads = int (*)();
  void* symbol = dlsym(RTLD_DEFAULT, "omp_get_max_threads");
  REQUIRE_MESSAGE(symbol != nullptr, "LibTorch is expected to bring an OpenMP runtime");
  const auto max_threads = reinterpret_cast<MaxThreads>(symbol);
  return max_threads();
}
}  // namespace

TEST_CASE("WorkerPool: tensor ops in a worker use one OpenMP thread; the caller keeps its threads") {
  const int before = at::get_num_threads();
  at::set_num_threads(2);
  std::promise<int> seen;
  {
    fulgur::WorkerPool pool(1);
    pool.submit([&seen] {
      // A large op runs ATen's per-thread set-up, which would reset the team size.
      torch::ones({1 << 20}).add_(1).sum().item<float>();
      seen.set_value(openmp_max_threads());
    });
    CHECK(seen.get_future().get() == 1);
  }
  torch::ones({1 << 20}).add_(1);
  CHECK(at::get_num_threads() == 2);
  CHECK(openmp_max_threads() == 2);
  at::set_num_threads(before);
}

}  // namespace worker_pool_test
