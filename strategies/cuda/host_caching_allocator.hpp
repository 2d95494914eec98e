#pragma once

#include <c10/core/Allocator.h>

#include <cstddef>
#include <map>
#include <mutex>

namespace fulgur {

/// LibTorch's CPU allocator with a cache for large blocks: the host
/// counterpart of the CUDA caching allocator.
///
/// Why: a training step frees and allocates the same activation tensors every
/// step. glibc maps every block above its mmap threshold (32 MiB at most)
/// afresh and unmaps it on free, so each step page-faulted and zero-filled
/// them again: ResNet-18 on 32x32 images at batch 128 spent 18 % of its CPU
/// time in the kernel doing that. Raising glibc's thresholds instead kept the
/// memory but fragmented the heap (+50 % peak RSS on the same run).
///
/// Blocks of at least kMinCachedBytes get their own page-aligned mapping; a
/// freed one waits in the cache for the next request that fits it (the
/// smallest cached block at least as large, wasting at most half of it).
/// Cached and used bytes together never exceed the most ever in use at once:
/// before mapping past that, the longest-cached blocks are unmapped. So peak
/// RSS stays what the tensors need, while the repeating steps of training
/// reuse most blocks. Smaller blocks come from c10's alloc_cpu.
///
/// Every block starts with a 64-byte header naming its allocator, so the
/// deleter needs no lookup. Thread-safe: loader threads allocate batches that
/// the training thread frees. An instance must outlive the blocks it handed
/// out (the installed one is never destroyed).
class HostCachingAllocator final : public c10::Allocator {
 public:
  static constexpr size_t kMinCachedBytes = size_t{1} << 20;

  struct Stats {
    size_t in_use_bytes = 0;  // large blocks handed out and not yet freed
    size_t cached_bytes = 0;  // large blocks freed and kept for reuse
    size_t peak_in_use_bytes = 0;
    size_t mappings = 0;  // large blocks mapped from the kernel so far
    size_t reuses = 0;    // large requests served from the cache
  };

  HostCachingAllocator() = default;
  HostCachingAllocator(const HostCachingAllocator&) = delete;
  HostCachingAllocator& operator=(const HostCachingAllocator&) = delete;
  ~HostCachingAllocator() override;

  /// Makes one HostCachingAllocator LibTorch's CPU allocator for the rest of
  /// the process (later calls do nothing), unless the environment sets
  /// FULGUR_HOST_CACHING_ALLOCATOR=0. Tensors allocated before keep their own
  /// deleters. Returns whether it is installed.
  static bool install();

  c10::DataPtr allocate(size_t bytes) override;
  c10::DeleterFnPtr raw_deleter() const override;
  void copy_data(void* dest, const void* src, std::size_t count) const override;

  Stats stats() const;
  /// Unmaps every cached block.
  void release_cached();

 private:
  struct CachedBlock {
    void* mapping;
    size_t sequence;  // order of freeing: the smallest is the longest cached
  };

  static void release(void* data);
  /// A cached mapping of at least `mapped_bytes` (at most twice that), or a
  /// new one; sets `mapped_bytes` to the size of the one returned.
  void* take_mapping(size_t& mapped_bytes);
  void give_back(void* mapping, size_t mapped_bytes);
  void unmap_oldest_locked();
  void unmap_cached_locked();

  mutable std::mutex mutex_;
  std::multimap<size_t, CachedBlock> cached_;  // mapped size -> block
  size_t next_sequence_ = 0;
  Stats stats_;
};

}  // namespace fulgur
