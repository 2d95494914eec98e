// DistributedSampler against the real torch.utils.data.DistributedSampler,
// run by the venv's Python for the same arguments.
#include "support/test_support.hpp"

#include <fulgur/datamodules/loading/distributed_sampler.hpp>

#include <torch/torch.h>

#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <numeric>
#include <sstream>

namespace distributed_sampler_test {

using fulgur::DistributedSampler;
using fulgur::DistributedSamplerOptions;
using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {

// One line per case: "n replicas rank epoch shuffle drop_last seed: i i i".
const char* kTorchScript = R"(
import sys, torch
from torch.utils.data import DistributedSampler
for n in (1, 2, 7, 10, 17, 1000):
    for replicas in (1, 2, 3, 8):
        for rank in range(replicas):
            for epoch in (0, 5):
                for shuffle in (0, 1):
                    for drop_last in (0, 1):
                        for seed in (0, 4242):
                            s = DistributedSampler(range(n), num_replicas=replicas, rank=rank,
                                                   shuffle=bool(shuffle), seed=seed, drop_last=bool(drop_last))
                            s.set_epoch(epoch)
                            idx = list(s)
                            assert len(idx) == len(s)
                            print(n, replicas, rank, epoch, shuffle, drop_last, seed, ':', *idx)
# randperm's large-n path
s = DistributedSampler(range(70001), num_replicas=4, rank=3, shuffle=True, seed=9)
s.set_epoch(2)
print(70001, 4, 3, 2, 1, 0, 9, ':', *list(s))
)";

std::vector<int64_t> sampler_indices(int64_t n, int64_t replicas, int64_t rank, int64_t epoch, bool shuffle,
                                     bool drop_last, uint64_t seed, bool pad = true) {
  DistributedSampler sampler(n, DistributedSamplerOptions()
                                    .num_replicas(replicas)
                                    .rank(rank)
                                    .shuffle(shuffle)
                                    .drop_last(drop_last)
                                    .seed(seed)
                                    .pad(pad));
  sampler.set_epoch(epoch);
  auto indices = sampler.indices();
  CHECK(static_cast<int64_t>(indices.size()) == sampler.size());
  return indices;
}

}  // namespace

TEST_CASE("DistributedSampler: index sets equal PyTorch's DistributedSampler") {
  TempDir dir("distributed-sampler");
  std::ofstream(dir / "sampler.py") << kTorchScript;
  const auto result = run_command(std::string(FULGUR_PYTHON) + " " + (dir / "sampler.py").string(), 300);
  REQUIRE(result.exit_code == 0);
  std::istringstream lines(result.output);
  std::string line;
  int64_t cases = 0, shuffled_cases = 0;
  while (std::getline(lines, line)) {
    std::istringstream in(line);
    int64_t n, replicas, rank, epoch, shuffle, drop_last;
    uint64_t seed;
    std::string colon;
    REQUIRE(static_cast<bool>(in >> n >> replicas >> rank >> epoch >> shuffle >> drop_last >> seed >> colon));
    std::vector<int64_t> expected;
    for (int64_t i; in >> i;) expected.push_back(i);
    const std::string case_name = line.substr(0, line.find(':'));
    CAPTURE(case_name);
    CHECK(sampler_indices(n, replicas, rank, epoch, shuffle != 0, drop_last != 0, seed) == expected);
    ++cases;
    if (shuffle && n > 2) ++shuffled_cases;
  }
  CHECK(cases == 6 * (1 + 2 + 3 + 8) * 2 * 2 * 2 * 2 + 1);
  CHECK(shuffled_cases == 4 * 14 * 2 * 2 * 2 + 1);  // n > 2, shuffled
}

TEST_CASE("DistributedSampler: permutation equals torch.randperm on a generator seeded seed + epoch") {
  const auto result = run_command(std::string(FULGUR_PYTHON) +
                                      " -c 'import torch; g = torch.Generator(); g.manual_seed(77); "
                                      "print(*torch.randperm(50, generator=g).tolist())'",
                                  120);
  REQUIRE(result.exit_code == 0);
  std::istringstream in(result.output);
  std::vector<int64_t> expected;
  for (int64_t i; in >> i;) expected.push_back(i);
  CHECK(DistributedSampler::permutation(50, 77) == expected);
  // The sampler uses seed + epoch: epoch 7 with seed 70 is the same permutation.
  CHECK(sampler_indices(50, 1, 0, 7, true, false, 70) == expected);
}

TEST_CASE("DistributedSampler: evaluation mode partitions the indices, each exactly once") {
  for (const int64_t n : {0, 1, 5, 61, 100}) {
    for (const int64_t replicas : {1, 2, 3, 7}) {
      CAPTURE(n);
      CAPTURE(replicas);
      std::vector<int64_t> all;
      for (int64_t rank = 0; rank < replicas; ++rank) {
        const auto part = sampler_indices(n, replicas, rank, 3, true, false, 11, /*pad=*/false);
        // Sizes differ by at most one, larger on the lower ranks.
        CHECK(static_cast<int64_t>(part.size()) == n / replicas + (rank < n % replicas ? 1 : 0));
        all.insert(all.end(), part.begin(), part.end());
      }
      std::sort(all.begin(), all.end());
      std::vector<int64_t> expected(static_cast<size_t>(n));
      std::iota(expected.begin(), expected.end(), 0);
      CHECK(all == expected);
    }
  }
  // Training mode pads 61 to 63: rank 2 takes positions 2, 5, ..., 62, and 62 wraps to index 1.
  CHECK(sampler_indices(61, 3, 2, 0, false, false, 0).size() == 21);
  CHECK(sampler_indices(61, 3, 2, 0, false, false, 0).back() == 1);
}

TEST_CASE("DistributedSampler: set_epoch changes the permutation, not the share sizes") {
  DistributedSampler sampler(100, DistributedSamplerOptions().num_replicas(4).rank(1).seed(5));
  const auto epoch0 = sampler.indices();
  sampler.set_epoch(1);
  const auto epoch1 = sampler.indices();
  CHECK(epoch0.size() == 25);
  CHECK(epoch1.size() == 25);
  CHECK(epoch0 != epoch1);
  sampler.set_epoch(0);
  CHECK(sampler.indices() == epoch0);
}

TEST_CASE("DistributedSampler: invalid arguments are rejected with the value") {
  CHECK_THROWS_WITH_AS(DistributedSampler(10, DistributedSamplerOptions().num_replicas(2).rank(2)),
                       "[DistributedSampler::DistributedSampler] rank 2 is outside [0, 1]", std::invalid_argument);
  CHECK_THROWS_WITH_AS(DistributedSampler(10, DistributedSamplerOptions().num_replicas(0)),
                       "[DistributedSampler::DistributedSampler] num_replicas must be >= 1, got 0",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(DistributedSampler(-1), "[DistributedSampler::DistributedSampler] dataset size must be >= 0, got -1",
                       std::invalid_argument);
}

}  // namespace distributed_sampler_test
