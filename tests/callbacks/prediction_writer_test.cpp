// PredictionWriter: predict_step's outputs written at the end (one tensor)
// and after each batch, from a program's own main() as from the CLI
// (example_cinic10_test reads the CLI's predictions.pt back in Python).
#include "support/pickled_tensor.hpp"
#include "support/test_support.hpp"
#include "support/tiny_modules.hpp"

#include <fulgur/fulgur.hpp>

#include <doctest/doctest.h>

namespace prediction_writer_test {

using namespace fulgur;
using fulgur::testing::quiet_options;
using fulgur::testing::TempDir;

TEST_CASE("PredictionWriter: predictions.pt holds every batch joined; batch files hold each batch") {
  TempDir dir("prediction-writer");
  testing::RegressionData data(2, 3);
  testing::RecordingModule model;
  auto writer = std::make_shared<PredictionWriter>(PredictionWriterOptions().write_interval(WriteInterval::BatchAndEpoch));
  Trainer trainer(quiet_options(dir.path()), {writer});
  const auto outputs = trainer.predict(model, data);
  REQUIRE(outputs.size() == 3);
  const auto run = dir.path() / "fulgur_logs" / "version_0";
  CHECK(writer->last_file() == run / "predictions.pt");
  CHECK(torch::equal(testing::load_pickled_tensor(run / "predictions.pt"), torch::cat(outputs)));
  for (size_t i = 0; i < outputs.size(); ++i) {
    CHECK(torch::equal(testing::load_pickled_tensor(run / "predictions" / ("batch_" + std::to_string(i) + ".pt")),
                       outputs[i]));
  }
  CHECK_THROWS_WITH_AS(parse_choice<WriteInterval>("step"), "must be one of batch, epoch, batch_and_epoch, got 'step'",
                       std::invalid_argument);
}

}  // namespace prediction_writer_test
