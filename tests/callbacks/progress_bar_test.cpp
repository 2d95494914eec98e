#include "support/callback_test_modules.hpp"
#include "support/test_support.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <sstream>

namespace progress_bar_test {

using namespace fulgur;
using fulgur::testing::quiet_options;
using fulgur::testing::RecordingModule;
using fulgur::testing::RegressionData;
using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {

/// Trains with a ProgressBar writing into a temporary file; returns its text.
std::string bar_output(ProgressBarOptions options, int64_t train_batches, int64_t epochs) {
  TempDir dir("progress-bar");
  std::FILE* file = std::tmpfile();
  REQUIRE(file != nullptr);
  RecordingModule model;
  RegressionData data(train_batches, 2);
  Trainer trainer(quiet_options(dir.path()).max_epochs(epochs).logger(false),
                  {std::make_shared<ProgressBar>(options, file)});
  trainer.fit(model, data);
  std::rewind(file);
  std::string text;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, file)) > 0;) text.append(buffer, n);
  std::fclose(file);
  return text;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

TEST_CASE("progress bar: not a terminal, one plain line every N steps and one per epoch") {
  const std::string text = bar_output(ProgressBarOptions().interactive(false).line_every_n_steps(3), 10, 2);
  const auto lines = lines_of(text);
  // Batches 3, 6, 9 and the epoch's end, for each of 2 epochs.
  REQUIRE(lines.size() == 8);
  CHECK(lines[0].rfind("Epoch 0/1: 3/10 [", 0) == 0);
  CHECK(lines[3].rfind("Epoch 0/1: 10/10 [", 0) == 0);
  CHECK(lines[7].rfind("Epoch 1/1: 10/10 [", 0) == 0);
  CHECK(lines[3].find(" it/s]") != std::string::npos);
  CHECK(text.find('\r') == std::string::npos);
  CHECK(text.find("\x1b[") == std::string::npos);
}

TEST_CASE("progress bar: on a terminal, one line redrawn in place with bar, ETA and metrics") {
  const std::string text = bar_output(ProgressBarOptions().interactive(true), 10, 1);
  CHECK(text.find('\r') != std::string::npos);
  CHECK(text.find("\x1b[K") != std::string::npos);
  // The final state of the line, after the last carriage return.
  const std::string last = text.substr(text.rfind('\r') + 1);
  CHECK(last.rfind("Epoch 0/0: 100%|####################| 10/10 [00:00<00:00, ", 0) == 0);
  CHECK(last.find(" it/s]") != std::string::npos);
  CHECK(last.back() == '\n');
}

TEST_CASE("progress bar: the example under a real pseudo-terminal draws a live bar with prog_bar metrics") {
  TempDir dir("progress-bar-pty");
  // Python's pty module gives the binary a real terminal as stdout.
  const std::string command = std::string(FULGUR_PYTHON) +
                              " -c \"import pty, sys; sys.exit(pty.spawn(sys.argv[1:]) >> 8)\" " + FULGUR_BINARY_DIR +
                              "/bin/cinic10 fit --config " + FULGUR_SOURCE_DIR +
                              "/examples/cinic10/digits.yaml --data.root " + FULGUR_SOURCE_DIR +
                              "/data/digits-cinic --trainer.max_epochs 1 --test_after_fit false "
                              "--trainer.default_root_dir " +
                              dir.path().string();
  const auto result = run_command(command, 300);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  // Redrawn in place: carriage return, the line, clear to its end (a pty's
  // own line ends are \r\n, so count the redraws rather than any \r).
  size_t redraws = 0;
  for (size_t at = 0; (at = result.output.find("\rEpoch 0/0: ", at)) != std::string::npos; ++at) ++redraws;
  CHECK(redraws >= 2);
  CHECK(result.output.find("\x1b[K") != std::string::npos);
  CHECK(result.output.find("Epoch 0/0: 100%|####################| 40/40 [") != std::string::npos);
  CHECK(result.output.find(" it/s] train_loss=") != std::string::npos);
  CHECK(result.output.find("val_acc=") != std::string::npos);
  // Without a terminal the same run prints plain lines only.
  const auto piped = run_command(command.substr(command.find(FULGUR_BINARY_DIR)), 300);
  REQUIRE(piped.exit_code == 0);
  CHECK(piped.output.find('\r') == std::string::npos);
  CHECK(piped.output.find("Epoch 0/0: 40/40 [") != std::string::npos);
}

TEST_CASE("progress bar: invalid rates are named") {
  CHECK_THROWS_WITH_AS(ProgressBar(ProgressBarOptions().line_every_n_steps(0)),
                       "[ProgressBarOptions] line_every_n_steps must be >= 1, got 0", std::invalid_argument);
}

}  // namespace progress_bar_test
