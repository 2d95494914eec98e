// The one exception path: a failure anywhere in a run tells every callback
// (on_exception, then teardown), finalizes the loggers as "failed" and
// reaches the caller unchanged.
#include "support/callback_test_modules.hpp"
#include "support/test_support.hpp"

#include <doctest/doctest.h>

namespace exception_path_test {

using namespace fulgur;
using fulgur::testing::FailingModule;
using fulgur::testing::MemoryLogger;
using fulgur::testing::quiet_options;
using fulgur::testing::RecordingModule;
using fulgur::testing::RegressionData;
using fulgur::testing::TempDir;

namespace {

class EventCallback : public Callback {
 public:
  std::string state_key() const override { return "EventCallback"; }
  void setup(Trainer&, LightningModule&) override { events.push_back("setup"); }
  void on_train_end(Trainer&, LightningModule&) override { events.push_back("on_train_end"); }
  void on_exception(Trainer& trainer, LightningModule&, const std::exception_ptr& error) override {
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      events.push_back(std::string("on_exception: ") + e.what());
    }
    step_at_exception = trainer.state().global_step();
  }
  void teardown(Trainer&, LightningModule&) override { events.push_back("teardown"); }
  std::vector<std::string> events;
  int64_t step_at_exception = -1;
};

}  // namespace

TEST_CASE("exception path: a failing training_step reaches on_exception, teardown and the loggers") {
  TempDir dir("exception-path");
  FailingModule model(2, "boom at step 2");
  RegressionData data(5, 2);
  auto events = std::make_shared<EventCallback>();
  auto logger = std::make_shared<MemoryLogger>(dir.path());
  Trainer trainer(quiet_options(dir.path()).max_epochs(3), {events}, {logger});
  CHECK_THROWS_WITH_AS(trainer.fit(model, data), "boom at step 2", std::runtime_error);
  CHECK(events->events == std::vector<std::string>{"setup", "on_exception: boom at step 2", "teardown"});
  CHECK(events->step_at_exception == 2);
  CHECK(logger->statuses == std::vector<std::string>{"failed"});
  CHECK_FALSE(trainer.state().stage().has_value());

  // The same trainer runs again afterwards, and a success is reported as such.
  RecordingModule healthy;
  trainer.validate(healthy, data);
  CHECK(logger->statuses == std::vector<std::string>{"failed", "success"});
}

TEST_CASE("exception path: an error raised by a callback takes the same path") {
  TempDir dir("exception-callback");
  RecordingModule model;
  RegressionData data(3, 2);
  auto events = std::make_shared<EventCallback>();
  auto logger = std::make_shared<MemoryLogger>(dir.path());
  // val_acc is never logged: strict EarlyStopping fails at the first check.
  Trainer trainer(quiet_options(dir.path()).max_epochs(3),
                  {events, std::make_shared<EarlyStopping>(EarlyStoppingOptions("val_acc"))}, {logger});
  CHECK_THROWS_AS(trainer.fit(model, data), std::runtime_error);
  REQUIRE(events->events.size() == 3);
  CHECK(events->events[1].rfind("on_exception: [EarlyStopping] early stopping conditioned on metric 'val_acc'", 0) == 0);
  CHECK(events->events[2] == "teardown");
  CHECK(logger->statuses == std::vector<std::string>{"failed"});
}

TEST_CASE("exception path: the CSV logger of a failed run keeps what was logged") {
  TempDir dir("exception-csv");
  FailingModule model(2, "boom at step 2");
  RegressionData data(5, 2);
  Trainer trainer(quiet_options(dir.path()).max_epochs(3).log_every_n_steps(1));
  CHECK_THROWS(trainer.fit(model, data));
  const std::string csv = fulgur::testing::read_file(dir.path() / "fulgur_logs" / "version_0" / "metrics.csv");
  CHECK(csv.rfind("epoch,step,train_loss\n", 0) == 0);
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 3);  // header + steps 0 and 1
}

}  // namespace exception_path_test
