#include <fulgur/engine/checkpoint/async_checkpoint_io.hpp>

#include <ATen/ATen.h>

#include <iostream>
#include <utility>

namespace fulgur {

AsyncCheckpointIO::AsyncCheckpointIO() : thread_([this] { run(); }) {}

AsyncCheckpointIO::~AsyncCheckpointIO() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();  // the writer finishes the write in flight first
  if (error_) {
    try {
      std::rethrow_exception(error_);
    } catch (const std::exception& e) {
      std::cerr << "fulgur: error: an asynchronous checkpoint write failed: " << e.what() << std::endl;
    }
  }
}

void AsyncCheckpointIO::set_test_hooks(std::function<void(const std::filesystem::path&)> gate,
                                       std::function<void()> on_wait) {
  std::lock_guard<std::mutex> lock(mutex_);
  gate_ = std::move(gate);
  on_wait_ = std::move(on_wait);
}

bool AsyncCheckpointIO::pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return busy_;
}

std::exception_ptr AsyncCheckpointIO::wait_locked(std::unique_lock<std::mutex>& lock) {
  if (busy_) {
    if (on_wait_) on_wait_();
    changed_.wait(lock, [&] { return !busy_; });
  }
  return std::exchange(error_, nullptr);
}

void AsyncCheckpointIO::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (auto error = wait_locked(lock)) std::rethrow_exception(error);
}

void AsyncCheckpointIO::save(const Checkpoint& checkpoint, const std::filesystem::path& path) {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (auto error = wait_locked(lock)) std::rethrow_exception(error);
  }
  // No write is in flight: the buffers are free to overwrite.
  copied_.clear();
  next_buffer_ = 0;
  Checkpoint host = to_host(c10::IValue(checkpoint)).toGenericDict();
  copied_.clear();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queued_ = std::move(host);
    queued_path_ = path;
    busy_ = true;
  }
  changed_.notify_all();
}

void AsyncCheckpointIO::after_write(std::function<void()> action) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (busy_) {
      after_write_.push_back(std::move(action));
      return;
    }
    if (error_) return;  // the last write failed: its file does not exist
  }
  action();
}

c10::IValue AsyncCheckpointIO::to_host(const c10::IValue& value) {
  if (value.isTensor()) return to_host(value.toTensor());
  if (value.isGenericDict()) {
    const auto dict = value.toGenericDict();
    c10::impl::GenericDict out(dict.keyType(), dict.valueType());
    for (const auto& entry : dict) out.insert(entry.key(), to_host(entry.value()));  // insertion order kept
    return out;
  }
  if (value.isList()) {
    const auto list = value.toList();
    c10::impl::GenericList out(list.elementType());
    out.reserve(list.size());
    for (const c10::IValue element : list) out.push_back(to_host(element));
    return out;
  }
  if (value.isTuple()) {
    std::vector<c10::IValue> elements;
    for (const auto& element : value.toTupleRef().elements()) elements.push_back(to_host(element));
    return c10::ivalue::Tuple::create(std::move(elements));
  }
  return value;  // numbers, strings, None: immutable
}

at::Tensor AsyncCheckpointIO::to_host(const at::Tensor& tensor) {
  if (!tensor.defined()) return tensor;
  if (tensor.layout() != at::kStrided || tensor.is_quantized() || !tensor.has_storage()) {
    return tensor.detach().to(at::kCPU).clone();  // rare kinds: a plain copy
  }
  // The whole storage is copied, and the host tensor views the buffer with
  // the source's offset and strides: the file holds the same bytes as a
  // synchronous save's, and tensors sharing a storage still share it.
  const c10::Storage& storage = tensor.storage();
  const void* key = storage.unsafeGetStorageImpl();
  auto found = copied_.find(key);
  if (found == copied_.end()) {
    const int64_t nbytes = static_cast<int64_t>(storage.nbytes());
    const bool pinned = !storage.device().is_cpu();  // fast device-to-host copies
    if (next_buffer_ == buffers_.size()) buffers_.emplace_back();
    at::Tensor& buffer = buffers_[next_buffer_++];
    if (!buffer.defined() || buffer.numel() != nbytes || buffer.is_pinned() != pinned) {
      buffer = at::empty({nbytes}, at::TensorOptions().dtype(at::kByte).pinned_memory(pinned));
      ++buffer_allocations_;
    }
    at::Tensor source = at::empty({0}, at::TensorOptions().dtype(at::kByte).device(storage.device()));
    source.set_(storage, 0, {nbytes}, {1});
    buffer.copy_(source);
    found = copied_.emplace(key, buffer).first;
  }
  at::Tensor host = at::empty({0}, at::TensorOptions().dtype(tensor.scalar_type()));
  host.set_(found->second.storage(), tensor.storage_offset(), tensor.sizes(), tensor.strides());
  return host;
}

void AsyncCheckpointIO::run() {
  for (;;) {
    Checkpoint checkpoint = new_state_dict();
    std::filesystem::path path;
    std::function<void(const std::filesystem::path&)> gate;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] { return queued_.has_value() || stopping_; });
      if (!queued_) return;  // stopping, nothing left to write
      checkpoint = std::move(*queued_);
      queued_.reset();
      path = queued_path_;
      gate = gate_;
    }
    std::exception_ptr error;
    try {
      if (gate) gate(path);
      CheckpointIO::save(checkpoint, path);
    } catch (...) {
      error = std::current_exception();
    }
    checkpoint = new_state_dict();  // the writer holds no buffer once done
    // Actions queued while the file was written run once it exists; one may
    // be added while they run, so drain until none is left.
    for (;;) {
      std::vector<std::function<void()>> actions;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (error) after_write_.clear();
        actions.swap(after_write_);
        if (actions.empty()) {
          error_ = error;
          busy_ = false;
          break;
        }
      }
      try {
        for (auto& action : actions) action();
      } catch (...) {
        error = std::current_exception();
      }
    }
    changed_.notify_all();
  }
}

}  // namespace fulgur
