// Part of the fulgur_cuda module (see nccl_module.cpp): a training step
// captured into one CUDA graph and replayed (trainer/loops/cuda_graph_step.hpp).
#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/torch.h>

#include <exception>
#include <functional>
#include <memory>
#include <string>

// Captures what `body` queues on `device` into a graph. Capture runs on a
// side stream (the legacy default stream cannot capture) that first waits
// for everything queued so far; the compute stream then waits for it. In
// thread-local mode the loader's threads (pinned allocations) cannot break
// it. `graph` gets the instantiated graph, or stays null and `error` says why.
extern "C" __attribute__((visibility("default"))) void fulgur_cuda_graph_capture(int64_t device,
                                                                                  const std::function<void()>& body,
                                                                                  std::shared_ptr<void>& graph,
                                                                                  std::string& error) {
  const auto index = static_cast<c10::DeviceIndex>(device);
  c10::cuda::CUDAGuard device_guard(index);
  const c10::cuda::CUDAStream compute = c10::cuda::getCurrentCUDAStream(index);
  const c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool(false, index);
  at::cuda::CUDAEvent queued;
  queued.record(compute);
  queued.block(side);
  // Cached autocast casts made outside the capture would be read by the
  // graph after their memory is reused; inside it, each cast is a kernel.
  const bool autocast_cache = at::autocast::is_autocast_cache_enabled();
  at::autocast::set_autocast_cache_enabled(false);
  auto captured = std::make_shared<at::cuda::CUDAGraph>();
  try {
    c10::cuda::CUDAStreamGuard stream_guard(side);
    captured->capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
    try {
      body();
    } catch (...) {
      try {
        captured->capture_end();
      } catch (...) {  // the capture was invalidated; the body's error says why
      }
      throw;
    }
    captured->capture_end();
    graph = captured;
  } catch (const std::exception& e) {
    error = e.what();
    graph.reset();
  }
  at::autocast::set_autocast_cache_enabled(autocast_cache);
  at::cuda::CUDAEvent done;
  done.record(side);
  done.block(compute);
}

// Replays a captured graph on the device's current stream.
extern "C" __attribute__((visibility("default"))) void fulgur_cuda_graph_replay(const std::shared_ptr<void>& graph) {
  static_cast<at::cuda::CUDAGraph*>(graph.get())->replay();
}
