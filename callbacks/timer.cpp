#include <fulgur/callbacks/timer.hpp>

#include <fulgur/trainer/trainer.hpp>

#include <fmt/format.h>

#include <cmath>
#include <iostream>
#include <stdexcept>

namespace fulgur {
namespace {

// The stages a Timer clocks, in the order of its spans.
constexpr RunningStage kTimedStages[] = {RunningStage::Train, RunningStage::Validate, RunningStage::Test};

size_t span_index(RunningStage stage) {
  for (size_t i = 0; i < std::size(kTimedStages); ++i) {
    if (kTimedStages[i] == stage) return i;
  }
  throw std::invalid_argument(fmt::format("[Timer] clocks train, validate and test, not {}", to_string(stage)));
}

std::string format_seconds(double seconds) {
  const auto total = static_cast<int64_t>(seconds);
  return fmt::format("{:02}:{:02}:{:02}:{:02}", total / 86400, total / 3600 % 24, total / 60 % 60, total % 60);
}

}  // namespace

Timer::Timer(TimerOptions options) : options_(std::move(options)) { options_.validate(); }

double Timer::parse_duration(const std::string& text) {
  int64_t parts[4];
  size_t position = 0;
  for (int i = 0; i < 4; ++i) {
    const size_t end = i < 3 ? text.find(':', position) : text.size();
    const std::string field = end == std::string::npos ? "" : text.substr(position, end - position);
    size_t used = 0;
    bool ok = !field.empty() && field.find_first_not_of("0123456789") == std::string::npos;
    if (ok) parts[i] = std::stoll(field, &used);
    if (!ok || (i > 0 && parts[i] >= (i == 1 ? 24 : 60)) || (i == 3 && end != text.size())) {
      throw std::invalid_argument(fmt::format(
          "[Timer::parse_duration] expected DD:HH:MM:SS (hours < 24, minutes and seconds < 60), got '{}'", text));
    }
    position = end + 1;
  }
  return static_cast<double>(((parts[0] * 24 + parts[1]) * 60 + parts[2]) * 60 + parts[3]);
}

void Timer::start(RunningStage stage) {
  Span& span = spans_[span_index(stage)];
  span.start = Clock::now();
  span.end.reset();
}

void Timer::stop(RunningStage stage) { spans_[span_index(stage)].end = Clock::now(); }

// Validation inside fit counts as validation time, sanity checks count nowhere.
void Timer::on_validation_start(Trainer& trainer, LightningModule&) {
  if (!trainer.state().sanity_checking()) start(RunningStage::Validate);
}

void Timer::on_validation_end(Trainer& trainer, LightningModule&) {
  if (!trainer.state().sanity_checking()) stop(RunningStage::Validate);
}

double Timer::time_elapsed(RunningStage stage) const {
  const Span& span = spans_[span_index(stage)];
  if (!span.start) return span.offset;
  const Clock::time_point end = span.end.value_or(Clock::now());
  return span.offset + std::chrono::duration<double>(end - *span.start).count();
}

std::optional<double> Timer::time_remaining(RunningStage stage) const {
  if (!options_.duration()) return std::nullopt;
  return *options_.duration() - time_elapsed(stage);
}

CallbackState Timer::state_dict() const {
  CallbackState state;
  for (const RunningStage stage : kTimedStages) state[fmt::format("time_elapsed.{}", to_string(stage))] = time_elapsed(stage);
  return state;
}

void Timer::load_state_dict(const CallbackState& state) {
  for (size_t i = 0; i < std::size(kTimedStages); ++i) {
    const std::string key = fmt::format("time_elapsed.{}", to_string(kTimedStages[i]));
    const auto it = state.find(key);
    if (it == state.end()) continue;  // a stage that never ran
    if (!it->second.isDouble()) throw std::runtime_error(fmt::format("[Timer::load_state_dict] {} is not a number", key));
    // Training resumes from the saved elapsed time; the clock restarts at the next start.
    spans_[i] = Span{};
    spans_[i].offset = it->second.toDouble();
  }
}

void Timer::on_train_batch_end(Trainer& trainer, LightningModule&, const torch::Tensor&, const Batch&,
                               int64_t batch_idx) {
  // With several processes the ranks agree on the Trainer's stop-check schedule, not every step.
  const bool last_batch = batch_idx + 1 == trainer.state().num_training_batches();
  if (options_.interval() == Interval::Step && trainer.state().stop_check_due(last_batch)) {
    check_time_remaining(trainer);
  }
}

void Timer::on_train_epoch_end(Trainer& trainer, LightningModule&) {
  if (options_.interval() == Interval::Epoch) check_time_remaining(trainer);
}

void Timer::check_time_remaining(Trainer& trainer) {
  if (!options_.duration()) return;
  // Clocks differ between processes; rank 0's verdict keeps every rank in step.
  const bool local = time_elapsed(RunningStage::Train) >= *options_.duration();
  const bool stop = trainer.strategy().broadcast(torch::tensor({local ? 1 : 0}, torch::kInt64), 0).item<int64_t>() != 0;
  if (!stop) return;
  trainer.request_stop();
  if (options_.verbose() && trainer.is_global_zero()) {
    std::cout << "Timer: time limit reached. Elapsed time is " << format_seconds(time_elapsed(RunningStage::Train))
              << ". Signaling Trainer to stop." << std::endl;
  }
}

}  // namespace fulgur
