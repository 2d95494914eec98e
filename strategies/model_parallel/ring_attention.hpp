#pragma once

#include <fulgur/strategies/collectives/process_group.hpp>

#include <torch/torch.h>

#include <cstdint>

namespace fulgur {

/// The positions of the tokens that rank `rank` of a context-parallel group
/// of `size` holds in a sequence of `length` tokens: two chunks of
/// length / (2 size), chunk `rank` and its mirror 2 size - 1 - rank, so that
/// under a causal mask every rank has the same work. Select a batch's
/// tokens (and targets, and positions) with it: `x.index_select(1, idx)`.
torch::Tensor context_parallel_positions(int64_t length, int64_t rank, int64_t size);

/// Attention over the whole sequence when each rank of `group` (the mesh's
/// cp) holds a part of it: `q`, `k`, `v` are [batch, heads, tokens / cp,
/// head_dim], the tokens context_parallel_positions gives this rank. The
/// key/value blocks travel around the ring (each rank sends its block on
/// while it computes with the one it has) and each rank accumulates its
/// queries' attention with an online softmax; backward sends the blocks
/// round again with their gradients. Equals softmax(q k^T / sqrt(d)) v over
/// the whole sequence (with the causal mask of the tokens' positions).
torch::Tensor ring_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, ProcessGroup& group,
                             bool causal);

}  // namespace fulgur
