// HostCachingAllocator: large host blocks freed by one step are handed back
// to the next instead of being mapped (and page-faulted) again, without the
// process growing past the most it ever had in use.
#include <fulgur/strategies/cuda/host_caching_allocator.hpp>

#include <doctest/doctest.h>
#include <sys/resource.h>
#include <torch/torch.h>

#include <cstdint>
#include <thread>
#include <vector>

namespace host_caching_allocator_test {

using fulgur::HostCachingAllocator;

namespace {

constexpr size_t kMiB = size_t{1} << 20;

long minor_page_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

bool aligned_64(const void* data) { return reinterpret_cast<std::uintptr_t>(data) % 64 == 0; }

}  // namespace

TEST_CASE("host caching allocator: a freed large block goes to the next request that fits") {
  HostCachingAllocator allocator;
  void* first = nullptr;
  {
    auto block = allocator.allocate(8 * kMiB);
    first = block.get();
    CHECK(aligned_64(first));
    CHECK(allocator.stats().in_use_bytes >= 8 * kMiB);
  }
  CHECK(allocator.stats().in_use_bytes == 0);
  CHECK(allocator.stats().cached_bytes >= 8 * kMiB);
  {
    auto same = allocator.allocate(8 * kMiB);
    CHECK(same.get() == first);
  }
  {
    auto smaller = allocator.allocate(5 * kMiB);  // fits: wastes less than half
    CHECK(smaller.get() == first);
  }
  const auto stats = allocator.stats();
  CHECK(stats.mappings == 1);
  CHECK(stats.reuses == 2);
}

TEST_CASE("host caching allocator: cached and used bytes together stay within the peak in use") {
  HostCachingAllocator allocator;
  { auto block = allocator.allocate(8 * kMiB); }
  const size_t peak = allocator.stats().peak_in_use_bytes;
  REQUIRE(allocator.stats().cached_bytes == peak);
  // 3 MiB does not fit the cached 8 MiB block (it would waste more than
  // half); mapping it beside the cached one would pass the peak, so the
  // cached block goes first.
  auto small = allocator.allocate(3 * kMiB);
  auto stats = allocator.stats();
  CHECK(stats.mappings == 2);
  CHECK(stats.reuses == 0);
  CHECK(stats.cached_bytes == 0);
  CHECK(stats.in_use_bytes + stats.cached_bytes <= stats.peak_in_use_bytes);
  CHECK(stats.peak_in_use_bytes == peak);
}

TEST_CASE("host caching allocator: small blocks bypass the cache, and the raw interface round-trips") {
  HostCachingAllocator allocator;
  {
    auto small = allocator.allocate(1000);
    CHECK(small.get() != nullptr);
    CHECK(aligned_64(small.get()));
    CHECK(allocator.stats().in_use_bytes == 0);
  }
  CHECK(allocator.allocate(0).get() == nullptr);
  for (size_t bytes : {size_t{100}, 4 * kMiB}) {
    void* raw = allocator.raw_allocate(bytes);
    REQUIRE(raw != nullptr);
    static_cast<char*>(raw)[bytes - 1] = 1;
    allocator.raw_deallocate(raw);
  }
  CHECK(allocator.stats().in_use_bytes == 0);
  CHECK(allocator.stats().mappings == 1);
}

TEST_CASE("host caching allocator: blocks allocated on other threads are freed on this one, and reused") {
  HostCachingAllocator allocator;
  // Two rounds, like two training steps: loader threads allocate, half is
  // freed at once, the rest here. The first round only grows (its freed
  // blocks may be unmapped to stay within the peak); the second finds the
  // blocks the first freed.
  for (int round = 0; round < 2; ++round) {
    std::vector<c10::DataPtr> blocks(4 * 50);
    std::vector<std::thread> threads;
    for (size_t t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        for (size_t i = 0; i < 50; ++i) {
          auto& block = blocks[t * 50 + i];
          block = allocator.allocate((1 + i % 3) * kMiB);
          static_cast<char*>(block.get())[0] = static_cast<char>(i);
          if (i % 2 == 0) block.clear();
        }
      });
    for (auto& thread : threads) thread.join();
    CHECK(allocator.stats().in_use_bytes > 0);
    blocks.clear();
    const auto stats = allocator.stats();
    CHECK(stats.in_use_bytes == 0);
    CHECK(stats.cached_bytes <= stats.peak_in_use_bytes);
    CHECK(stats.cached_bytes > 0);
  }
  CHECK(allocator.stats().reuses > 0);
}

TEST_CASE("host caching allocator: installed, a tensor allocated again reuses the block without page faults") {
  REQUIRE(HostCachingAllocator::install());
  CHECK(HostCachingAllocator::install());  // a second call changes nothing
  const int64_t floats = 64 * kMiB / sizeof(float);
  const void* first = nullptr;
  {
    auto tensor = torch::empty({floats});
    tensor.fill_(1.0F);
    first = tensor.data_ptr();
  }
  const long before = minor_page_faults();
  auto again = torch::empty({floats});
  again.fill_(2.0F);
  const long faults = minor_page_faults() - before;
  CHECK(again.data_ptr() == first);
  // A fresh 64 MiB mapping faults in 16384 pages of 4 KiB.
  CHECK(faults < 1000);
  CHECK(again.sum().item<double>() == doctest::Approx(2.0 * static_cast<double>(floats)));
}

}  // namespace host_caching_allocator_test
