#include <fulgur/strategies/collectives/horovod_controller.hpp>

#include <fulgur/strategies/collectives/collective_wait.hpp>
#include <fulgur/strategies/collectives/fusion_buffer.hpp>
#include <fulgur/strategies/collectives/process_group.hpp>
#include <fulgur/strategies/collectives/ring_allreduce.hpp>
#include <fulgur/strategies/collectives/timeline.hpp>

#include <fmt/format.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <stdexcept>

namespace fulgur {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

HorovodController::HorovodController(std::vector<torch::Tensor> parameters, std::vector<std::string> names,
                                     ProcessGroup& group, const HorovodOptions& options,
                                     bool find_unused_parameters, Timeline* timeline)
    : parameters_(std::move(parameters)),
      names_(std::move(names)),
      group_(group),
      options_(options),
      find_unused_parameters_(find_unused_parameters),
      fusion_threshold_bytes_(static_cast<int64_t>(options.fusion_threshold_mb() * (1 << 20))),
      cycle_time_(static_cast<int64_t>(options.cycle_time_ms() * 1000.0)),
      fp16_compression_(options.compression() == HorovodCompression::FP16),
      timeline_(timeline),
      inspector_(options) {
  options_.validate();
  position_.assign(parameters_.size(), -1);
  for (size_t k = parameters_.size(); k-- > 0;) {
    if (!parameters_[k].requires_grad()) continue;
    position_[k] = static_cast<int64_t>(order_.size());
    order_.push_back(k);
  }
  ready_at_.assign(order_.size(), Clock::now());
  std::vector<torch::Tensor> by_position;
  for (size_t k : order_) by_position.push_back(parameters_[k]);
  hooks_.emplace(by_position, [this](size_t pos) { on_gradient_ready(pos); }, "ddp.find_unused_parameters");
  ring_ = std::make_unique<RingAllreduce>(group_, RingAllreduce::Options{.segment_bytes = kSegmentBytes});
  thread_ = std::thread([this] { run(); });
}

HorovodController::~HorovodController() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_requested_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

std::string HorovodController::tensor_name(int64_t running_index) const {
  if (order_.empty()) return "?";
  return names_[order_[static_cast<size_t>(running_index % num_tensors())]];
}

void HorovodController::fail(const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!error_) error_ = message;
  }
  changed_.notify_all();
}

void HorovodController::prepare(bool sync) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (error_) throw std::runtime_error(*error_);
  syncing_ = sync;
  if (!sync) return;
  ++steps_begun_;
  prefix_ = 0;
  hooks_->reset();
  submitted_ = (steps_begun_ - 1) * num_tensors();
}

void HorovodController::on_gradient_ready(size_t pos) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!syncing_ || !hooks_->mark_ready(pos)) return;
  ready_at_[pos] = Clock::now();
  advance_prefix();
}

void HorovodController::advance_prefix() {
  while (prefix_ < num_tensors() && hooks_->is_ready(static_cast<size_t>(prefix_))) ++prefix_;
  submitted_ = (steps_begun_ - 1) * num_tensors() + prefix_;
  // A fully submitted step need not wait out the rest of the cycle.
  if (prefix_ == num_tensors()) changed_.notify_all();
}

void HorovodController::finish() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!syncing_) return;
  syncing_ = false;
  // Parameters that took no part in this step's graph.
  for (int64_t pos = 0; pos < num_tensors(); ++pos) {
    if (hooks_->is_ready(static_cast<size_t>(pos))) continue;
    hooks_->mark_missing(static_cast<size_t>(pos), find_unused_parameters_, "HorovodController::finish",
                         names_[order_[static_cast<size_t>(pos)]], group_.rank());
    ready_at_[static_cast<size_t>(pos)] = Clock::now();
  }
  advance_prefix();
  const int64_t target = steps_begun_ * num_tensors();
  {
    const CollectiveWait::Scope waiting(group_.waits(), "horovod allreduce");
    changed_.wait(lock, [&] { return reduced_ >= target || error_ || thread_done_; });
  }
  if (reduced_ >= target) return;  // done, even if a peer has left since
  if (error_) throw std::runtime_error(*error_);
  {
    throw std::runtime_error(fmt::format("[HorovodController::finish] rank {}: the gradient thread stopped",
                                         group_.rank()));
  }
}

int64_t HorovodController::collectives_last_step() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return collectives_last_step_;
}

