// Which engine decoded each image, without a GPU: the cascade of decoders
// (hardware, then CUDA) with stand-in stages, the counts, and the per-epoch
// bookkeeping that persistent workers running ahead must not mix up.
#include <fulgur/datamodules/images/codecs/decode_cascade.hpp>
#include <fulgur/datamodules/images/codecs/decode_counts.hpp>
#include <fulgur/datamodules/images/decode_stats.hpp>

#include <doctest/doctest.h>

#include "support/test_support.hpp"

#include <set>
#include <thread>
#include <vector>

namespace decode_counts_test {

using namespace fulgur;
using fulgur::testing::error_of;

TEST_CASE("DecodeCascade: each stage gets what the earlier ones left; engines per item") {
  std::vector<std::vector<size_t>> asked;
  DecodeCascade cascade;
  // The hardware engine refuses items 1 and 4 (progressive, say); the CUDA
  // decoder takes 1 but not 4 (a CMYK file, say).
  cascade.add(DecodeEngine::Hardware, [&](const std::vector<size_t>& which) {
    asked.push_back(which);
    std::vector<bool> ok;
    for (const size_t i : which) ok.push_back(i != 1 && i != 4);
    return ok;
  });
  cascade.add(DecodeEngine::Cuda, [&](const std::vector<size_t>& which) {
    asked.push_back(which);
    std::vector<bool> ok;
    for (const size_t i : which) ok.push_back(i != 4);
    return ok;
  });
  const auto engines = cascade.run(6);
  CHECK(engines == std::vector<DecodeEngine>{DecodeEngine::Hardware, DecodeEngine::Cuda, DecodeEngine::Hardware,
                                             DecodeEngine::Hardware, DecodeEngine::None, DecodeEngine::Hardware});
  REQUIRE(asked.size() == 2);
  CHECK(asked[0] == std::vector<size_t>{0, 1, 2, 3, 4, 5});
  CHECK(asked[1] == std::vector<size_t>{1, 4});

  // Nothing left: later stages are not called.
  asked.clear();
  DecodeCascade all_hardware;
  all_hardware.add(DecodeEngine::Hardware, [&](const std::vector<size_t>& which) {
    asked.push_back(which);
    return std::vector<bool>(which.size(), true);
  });
  all_hardware.add(DecodeEngine::Cuda, [&](const std::vector<size_t>& which) {
    asked.push_back(which);
    return std::vector<bool>(which.size(), true);
  });
  CHECK(all_hardware.run(3) == std::vector<DecodeEngine>(3, DecodeEngine::Hardware));
  CHECK(asked.size() == 1);
  CHECK(all_hardware.run(0).empty());

  DecodeCascade wrong;
  wrong.add(DecodeEngine::Cpu, [](const std::vector<size_t>&) { return std::vector<bool>{true}; });
  CHECK(error_of([&] { wrong.run(2); }) == "[DecodeCascade::run] the cpu stage answered 1 flags for 2 items");
  CHECK(error_of([&] { wrong.add(DecodeEngine::None, [](const std::vector<size_t>&) { return std::vector<bool>{}; }); })
            .find("[DecodeCascade::add]") == 0);
}

TEST_CASE("DecodeCounts: engines, one-by-one fallbacks, sums and the text") {
  DecodeCounts counts;
  for (const auto engine : {DecodeEngine::Hardware, DecodeEngine::Hardware, DecodeEngine::Cuda, DecodeEngine::Cpu,
                            DecodeEngine::None}) {
    counts.add(engine);
  }
  counts.add_fallback();
  CHECK(counts == DecodeCounts{2, 1, 2, 1});
  CHECK(counts.total() == 5);
  DecodeCounts sum = counts;
  sum += counts;
  CHECK(sum == DecodeCounts{4, 2, 4, 2});
  CHECK(counts.to_string() == "hardware 2, cuda 1, cpu 2 (1 one by one)");
}

TEST_CASE("DecodeStats: per batch, per epoch (kept apart when the next epoch starts early) and per run") {
  DecodeStats stats("cuda:0");
  CHECK_FALSE(stats.record(0, {250, 4, 2, 0}));
  CHECK(stats.record(0, {250, 0, 6, 6}));        // the epoch's first batch with one-by-one images: warn
  CHECK_FALSE(stats.record(0, {255, 0, 1, 1}));  // once per epoch
  CHECK(stats.record(1, {0, 0, 3, 3}));          // the next epoch, decoded ahead, warns for itself
  CHECK(stats.last_batch() == DecodeCounts{0, 0, 3, 3});
  CHECK(stats.epoch(0) == DecodeCounts{755, 4, 9, 7});
  CHECK(stats.finish_epoch(0) ==
        "decode on cuda:0, epoch 0: 768 images in 3 batches: hardware 755, cuda 4, cpu 9 (7 one by one)");
  CHECK(stats.epoch(0) == DecodeCounts{});
  CHECK(stats.epoch(1) == DecodeCounts{0, 0, 3, 3});
  CHECK(stats.run() == DecodeCounts{755, 4, 12, 10});
  CHECK(stats.run_batches() == 4);
  CHECK(stats.finish_epoch(1) == "decode on cuda:0, epoch 1: 3 images in 1 batches: hardware 0, cuda 0, cpu 3 (3 one by one)");
  CHECK(stats.finish_epoch(7) == "decode on cuda:0, epoch 7: 0 images in 0 batches: hardware 0, cuda 0, cpu 0 (0 one by one)");

  // Loader threads record at once: nothing is lost.
  DecodeStats shared("cuda:0");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int b = 0; b < 500; ++b) shared.record(2, {1, 1, 1, 0});
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(shared.run() == DecodeCounts{2000, 2000, 2000, 0});
  CHECK(shared.run_batches() == 2000);
}

}  // namespace decode_counts_test
