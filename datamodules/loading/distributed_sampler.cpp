#include <fulgur/datamodules/loading/distributed_sampler.hpp>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

namespace fulgur {

DistributedSampler::DistributedSampler(int64_t dataset_size, DistributedSamplerOptions options)
    : dataset_size_(dataset_size), options_(options) {
  const std::string where = "[DistributedSampler::DistributedSampler] ";
  if (dataset_size_ < 0) throw std::invalid_argument(where + "dataset size must be >= 0, got " + std::to_string(dataset_size_));
  if (options_.num_replicas() < 1) {
    throw std::invalid_argument(where + "num_replicas must be >= 1, got " + std::to_string(options_.num_replicas()));
  }
  if (options_.rank() < 0 || options_.rank() >= options_.num_replicas()) {
    throw std::invalid_argument(where + "rank " + std::to_string(options_.rank()) + " is outside [0, " +
                                std::to_string(options_.num_replicas() - 1) + "]");
  }
}

int64_t DistributedSampler::size() const {
  const int64_t n = dataset_size_;
  const int64_t replicas = options_.num_replicas();
  if (options_.drop_last()) return n / replicas;
  if (options_.pad()) return (n + replicas - 1) / replicas;
  return n / replicas + (options_.rank() < n % replicas ? 1 : 0);
}

std::vector<int64_t> DistributedSampler::permutation(int64_t n, uint64_t seed) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  if (n == 0) return order;
  auto generator = at::make_generator<at::CPUGeneratorImpl>(seed);
  const torch::Tensor permuted = torch::randperm(n, generator, torch::kLong).contiguous();
  std::copy(permuted.data_ptr<int64_t>(), permuted.data_ptr<int64_t>() + n, order.begin());
  return order;
}

std::vector<int64_t> DistributedSampler::indices() const {
  const int64_t n = dataset_size_;
  std::vector<int64_t> order;
  if (options_.shuffle()) {
    // Unsigned wrap-around is intended: any epoch (even negative) maps to a seed.
    order = permutation(n, options_.seed() + static_cast<uint64_t>(epoch_));
  } else {
    order.resize(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), int64_t{0});
  }
  const int64_t replicas = options_.num_replicas();
  if (replicas == 1 && !options_.drop_last()) return order;
  // Padded: positions past n wrap around to the order's start (repeatedly if
  // n < replicas). Dropped: the tail past size() * replicas is cut. Unpadded:
  // the order as it is.
  const int64_t total = options_.drop_last() || options_.pad() ? size() * replicas : n;
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(size()));
  if (n == 0) return mine;
  for (int64_t i = options_.rank(); i < total; i += replicas) mine.push_back(order[static_cast<size_t>(i % n)]);
  return mine;
}

}  // namespace fulgur
