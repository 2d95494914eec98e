#include <fulgur/strategies/pipeline/pipeline_schedule.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <limits>
#include <stdexcept>

namespace fulgur {
namespace {

using Kind = PipelineAction::Kind;

}  // namespace

std::string to_string(const PipelineAction& action) {
  const char* kind = action.kind == Kind::Forward          ? "F"
                     : action.kind == Kind::Backward       ? "B"
                     : action.kind == Kind::BackwardInput  ? "I"
                                                           : "W";
  return fmt::format("{}{}.{}", kind, action.stage, action.microbatch);
}

PipelineSchedule::PipelineSchedule(PipelineScheduleKind kind, int64_t ranks, int64_t microbatches, int64_t virtual_stages)
    : kind_(kind),
      ranks_(ranks),
      microbatches_(microbatches),
      virtual_(kind == PipelineScheduleKind::Interleaved1F1B ? virtual_stages : 1),
      actions_(static_cast<size_t>(ranks)) {
  if (ranks < 1 || microbatches < 1 || virtual_ < 1) {
    throw std::invalid_argument(fmt::format("[PipelineSchedule] ranks {}, microbatches {} and virtual_stages {} must be >= 1",
                                            ranks, microbatches, virtual_));
  }
  switch (kind) {
    case PipelineScheduleKind::GPipe: build_gpipe(); break;
    case PipelineScheduleKind::OneFOneB: build_1f1b(); break;
    case PipelineScheduleKind::Interleaved1F1B: build_interleaved(); break;
    case PipelineScheduleKind::ZeroBubble: build_zero_bubble(); break;
  }
}

std::vector<int64_t> PipelineSchedule::stages_of(int64_t rank) const {
  std::vector<int64_t> stages;
  for (int64_t chunk = 0; chunk < virtual_; ++chunk) stages.push_back(chunk * ranks_ + rank);
  return stages;
}

std::vector<PipelineAction> PipelineSchedule::forward_actions(int64_t rank) const {
  // Micro-batch by micro-batch, each through this rank's stages in order:
  // every forward's input comes from an earlier rank or an earlier pass here.
  std::vector<PipelineAction> out;
  for (int64_t i = 0; i < microbatches_; ++i) {
    for (int64_t stage : stages_of(rank)) out.push_back({Kind::Forward, stage, i});
  }
  return out;
}

void PipelineSchedule::build_gpipe() {
  for (int64_t r = 0; r < ranks_; ++r) {
    auto& list = actions_[static_cast<size_t>(r)];
    for (int64_t i = 0; i < microbatches_; ++i) list.push_back({Kind::Forward, r, i});
    for (int64_t i = 0; i < microbatches_; ++i) list.push_back({Kind::Backward, r, i});
  }
}

void PipelineSchedule::build_1f1b() {
  // Warm up with as many forwards as stages after this one, then one
  // forward, one backward: a rank holds at most ranks - rank micro-batches.
  for (int64_t r = 0; r < ranks_; ++r) {
    auto& list = actions_[static_cast<size_t>(r)];
    const int64_t warmup = std::min(ranks_ - 1 - r, microbatches_);
    for (int64_t i = 0; i < warmup; ++i) list.push_back({Kind::Forward, r, i});
    for (int64_t i = warmup; i < microbatches_; ++i) {
      list.push_back({Kind::Forward, r, i});
      list.push_back({Kind::Backward, r, i - warmup});
    }
    for (int64_t i = microbatches_ - warmup; i < microbatches_; ++i) list.push_back({Kind::Backward, r, i});
  }
}

void PipelineSchedule::build_interleaved() {
  // Megatron-LM's order: micro-batches go round in groups of `ranks`, each
  // group through chunk 0, then chunk 1, ...; backwards through the chunks
  // in reverse. The longer warm-up lets the first backward's gradient arrive.
  if (microbatches_ % ranks_ != 0) {
    throw std::invalid_argument(fmt::format(
        "[PipelineSchedule] interleaved_1f1b needs microbatches ({}) to be a multiple of pipeline_parallel_size ({})",
        microbatches_, ranks_));
  }
  const int64_t total = microbatches_ * virtual_;
  const int64_t round = ranks_ * virtual_;
  auto forward = [&](int64_t r, int64_t k) {
    const int64_t chunk = (k % round) / ranks_;
    return PipelineAction{Kind::Forward, chunk * ranks_ + r, (k / round) * ranks_ + k % ranks_};
  };
  auto backward = [&](int64_t r, int64_t k) {
    const int64_t chunk = virtual_ - 1 - (k % round) / ranks_;
    return PipelineAction{Kind::Backward, chunk * ranks_ + r, (k / round) * ranks_ + k % ranks_};
  };
  for (int64_t r = 0; r < ranks_; ++r) {
    auto& list = actions_[static_cast<size_t>(r)];
    const int64_t warmup = std::min((ranks_ - r - 1) * 2 + (virtual_ - 1) * ranks_, total);
    for (int64_t k = 0; k < warmup; ++k) list.push_back(forward(r, k));
    for (int64_t k = 0; k < total - warmup; ++k) {
      list.push_back(forward(r, warmup + k));
      list.push_back(backward(r, k));
    }
    for (int64_t k = total - warmup; k < total; ++k) list.push_back(backward(r, k));
  }
}

void PipelineSchedule::build_zero_bubble() {
  // ZB-H1 (Qi et al., 2023), found by running the pipeline in unit time
  // steps: a free rank takes an input gradient when one is ready (a rank
  // before it waits for it), else a forward while fewer than ranks - rank
  // micro-batches await their input gradient (1f1b's bound), else a weight
  // gradient, which nothing waits for and so fills what would be idle. At
  // most `ranks` weight gradients wait: their inputs are held meanwhile.
  const int64_t p = ranks_, m = microbatches_;
  constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
  std::vector<std::vector<int64_t>> forward_end(static_cast<size_t>(p), std::vector<int64_t>(static_cast<size_t>(m), kNever));
  auto input_end = forward_end;
  std::vector<int64_t> next_forward(static_cast<size_t>(p), 0), next_input(static_cast<size_t>(p), 0);
  std::vector<std::deque<int64_t>> weights(static_cast<size_t>(p));
  int64_t remaining = 3 * p * m;
  for (int64_t t = 0; remaining > 0; ++t) {
    if (t > 3 * p * m * (p + 1)) throw std::logic_error("[PipelineSchedule] zero_bubble: no order found");
    for (int64_t r = 0; r < p; ++r) {
      const auto ri = static_cast<size_t>(r);
      auto& list = actions_[ri];
      const int64_t f = next_forward[ri], b = next_input[ri];
      const bool input_ready = b < f && forward_end[ri][static_cast<size_t>(b)] <= t &&
                               (r == p - 1 || input_end[ri + 1][static_cast<size_t>(b)] <= t);
      const bool forward_ready = f < m && f - b < p - r && (r == 0 || forward_end[ri - 1][static_cast<size_t>(f)] <= t);
      if (static_cast<int64_t>(weights[ri].size()) > p) {
        list.push_back({Kind::BackwardWeight, r, weights[ri].front()});
        weights[ri].pop_front();
      } else if (input_ready) {
        list.push_back({Kind::BackwardInput, r, b});
        input_end[ri][static_cast<size_t>(b)] = t + 1;
        weights[ri].push_back(b);
        ++next_input[ri];
      } else if (forward_ready) {
        list.push_back({Kind::Forward, r, f});
        forward_end[ri][static_cast<size_t>(f)] = t + 1;
        ++next_forward[ri];
      } else if (!weights[ri].empty()) {
        list.push_back({Kind::BackwardWeight, r, weights[ri].front()});
        weights[ri].pop_front();
      } else {
        continue;
      }
      --remaining;
    }
  }
}

PipelineSchedule::Simulation PipelineSchedule::simulate(double forward, double backward_input,
                                                        double backward_weight) const {
  const int64_t S = stages(), m = microbatches_;
  constexpr double kUnknown = -1;
  std::vector<std::vector<double>> forward_end(static_cast<size_t>(S), std::vector<double>(static_cast<size_t>(m), kUnknown));
  auto input_end = forward_end;
  std::vector<size_t> next(static_cast<size_t>(ranks_), 0);
  std::vector<double> free_at(static_cast<size_t>(ranks_), 0), busy(static_cast<size_t>(ranks_), 0);
  Simulation result;
  result.peak_in_flight.assign(static_cast<size_t>(ranks_), 0);
  std::vector<int64_t> held(static_cast<size_t>(ranks_), 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int64_t r = 0; r < ranks_; ++r) {
      const auto ri = static_cast<size_t>(r);
      const auto& list = actions_[ri];
      while (next[ri] < list.size()) {
        const PipelineAction& a = list[next[ri]];
        const auto s = static_cast<size_t>(a.stage), i = static_cast<size_t>(a.microbatch);
        double ready = 0, duration = forward;
        if (a.kind == Kind::Forward) {
          ready = a.stage == 0 ? 0 : forward_end[s - 1][i];
        } else if (a.kind == Kind::BackwardWeight) {
          ready = input_end[s][i];
          duration = backward_weight;
        } else {
          const double after = a.stage == S - 1 ? forward_end[s][i] : input_end[s + 1][i];
          ready = forward_end[s][i] < 0 ? kUnknown : after;
          duration = a.kind == Kind::Backward ? backward_input + backward_weight : backward_input;
        }
        if (ready < 0) break;
        const double end = std::max(free_at[ri], ready) + duration;
        if (a.kind == Kind::Forward) forward_end[s][i] = end;
        if (a.kind == Kind::Backward || a.kind == Kind::BackwardInput) input_end[s][i] = end;
        // Activations are held from the forward until the weight gradient is taken.
        held[ri] += a.kind == Kind::Forward ? 1 : a.kind == Kind::BackwardInput ? 0 : -1;
        result.peak_in_flight[ri] = std::max(result.peak_in_flight[ri], held[ri]);
        free_at[ri] = end;
        busy[ri] += duration;
        ++next[ri];
        progress = true;
      }
    }
  }
  for (int64_t r = 0; r < ranks_; ++r) {
    const auto ri = static_cast<size_t>(r);
    if (next[ri] < actions_[ri].size()) {
      throw std::logic_error(fmt::format("[PipelineSchedule] rank {} waits forever at {} (pass {} of {})", r,
                                         to_string(actions_[ri][next[ri]]), next[ri], actions_[ri].size()));
    }
  }
  result.step_time = *std::max_element(free_at.begin(), free_at.end());
  for (double b : busy) result.bubble += (1.0 - b / result.step_time) / static_cast<double>(ranks_);
  return result;
}

double PipelineSchedule::expected_bubble() const {
  const auto p = static_cast<double>(ranks_), m = static_cast<double>(microbatches_), v = static_cast<double>(virtual_);
  switch (kind_) {
    case PipelineScheduleKind::Interleaved1F1B: return (p - 1) / (v * m + p - 1);
    case PipelineScheduleKind::ZeroBubble: return (p - 1) / (3 * m + p - 1);
    default: return (p - 1) / (m + p - 1);
  }
}

}  // namespace fulgur