void HorovodController::run() {
  const torch::Device device = order_.empty() ? torch::Device(torch::kCPU) : parameters_[order_[0]].device();
  const torch::Device control_device = group_.options().device_type == torch::kCUDA ? device : torch::kCPU;
  Clock::time_point next_cycle = Clock::now();
  // Rank 0's stall report once it has decided to shut down; the decision
  // travels in the next exchange.
  std::optional<std::string> shutdown_report;
  try {
    while (true) {
      int64_t mine = 0;
      bool stopping = false;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        // Sleep out the cycle unless a whole step is ready or we must stop.
        changed_.wait_until(lock, next_cycle, [&] {
          return stop_requested_ || (submitted_ > reduced_ && prefix_ == num_tensors());
        });
        mine = submitted_;
        stopping = stop_requested_;
      }
      next_cycle = std::max(Clock::now(), next_cycle + cycle_time_);

      // Negotiation: every rank's running count, whether it is leaving, and
      // (rank 0 only) whether the run is shut down for a stall.
      const torch::Tensor status =
          torch::tensor({mine, static_cast<int64_t>(stopping), static_cast<int64_t>(shutdown_report.has_value())},
                        torch::kInt64)
              .to(control_device);
      const std::vector<torch::Tensor> all = group_.all_gather(status);
      std::vector<int64_t> counts;
      bool someone_stops = false;
      bool shutdown = false;
      for (const auto& t : all) {
        const torch::Tensor c = t.cpu();
        counts.push_back(c[0].item<int64_t>());
        someone_stops = someone_stops || c[1].item<int64_t>() != 0;
        shutdown = shutdown || c[2].item<int64_t>() != 0;
      }
      // Checked first: a rank that leaves at the same exchange has only torn
      // down early, which must not turn the stall into "another rank left".
      if (shutdown) {
        fail(shutdown_report ? *shutdown_report
                             : fmt::format("[HorovodController] rank {}: rank 0 shut the run down after "
                                           "stall_shutdown_s = {} (a rank stopped submitting gradients; rank 0's "
                                           "[StallInspector] line names it)",
                                           group_.rank(), options_.stall_shutdown_s().value_or(0.0)));
        break;
      }
      if (someone_stops) {
        if (!stopping) fail(fmt::format("[HorovodController] rank {}: another rank left the run", group_.rank()));
        break;
      }
      // Only rank 0 judges stalls: ranks judging alone could decide to stop
      // one cycle apart, leaving the later ones in an all-gather nobody joins.
      if (group_.rank() == 0 && !shutdown_report) {
        const StallInspector::Report report =
            inspector_.check(counts, Clock::now(), [this](int64_t i) { return tensor_name(i); });
        if (report.verdict != StallInspector::Verdict::Ok) std::cerr << report.message << std::endl;
        if (report.verdict == StallInspector::Verdict::Shutdown) shutdown_report = report.message;
      }

      // Reduce everything all ranks have submitted, in fused groups that do
      // not cross a step or the fusion threshold.
      const int64_t agreed = *std::min_element(counts.begin(), counts.end());
      int64_t reduced = 0;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        reduced = reduced_;
      }
      while (reduced < agreed) {
        const int64_t step_end = (reduced / num_tensors() + 1) * num_tensors();
        const int64_t limit = std::min(agreed, step_end);
        int64_t last = reduced + 1;
        int64_t bytes = parameters_[order_[static_cast<size_t>(reduced % num_tensors())]].nbytes();
        while (last < limit) {
          const int64_t more = parameters_[order_[static_cast<size_t>(last % num_tensors())]].nbytes();
          if (bytes + more > fusion_threshold_bytes_) break;
          bytes += more;
          ++last;
        }
        reduce(reduced, last);
        reduced = last;
        {
          std::lock_guard<std::mutex> lock(mutex_);
          reduced_ = reduced;
          ++collectives_this_step_;
          ++collectives_total_;
          if (reduced == step_end) {
            collectives_last_step_ = collectives_this_step_;
            collectives_this_step_ = 0;
          }
        }
        changed_.notify_all();
      }
    }
  } catch (const std::exception& e) {
    fail(fmt::format("[HorovodController] rank {}: {}", group_.rank(), e.what()));
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    thread_done_ = true;
  }
  changed_.notify_all();
}

void HorovodController::reduce(int64_t first, int64_t last) {
  std::vector<torch::Tensor> params;
  Clock::time_point queued = Clock::now();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (int64_t i = first; i < last; ++i) {
      const size_t pos = static_cast<size_t>(i % num_tensors());
      params.push_back(parameters_[order_[pos]]);
      queued = std::min(queued, ready_at_[pos]);
    }
  }
  const int64_t id = collectives_total_;
  const std::string what = last - first == 1 ? tensor_name(first)
                                             : fmt::format("{} .. {} ({} tensors)", tensor_name(first),
                                                           tensor_name(last - 1), last - first);
  torch::NoGradGuard no_grad;
  const Clock::time_point copy_in = Clock::now();
  const double n = static_cast<double>(group_.size());
  std::vector<torch::Tensor> grads;
  for (auto& p : params) {
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
    grads.push_back(p.grad());
  }
  const torch::ScalarType wire = fp16_compression_ ? torch::kFloat16 : grads.front().scalar_type();
  if (!fusion_ || fusion_->wire_type() != wire) fusion_ = std::make_unique<FusionBuffer>(wire, grads.front().device());
  // float16 is summed on the wire, so the average is taken before the cast.
  torch::Tensor buffer = fusion_->pack(grads, fp16_compression_ ? 1.0 / n : 1.0);
  const ReduceOp op = fp16_compression_ ? ReduceOp::Sum : ReduceOp::Mean;
  const Clock::time_point reducing = Clock::now();
  if (timeline_) {
    timeline_->record("QUEUE", id, what, buffer.nbytes(), queued, copy_in);
    timeline_->record("COPY_IN", id, what, buffer.nbytes(), copy_in, reducing);
  }
  if (buffer.is_cuda()) {
    // On GPUs NCCL's allreduce is itself a ring.
    group_.all_reduce(buffer, op);
    if (timeline_) timeline_->record("NCCL_ALLREDUCE", id, what, buffer.nbytes(), reducing, Clock::now());
  } else {
    ring_->run(buffer, op, [&](const std::string& phase, Clock::time_point start, Clock::time_point end) {
      if (timeline_) timeline_->record(phase == "reduce_scatter" ? "REDUCE_SCATTER" : "ALL_GATHER", id, what,
                                       buffer.nbytes(), start, end);
    });
  }
  const Clock::time_point copy_out = Clock::now();
  fusion_->unpack(grads);
  if (timeline_) timeline_->record("COPY_OUT", id, what, buffer.nbytes(), copy_out, Clock::now());
}

}  // namespace fulgur
