// Part of the fulgur_cuda module (see nccl_module.cpp): batches copied to
// the GPU on a side stream, so the copy of the next batch overlaps the
// step computing on the current one.
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/torch.h>

#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace {

// One copy stream per device, for the process's lifetime.
c10::cuda::CUDAStream copy_stream(c10::DeviceIndex device) {
  static std::mutex mutex;
  static std::map<c10::DeviceIndex, c10::cuda::CUDAStream> streams;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = streams.find(device);
  if (it == streams.end()) it = streams.emplace(device, c10::cuda::getStreamFromPool(false, device)).first;
  return it->second;
}

}  // namespace

// Starts copying the (pinned) `host` tensors to `device` on its copy stream;
// `ready` gets an event recorded behind the copies.
// The cudaStream_t of a c10::Stream, for LibTorch releases whose c10::Stream
// has no native_handle() yet (before 2.11): see device_decode_dataset.cpp.
extern "C" __attribute__((visibility("default"))) void* fulgur_cuda_native_stream(int64_t id, int8_t device_index) {
  return c10::cuda::CUDAStream::unpack3(id, device_index, c10::DeviceType::CUDA).stream();
}

extern "C" __attribute__((visibility("default"))) void fulgur_cuda_copy_async(
    const std::vector<at::Tensor>& host, int64_t device, std::vector<at::Tensor>& out, std::shared_ptr<void>& ready) {
  const auto index = device >= 0 ? static_cast<c10::DeviceIndex>(device) : c10::cuda::current_device();
  c10::cuda::CUDAGuard device_guard(index);
  const c10::cuda::CUDAStream stream = copy_stream(index);
  {
    c10::cuda::CUDAStreamGuard stream_guard(stream);
    out.clear();
    for (const auto& t : host) out.push_back(t.to(at::Device(at::kCUDA, index), /*non_blocking=*/true));
  }
  auto event = std::make_shared<at::cuda::CUDAEvent>();
  event->record(stream);
  ready = event;
}

// Makes the current (compute) stream wait for the copy, and tells the
// allocator the tensors are used there: their memory, allocated on the copy
// stream, is not handed out again before the compute stream is done with it.
extern "C" __attribute__((visibility("default"))) void fulgur_cuda_wait_copy(const std::vector<at::Tensor>& tensors,
                                                                              const std::shared_ptr<void>& ready) {
  if (tensors.empty()) return;
  const auto index = tensors.front().device().index();
  c10::cuda::CUDAGuard device_guard(index);
  const c10::cuda::CUDAStream compute = c10::cuda::getCurrentCUDAStream(index);
  static_cast<at::cuda::CUDAEvent*>(ready.get())->block(compute);
  for (const auto& t : tensors) c10::cuda::CUDACachingAllocator::recordStream(t.storage().data_ptr(), compute);
}
