#include "support/callback_test_modules.hpp"
#include "support/test_support.hpp"

#include <doctest/doctest.h>

namespace timer_test {

using namespace fulgur;
using fulgur::testing::MemoryLogger;
using fulgur::testing::quiet_options;
using fulgur::testing::RegressionData;
using fulgur::testing::SlowModule;
using fulgur::testing::TempDir;

TEST_CASE("timer: parses DD:HH:MM:SS and rejects anything else, naming the text") {
  CHECK(Timer::parse_duration("00:00:00:07") == 7.0);
  CHECK(Timer::parse_duration("01:02:03:04") == 93784.0);
  CHECK(Timer::parse_duration("120:00:00:00") == 120.0 * 86400);
  for (const std::string bad : {"", "1:2:3", "00:24:00:00", "00:00:60:00", "00:00:00:5x", "a:b:c:d", "00:00:00:01:00"}) {
    const std::string expected = "got '" + bad + "'";
    CHECK_THROWS_WITH_AS(Timer::parse_duration(bad), doctest::Contains(expected.c_str()), std::invalid_argument);
  }
  CHECK_THROWS_WITH_AS(parse_choice<Interval>("hour"), "must be one of step, epoch, got 'hour'", std::invalid_argument);
  CHECK_THROWS_WITH_AS(Timer(TimerOptions().duration(0)), "[TimerOptions] duration must be > 0, got 0",
                       std::invalid_argument);
}

TEST_CASE("timer: duration stops training cleanly after the step that used it up") {
  TempDir dir("timer-stop");
  SlowModule model(40);
  RegressionData data(10, 2);
  auto timer = std::make_shared<Timer>(TimerOptions().duration(0.3).verbose(false));
  auto logger = std::make_shared<MemoryLogger>(dir.path());
  Trainer trainer(quiet_options(dir.path()).max_epochs(100), {timer}, {logger});
  trainer.fit(model, data);
  // Steps take at least 40 ms, so 0.3 s are used up after at most 8 of them:
  // it stops within the first epoch (10 batches), through the normal end.
  const int64_t steps = trainer.state().global_step();
  CHECK(steps >= 1);
  CHECK(steps <= 8);
  CHECK(trainer.state().current_epoch() == 1);
  CHECK(model.count("on_fit_end") == 1);
  CHECK(logger->statuses == std::vector<std::string>{"success"});
  CHECK(timer->time_elapsed() >= 0.3);
  CHECK(timer->time_elapsed() < 10.0);
  CHECK(*timer->time_remaining() <= 0.0);
  // The sanity check counts nowhere; the epoch's validation never came.
  CHECK(timer->time_elapsed(fulgur::RunningStage::Validate) == 0.0);
}

TEST_CASE("timer: epoch interval finishes the epoch before stopping") {
  TempDir dir("timer-epoch");
  SlowModule model(20);
  RegressionData data(10, 2);
  auto timer = std::make_shared<Timer>(TimerOptions().duration(0.05).interval(Interval::Epoch).verbose(false));
  Trainer trainer(quiet_options(dir.path()).max_epochs(5).logger(false), {timer});
  trainer.fit(model, data);
  CHECK(trainer.state().global_step() == 10);
  CHECK(trainer.state().current_epoch() == 1);
  CHECK(timer->time_elapsed(fulgur::RunningStage::Validate) > 0.0);
  CHECK(timer->time_elapsed(fulgur::RunningStage::Validate) < timer->time_elapsed(fulgur::RunningStage::Train));
  trainer.test(model, data);
  CHECK(timer->time_elapsed(fulgur::RunningStage::Test) > 0.0);
}

TEST_CASE("timer: a restored state continues the same clock") {
  TempDir dir("timer-resume");
  Timer measuring(TimerOptions().verbose(false));
  CHECK_FALSE(measuring.time_remaining().has_value());
  auto state = measuring.state_dict();
  CHECK(state.at("time_elapsed.train").toDouble() == 0.0);
  state["time_elapsed.train"] = 0.26;

  SlowModule model(40);
  RegressionData data(10, 0);
  auto resumed = std::make_shared<Timer>(TimerOptions().duration(0.3).verbose(false));
  resumed->load_state_dict(state);
  CHECK(resumed->time_elapsed() == doctest::Approx(0.26));
  Trainer trainer(quiet_options(dir.path()).max_epochs(100).logger(false), {resumed});
  trainer.fit(model, data);
  // 0.04 s were left: one 40 ms step uses them (two at most, if the clock is coarse).
  CHECK(trainer.state().global_step() >= 1);
  CHECK(trainer.state().global_step() <= 2);
  CHECK(resumed->state_dict().at("time_elapsed.train").toDouble() >= 0.3);
}

}  // namespace timer_test
