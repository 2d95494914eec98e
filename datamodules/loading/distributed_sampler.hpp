#pragma once

#include <torch/arg.h>

#include <cstdint>
#include <vector>

namespace fulgur {

/// Options of a DistributedSampler, PyTorch's names and defaults.
struct DistributedSamplerOptions {
  /// Processes sharing the data (>= 1).
  TORCH_ARG(int64_t, num_replicas) = 1;
  /// This process, in [0, num_replicas).
  TORCH_ARG(int64_t, rank) = 0;
  /// Permute the indices every epoch with a generator seeded by seed + epoch.
  TORCH_ARG(bool, shuffle) = true;
  /// Must be the same on every rank, or the shares overlap.
  TORCH_ARG(uint64_t, seed) = 0;
  /// Drop the tail so every rank gets floor(n / num_replicas) indices,
  /// instead of padding up to ceil(n / num_replicas).
  TORCH_ARG(bool, drop_last) = false;
  /// Training (true): pad by repeating the order's start so every rank runs
  /// the same number of steps, PyTorch's behaviour. Evaluation (false): no
  /// padding; ranks get n / num_replicas or one more index and every index
  /// appears on exactly one rank, so a metric summed over ranks counts each
  /// example once and equals the one-process metric.
  TORCH_ARG(bool, pad) = true;
};

/// The indices one rank reads in one epoch, with the semantics of PyTorch's
/// torch.utils.data.DistributedSampler: the same permutation on every rank
/// (torch::randperm on a CPU generator seeded with seed + epoch, so the
/// indices equal PyTorch's for the same arguments), padded or cut to a
/// multiple of num_replicas, then every num_replicas-th index from rank.
class DistributedSampler {
 public:
  /// Throws std::invalid_argument for a negative dataset size, num_replicas
  /// < 1 or a rank outside [0, num_replicas).
  DistributedSampler(int64_t dataset_size, DistributedSamplerOptions options = {});

  /// Selects the epoch; with shuffle each epoch has its own permutation.
  void set_epoch(int64_t epoch) { epoch_ = epoch; }
  int64_t epoch() const { return epoch_; }

  /// Indices this rank gets per epoch (PyTorch's len(sampler)).
  int64_t size() const;
  /// This rank's indices for the current epoch, in order.
  std::vector<int64_t> indices() const;

  int64_t dataset_size() const { return dataset_size_; }
  const DistributedSamplerOptions& options() const { return options_; }

  /// 0..n-1 permuted by torch::randperm with a CPU generator seeded `seed`;
  /// what torch.randperm(n, generator=torch.Generator().manual_seed(seed)) gives.
  static std::vector<int64_t> permutation(int64_t n, uint64_t seed);

 private:
  int64_t dataset_size_;
  DistributedSamplerOptions options_;
  int64_t epoch_ = 0;
};

}  // namespace fulgur
