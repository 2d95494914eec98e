#pragma once

#include <fulgur/engine/checkpoint/checkpoint_io.hpp>

#include <ATen/core/Tensor.h>

#include <condition_variable>
#include <exception>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

namespace fulgur {

/// Writes checkpoints on a background thread (Lightning's AsyncCheckpointIO),
/// so the step that saves is blocked only for a copy of the tensors.
///
/// save() waits for the previous write, copies every tensor storage of the
/// checkpoint into host buffers (CPU, pinned for CUDA sources; kept and
/// reused by the next save when the sizes match), and hands the copy to the
/// writer thread, which writes it with CheckpointIO::save (same atomic
/// protocol, same errors). A failed write is kept and rethrown, unchanged,
/// by the next save() or wait(): never lost, and the previous file at the
/// path is intact, as with a synchronous save. One write is in flight at a
/// time, so the buffers are never read and overwritten at once.
class AsyncCheckpointIO {
 public:
  AsyncCheckpointIO();
  /// Waits for the write in flight; an error nobody collected is printed.
  ~AsyncCheckpointIO();
  AsyncCheckpointIO(const AsyncCheckpointIO&) = delete;
  AsyncCheckpointIO& operator=(const AsyncCheckpointIO&) = delete;

  /// Waits for the previous write (rethrowing its error), copies
  /// `checkpoint` to host buffers and returns; the writer thread writes
  /// `path`. The caller may change its tensors as soon as this returns.
  void save(const Checkpoint& checkpoint, const std::filesystem::path& path);
  /// Runs `action` once the write in flight has succeeded (on the writer
  /// thread), or now when none is in flight and the last one did not fail.
  /// A failed write drops it: the
  /// actions that follow a save (removing an older file, linking last.ckpt)
  /// must not run without the new file.
  void after_write(std::function<void()> action);
  /// Blocks until no write is in flight; rethrows a failed write's error once.
  void wait();
  /// True while a write is queued or running.
  bool pending() const;

  /// Host buffers allocated so far (reused between saves of the same sizes).
  int64_t buffer_allocations() const { return buffer_allocations_; }
  /// For tests: the writer thread calls `gate(path)` before each write (a
  /// latch that makes a write measurably slow), and save()/wait() call
  /// `on_wait()` when they find a write in flight and start waiting for it.
  void set_test_hooks(std::function<void(const std::filesystem::path&)> gate, std::function<void()> on_wait);

 private:
  /// Copies one value, tensors into host buffers, containers recursively.
  c10::IValue to_host(const c10::IValue& value);
  at::Tensor to_host(const at::Tensor& tensor);
  void run();
  /// Waits for the write in flight under `lock`; returns its error, if any.
  std::exception_ptr wait_locked(std::unique_lock<std::mutex>& lock);

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::optional<Checkpoint> queued_;
  std::filesystem::path queued_path_;
  std::vector<std::function<void()>> after_write_;
  /// From save() until the write and its after_write actions are done.
  bool busy_ = false;
  bool stopping_ = false;
  std::exception_ptr error_;
  std::function<void(const std::filesystem::path&)> gate_;
  std::function<void()> on_wait_;

  /// Host copies by the order storages are met in a checkpoint; only the
  /// training thread touches them, and only while no write is in flight.
  std::vector<at::Tensor> buffers_;
  /// Storage of the source tensor -> host buffer, for the save in progress
  /// (tensors sharing a storage share it in the file too).
  std::unordered_map<const void*, at::Tensor> copied_;
  size_t next_buffer_ = 0;
  int64_t buffer_allocations_ = 0;
  std::thread thread_;
};

}  // namespace fulgur
