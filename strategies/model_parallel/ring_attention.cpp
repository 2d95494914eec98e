#include <fulgur/strategies/model_parallel/ring_attention.hpp>

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <stdexcept>

namespace fulgur {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Sends `outgoing` to the next rank of the ring and receives the previous
// rank's into `incoming` (same shape); returns once both are done.
void pass_on(ProcessGroup& group, torch::Tensor& outgoing, torch::Tensor& incoming, int tag) {
  const int64_t n = group.size();
  const int64_t next = (group.rank() + 1) % n;
  const int64_t previous = (group.rank() + n - 1) % n;
  auto received = group.recv_async(incoming, previous, tag);
  auto sent = group.send_async(outgoing, next, tag);
  group.wait(sent, "ring_attention send");
  group.wait(received, "ring_attention recv");
}

// Scores of this rank's queries against one key block, scaled and masked
// (masked entries -inf): [batch, heads, queries, keys].
torch::Tensor scores(const torch::Tensor& q, const torch::Tensor& k, double scale, const torch::Tensor& allowed) {
  torch::Tensor s = torch::matmul(q, k.transpose(-2, -1)) * scale;
  if (allowed.defined()) s.masked_fill_(allowed.logical_not(), -std::numeric_limits<double>::infinity());
  return s;
}

struct RingAttention : torch::autograd::Function<RingAttention> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, ProcessGroup* group, bool causal) {
    const int64_t n = group->size();
    const int64_t rank = group->rank();
    const int64_t local = q.size(2);
    const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
    const torch::Tensor positions =
        causal ? context_parallel_positions(local * n, rank, n).to(q.device()) : torch::Tensor();
    torch::Tensor block = torch::stack({k, v}).contiguous();  // this rank's keys and values, then the others'
    torch::Tensor incoming = torch::empty_like(block);
    torch::Tensor max = torch::full({q.size(0), q.size(1), local}, -std::numeric_limits<double>::infinity(),
                                    q.options().dtype(torch::kFloat));
    torch::Tensor sum = torch::zeros_like(max);
    torch::Tensor out = torch::zeros(q.sizes(), q.options().dtype(torch::kFloat));
    const torch::Tensor qf = q.to(torch::kFloat);
    for (int64_t step = 0; step < n; ++step) {
      const int64_t source = (rank + n - step) % n;
      // Start the next block's journey while this one is used.
      c10::intrusive_ptr<c10d::Work> sent, received;
      if (step + 1 < n) {
        received = group->recv_async(incoming, (rank + n - 1) % n, static_cast<int>(step));
        sent = group->send_async(block, (rank + 1) % n, static_cast<int>(step));
      }
      torch::Tensor allowed;
      if (causal) {
        const torch::Tensor key_positions = context_parallel_positions(local * n, source, n).to(q.device());
        allowed = positions.unsqueeze(1) >= key_positions.unsqueeze(0);
      }
      // Step 0 is this rank's own block, where every query sees itself: the
      // running max is finite from then on, and a fully masked row adds 0.
      const torch::Tensor s = scores(qf, block[0].to(torch::kFloat), scale, allowed);
      const torch::Tensor new_max = torch::maximum(max, s.amax(-1));
      const torch::Tensor p = torch::exp(s - new_max.unsqueeze(-1));
      const torch::Tensor decay = torch::exp(max - new_max);
      sum = sum * decay + p.sum(-1);
      out = out * decay.unsqueeze(-1) + torch::matmul(p, block[1].to(torch::kFloat));
      max = new_max;
      if (step + 1 < n) {
        group->wait(sent, "ring_attention send");
        group->wait(received, "ring_attention recv");
        std::swap(block, incoming);
      }
    }
    out = out / sum.unsqueeze(-1);
    const torch::Tensor log_sum = max + sum.log();
    ctx->save_for_backward({q, k, v, out, log_sum});
    ctx->saved_data["group"] = reinterpret_cast<int64_t>(group);
    ctx->saved_data["causal"] = causal;
    return out.to(q.scalar_type());
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& q = saved[0];
    ProcessGroup& group = *reinterpret_cast<ProcessGroup*>(ctx->saved_data["group"].toInt());
    const bool causal = ctx->saved_data["causal"].toBool();
    const int64_t n = group.size();
    const int64_t rank = group.rank();
    const int64_t local = q.size(2);
    const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
    const torch::Tensor positions =
        causal ? context_parallel_positions(local * n, rank, n).to(q.device()) : torch::Tensor();
    const torch::Tensor qf = q.to(torch::kFloat);
    const torch::Tensor out = saved[3];
    const torch::Tensor log_sum = saved[4];
    const torch::Tensor d_out = grads[0].to(torch::kFloat);
    const torch::Tensor delta = (d_out * out).sum(-1, /*keepdim=*/true);
    torch::Tensor d_q = torch::zeros_like(qf);
    // [k, v, dk, dv] of one block travel together; the gradients reach the
    // block's owner one step after its last use.
    torch::Tensor block = torch::stack({saved[1].to(torch::kFloat), saved[2].to(torch::kFloat),
                                        torch::zeros_like(qf), torch::zeros_like(qf)})
                              .contiguous();
    torch::Tensor incoming = torch::empty_like(block);
    for (int64_t step = 0; step < n; ++step) {
      const int64_t source = (rank + n - step) % n;
      torch::Tensor allowed;
      if (causal) {
        const torch::Tensor key_positions = context_parallel_positions(local * n, source, n).to(q.device());
        allowed = positions.unsqueeze(1) >= key_positions.unsqueeze(0);
      }
      const torch::Tensor p = torch::exp(scores(qf, block[0], scale, allowed) - log_sum.unsqueeze(-1));
      block[3] += torch::matmul(p.transpose(-2, -1), d_out);
      const torch::Tensor d_s = p * (torch::matmul(d_out, block[1].transpose(-2, -1)) - delta);
      d_q += torch::matmul(d_s, block[0]) * scale;
      block[2] += torch::matmul(d_s.transpose(-2, -1), qf) * scale;
      pass_on(group, block, incoming, static_cast<int>(n + step));
      std::swap(block, incoming);
    }
    // After n passes this rank holds its own block again, with every rank's share of its gradients.
    return {d_q.to(q.scalar_type()), block[2].to(saved[1].scalar_type()), block[3].to(saved[2].scalar_type()),
            torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor context_parallel_positions(int64_t length, int64_t rank, int64_t size) {
  if (length % (2 * size) != 0) {
    throw std::invalid_argument(fmt::format("[context parallel] a sequence of {} tokens cannot be split into 2 x "
                                            "context_parallel_size {} = {} equal chunks",
                                            length, size, 2 * size));
  }
  const int64_t chunk = length / (2 * size);
  return torch::cat({torch::arange(rank * chunk, (rank + 1) * chunk, torch::kLong),
                     torch::arange((2 * size - 1 - rank) * chunk, (2 * size - rank) * chunk, torch::kLong)});
}

torch::Tensor ring_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, ProcessGroup& group,
                             bool causal) {
  if (q.dim() != 4 || k.sizes() != q.sizes() || v.sizes() != q.sizes()) {
    throw std::invalid_argument("[ring_attention] q, k and v must be [batch, heads, tokens, head_dim] of one shape");
  }
  return RingAttention::apply(q, k, v, &group, causal);
}

}  // namespace fulgur
