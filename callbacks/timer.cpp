#include <fulgur/callbacks/timer.hpp>

#include <fulgur/trainer/cli/config_section.hpp>
#include <fulgur/trainer/trainer.hpp>

#include <fmt/format.h>

#include <cmath>
#include <iostream>
#include <stdexcept>

namespace fulgur {
namespace {

const char* const kStageNames[] = {"train", "validate", "test"};

std::string format_seconds(double seconds) {
  const auto total = static_cast<int64_t>(seconds);
  return fmt::format("{:02}:{:02}:{:02}:{:02}", total / 86400, total / 3600 % 24, total / 60 % 60, total % 60);
}

}  // namespace

Timer::Timer(TimerOptions options) : options_(std::move(options)) {
  if (options_.interval() != "step" && options_.interval() != "epoch") {
    throw std::invalid_argument(
        fmt::format("[Timer] interval must be 'step' or 'epoch', got '{}'", options_.interval()));
  }
  if (options_.duration() && !(*options_.duration() > 0.0)) {
    throw std::invalid_argument(fmt::format("[Timer] duration must be positive, got {} s", *options_.duration()));
  }
}

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

std::shared_ptr<Callback> Timer::from_config(cli::ConfigSection& s) {
  TimerOptions o;
  const YAML::Node duration = s.raw("duration", YAML::Node(YAML::NodeType::Null));
  try {
    if (duration.IsScalar()) {
      const std::string text = duration.Scalar();
      if (text.find(':') != std::string::npos) {
        o.duration(parse_duration(text));
      } else {
        size_t used = 0;
        const double seconds = std::stod(text, &used);
        if (used != text.size()) throw std::invalid_argument("");
        o.duration(seconds);
      }
    } else if (duration.IsMap()) {  // {days: 1, hours: 2, minutes: 3, seconds: 4}
      cli::ConfigSection parts(duration, s.dotted("duration"));
      o.duration(((parts.get<double>("days", 0) * 24 + parts.get<double>("hours", 0)) * 60 +
                  parts.get<double>("minutes", 0)) * 60 + parts.get<double>("seconds", 0));
      const auto unread = parts.unread_keys();
      if (!unread.empty()) throw cli::ConfigError(fmt::format("unknown key '{}' (expected days, hours, minutes, seconds)", unread.front()));
    } else if (!duration.IsNull()) {
      throw std::invalid_argument("");
    }
  } catch (const cli::ConfigError&) {
    throw;
  } catch (const std::exception&) {
    YAML::Emitter out;
    out << YAML::Flow << duration;
    s.fail("duration", "seconds, \"DD:HH:MM:SS\" or {days, hours, minutes, seconds}", out.c_str());
  }
  const TimerOptions d;
  o.interval(s.choice("interval", d.interval(), {"step", "epoch"}));
  o.verbose(s.get<bool>("verbose", d.verbose()));
  try {
    return std::make_shared<Timer>(o);
  } catch (const std::invalid_argument& e) {
    throw cli::ConfigError(fmt::format("{}: {}", s.path(), e.what()));
  }
}

void Timer::start(Stage stage) {
  Span& span = spans_[static_cast<int>(stage)];
  span.start = Clock::now();
  span.end.reset();
}

void Timer::stop(Stage stage) { spans_[static_cast<int>(stage)].end = Clock::now(); }

// Validation inside fit counts as validation time, sanity checks count nowhere.
void Timer::on_validation_start(Trainer& trainer, LightningModule&) {
  if (!trainer.sanity_checking()) start(Stage::Validate);
}

void Timer::on_validation_end(Trainer& trainer, LightningModule&) {
  if (!trainer.sanity_checking()) stop(Stage::Validate);
}

double Timer::time_elapsed(Stage stage) const {
  const Span& span = spans_[static_cast<int>(stage)];
  if (!span.start) return span.offset;
  const Clock::time_point end = span.end.value_or(Clock::now());
  return span.offset + std::chrono::duration<double>(end - *span.start).count();
}

std::optional<double> Timer::time_remaining(Stage stage) const {
  if (!options_.duration()) return std::nullopt;
  return *options_.duration() - time_elapsed(stage);
}

CallbackState Timer::state_dict() const {
  CallbackState state;
  for (int i = 0; i < 3; ++i) state[fmt::format("time_elapsed.{}", kStageNames[i])] = time_elapsed(static_cast<Stage>(i));
  return state;
}

void Timer::load_state_dict(const CallbackState& state) {
  for (int i = 0; i < 3; ++i) {
    const auto it = state.find(fmt::format("time_elapsed.{}", kStageNames[i]));
    if (it == state.end()) continue;  // a stage that never ran
    if (!it->second.isDouble()) {
      throw std::runtime_error(fmt::format("[Timer::load_state_dict] time_elapsed.{} is not a number", kStageNames[i]));
    }
    // Training resumes from the saved elapsed time; the clock restarts at the next start.
    spans_[i] = Span{};
    spans_[i].offset = it->second.toDouble();
  }
}

void Timer::on_train_batch_end(Trainer& trainer, LightningModule&, const torch::Tensor&, const Batch&, int64_t) {
  if (options_.interval() == "step") check_time_remaining(trainer);
}

void Timer::on_train_epoch_end(Trainer& trainer, LightningModule&) {
  if (options_.interval() == "epoch") check_time_remaining(trainer);
}

void Timer::check_time_remaining(Trainer& trainer) {
  if (!options_.duration()) return;
  // Clocks differ between processes; rank 0's verdict keeps every rank in step.
  const bool local = time_elapsed(Stage::Train) >= *options_.duration();
  const bool stop = trainer.strategy().broadcast(torch::tensor({local ? 1 : 0}, torch::kInt64), 0).item<int64_t>() != 0;
  if (!stop) return;
  trainer.request_stop();
  if (options_.verbose() && trainer.is_global_zero()) {
    std::cout << "Timer: time limit reached. Elapsed time is " << format_seconds(time_elapsed(Stage::Train))
              << ". Signaling Trainer to stop." << std::endl;
  }
}

}  // namespace fulgur
