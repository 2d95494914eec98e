#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace fulgur {

/// How an activation is spread over the tensor-parallel ranks where it
/// enters or leaves a layer: whole on every rank, or split along a dimension.
struct Layout {
  bool sharded = false;
  int64_t dim = 0;
};
/// Whole on every rank.
inline Layout Replicate() { return {}; }
/// Split along `dim` (-1: the features; 1: the sequence of [batch, seq, features]).
inline Layout Shard(int64_t dim) { return {true, dim}; }

/// What parallelize_module does to one submodule (PyTorch's tensor-parallel
/// styles, with their names and defaults).
struct ParallelStyle {
  enum class Kind { Colwise, Rowwise, Sequence };
  Kind kind = Kind::Colwise;
  Layout input;
  Layout output;
};

/// A ShardableLinear's output features (its weight's rows) or a
/// ShardableEmbedding's embedding dimension, split over tp. Input
/// Replicate() (or Shard(1): the sequence-parallel activations, gathered
/// first); output Shard(-1) (each rank keeps its features) or Replicate()
/// (gathered).
inline ParallelStyle ColwiseParallel(Layout input = Replicate(), Layout output = Shard(-1)) {
  return {ParallelStyle::Kind::Colwise, input, output};
}
/// A ShardableLinear's input features (its weight's columns) or a
/// ShardableEmbedding's vocabulary, split over tp; the partial results are
/// summed: output Replicate() (all-reduce) or Shard(1) (reduce-scatter
/// along the sequence, for sequence parallelism). The bias is added once,
/// after the sum.
inline ParallelStyle RowwiseParallel(Layout input = Shard(-1), Layout output = Replicate()) {
  return {ParallelStyle::Kind::Rowwise, input, output};
}
/// Any module (a LayerNorm, a dropout region) that runs on the sequence
/// chunk of each rank: its parameters stay whole and their gradients,
/// partial per chunk, are summed over tp.
inline ParallelStyle SequenceParallel(int64_t sequence_dim = 1) {
  return {ParallelStyle::Kind::Sequence, Shard(sequence_dim), Shard(sequence_dim)};
}

/// Submodule names (as named_modules gives them; `*` matches one part, as
/// in "blocks.*.mlp.up") and the style each gets, applied in order.
using ParallelPlan = std::vector<std::pair<std::string, ParallelStyle>>;

}  // namespace fulgur
