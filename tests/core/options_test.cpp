// Options declared once (core/options.hpp): the checks, the YAML reader
// and writer, and the README's tables all come from one declaration.
#include "support/test_support.hpp"

#include <fulgur/callbacks/device_stats_monitor.hpp>
#include <fulgur/callbacks/early_stopping.hpp>
#include <fulgur/callbacks/ema_weight_averaging.hpp>
#include <fulgur/loggers/wandb_logger.hpp>
#include <fulgur/callbacks/lr_finder.hpp>
#include <fulgur/callbacks/scale_batch_size_options.hpp>
#include <fulgur/callbacks/stochastic_weight_averaging.hpp>
#include <fulgur/callbacks/gradient_accumulation_scheduler.hpp>
#include <fulgur/callbacks/learning_rate_monitor.hpp>
#include <fulgur/callbacks/on_exception_checkpoint.hpp>
#include <fulgur/callbacks/throughput_monitor.hpp>
#include <fulgur/callbacks/timer.hpp>
#include <fulgur/datamodules/datasets/cifar10.hpp>
#include <fulgur/datamodules/datasets/cinic10.hpp>
#include <fulgur/datamodules/datasets/imagenet.hpp>
#include <fulgur/trainer/cli/callback_registry.hpp>
#include <fulgur/trainer/cli/options_yaml.hpp>
#include <fulgur/callbacks/model_checkpoint.hpp>
#include <fulgur/callbacks/model_summary.hpp>
#include <fulgur/callbacks/progress_bar.hpp>
#include <fulgur/trainer/trainer_options.hpp>

#include "../../examples/cinic10/lit_classifier.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <string>

namespace options_test {

using fulgur::testing::read_file;

namespace {

// clang-format off
#define SAMPLE_OPTIONS(X)                                                                    \
  X(int64_t, epochs, 3, "epochs", fulgur::check::AtLeast{0})                                 \
  X(std::optional<double>, clip, std::nullopt, "clip", fulgur::check::Positive{})            \
  X(std::string, mode, "min", "min or max", (fulgur::check::OneOf{{"min", "max"}}))          \
  X(fulgur::StrategyKind, strategy, fulgur::StrategyKind::Auto, "strategy", fulgur::check::Any{}) \
  X(std::vector<int64_t>, sizes, {}, "sizes", fulgur::check::Any{})                          \
  X(fulgur::DDPOptions, ddp, {}, "ddp", fulgur::check::Any{})
// clang-format on
struct SampleOptions {
  FULGUR_OPTIONS(SampleOptions, SAMPLE_OPTIONS)
};

SampleOptions read(const std::string& yaml) {
  fulgur::cli::ConfigSection section(YAML::Load(yaml), "model");
  return fulgur::cli::read_options<SampleOptions>(section);
}

std::string message_of(const std::string& yaml) {
  try {
    read(yaml);
  } catch (const fulgur::cli::ConfigError& e) {
    return e.what();
  }
  return "no error";
}

// The rows between "<!-- options: NAME -->" and "<!-- end options -->", after
// the header, in the README or a page of docs/.
std::string readme_table(const std::string& name) {
  const std::filesystem::path source(FULGUR_SOURCE_DIR);
  std::string readme = read_file(source / "README.md");
  for (const auto& page : std::filesystem::directory_iterator(source / "docs")) {
    if (page.path().extension() == ".md") readme += read_file(page.path());
  }
  const std::string open = "<!-- options: " + name + " -->\n| option | default | meaning |\n|---|---|---|\n";
  const auto begin = readme.find(open);
  if (begin == std::string::npos) return "no table for " + name;
  const auto end = readme.find("<!-- end options -->", begin);
  return readme.substr(begin + open.size(), end - begin - open.size());
}

}  // namespace

TEST_CASE("options: declared checks, defaults and the YAML reader name the key") {
  const SampleOptions defaults;
  CHECK(defaults.epochs() == 3);
  CHECK(defaults.mode() == "min");
  CHECK(defaults.ddp().bucket_cap_mb() == 25.0);
  CHECK_THROWS_WITH_AS(SampleOptions().epochs(-1).validate(), "[SampleOptions] epochs must be >= 0, got -1",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(SampleOptions().ddp(fulgur::DDPOptions().bucket_cap_mb(0)).validate(),
                       "[DDPOptions] bucket_cap_mb must be > 0, got 0", std::invalid_argument);

  const SampleOptions read_back =
      read("{epochs: 5, clip: 0.5, strategy: horovod, sizes: [1, 2], ddp: {bucket_cap_mb: 2}}");
  CHECK(read_back.epochs() == 5);
  CHECK(read_back.clip() == 0.5);
  CHECK(read_back.strategy() == fulgur::StrategyKind::Horovod);
  CHECK(read_back.sizes() == std::vector<int64_t>{1, 2});
  CHECK(read_back.ddp().bucket_cap_mb() == 2.0);
  CHECK(read_back.ddp().broadcast_buffers());  // untouched fields keep their default

  CHECK(message_of("{mode: mid}") == "model.mode: must be one of min, max, got mid; did you mean 'min'?");
  CHECK(message_of("{clip: -1}") == "model.clip: must be > 0, got -1");
  CHECK(message_of("{epochs: many}") == "model.epochs: expected an integer, got 'many'");
  CHECK(message_of("{clip: big}") == "model.clip: expected a number or null, got 'big'");
  CHECK(message_of("{strategy: deepspeed}") ==
        "model.strategy: must be one of auto, single_device, ddp, horovod, fsdp, model_parallel, got 'deepspeed'");
  CHECK(message_of("{strategy: fsdb}") ==
        "model.strategy: must be one of auto, single_device, ddp, horovod, fsdp, model_parallel, got 'fsdb'; did you mean 'fsdp'?");
  CHECK(message_of("{ddp: {bucket_cap_mb: -2}}") == "model.ddp.bucket_cap_mb: must be > 0, got -2");
  CHECK(message_of("{ddp: {bucket_cap: 2}}") ==
        "unknown key 'model.ddp.bucket_cap'; did you mean 'model.ddp.bucket_cap_mb'?");
  CHECK(message_of("{epoch: 2}") == "unknown key 'model.epoch'; did you mean 'model.epochs'?");
  CHECK(message_of("{learning_rate: 2}") == "unknown key 'model.learning_rate'");  // nothing close

  // Written back, the same options read the same.
  YAML::Emitter out;
  out << fulgur::cli::to_yaml(read_back);
  const SampleOptions again = read(out.c_str());
  CHECK(again.clip() == 0.5);
  CHECK(again.strategy() == fulgur::StrategyKind::Horovod);
  CHECK(again.ddp().bucket_cap_mb() == 2.0);
}

TEST_CASE("options: a choice is an enum; YAML takes its name or an alias, a typo names the key and the choices") {
  const auto read_trainer = [](const std::string& yaml) {
    fulgur::cli::ConfigSection section(YAML::Load(yaml), "trainer");
    return fulgur::cli::read_options<fulgur::TrainerOptions>(section);
  };
  const auto trainer_error = [&](const std::string& yaml) -> std::string {
    try {
      read_trainer(yaml);
    } catch (const fulgur::cli::ConfigError& e) {
      return e.what();
    }
    return "no error";
  };
  const auto named = read_trainer(
      "{precision: bf16-mixed, accelerator: gpu, profiler: simple, fsdp: {sharding_strategy: HYBRID_SHARD}}");
  CHECK(named.precision() == fulgur::PrecisionMode::BF16Mixed);
  CHECK(named.accelerator() == fulgur::AcceleratorKind::Cuda);
  CHECK(named.profiler() == fulgur::ProfilerKind::Simple);
  CHECK(named.fsdp().sharding_strategy() == fulgur::ShardingStrategy::HybridShard);
  const auto aliased = read_trainer("{precision: 32, accelerator: cuda, profiler: null}");
  CHECK(aliased.precision() == fulgur::PrecisionMode::Full32);
  CHECK(aliased.accelerator() == fulgur::AcceleratorKind::Cuda);
  CHECK_FALSE(aliased.profiler().has_value());

  CHECK(trainer_error("{precision: bf16-mixd}") ==
        "trainer.precision: must be one of 32-true, bf16-mixed, 16-mixed, got 'bf16-mixd'; did you mean 'bf16-mixed'?");
  // Lightning's short spellings 16 and bf16 are its 16-mixed and bf16-mixed.
  CHECK(read_trainer("{precision: 16}").precision() == fulgur::PrecisionMode::FP16Mixed);
  CHECK(read_trainer("{precision: bf16}").precision() == fulgur::PrecisionMode::BF16Mixed);
  CHECK(fulgur::to_string(read_trainer("{precision: bf16}").precision()) == "bf16-mixed");
  CHECK(trainer_error("{precision: bf61}") ==
        "trainer.precision: must be one of 32-true, bf16-mixed, 16-mixed, got 'bf61'; did you mean 'bf16'?");
  CHECK(trainer_error("{precision: 16-mixd}") ==
        "trainer.precision: must be one of 32-true, bf16-mixed, 16-mixed, got '16-mixd'; did you mean '16-mixed'?");
  CHECK(trainer_error("{profiler: simpel}") ==
        "trainer.profiler: must be one of simple, pytorch, got 'simpel'; did you mean 'simple'?");
  CHECK(trainer_error("{fsdp: {sharding_strategy: FULL_SHRAD}}") ==
        "trainer.fsdp.sharding_strategy: must be one of FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD, got "
        "'FULL_SHRAD'; did you mean 'FULL_SHARD'?");

  // Written back (hparams.yaml, --print_config): the canonical name, never the alias.
  const YAML::Node written = fulgur::cli::to_yaml(aliased);
  CHECK(written["precision"].Scalar() == "32-true");
  CHECK(written["accelerator"].Scalar() == "gpu");
  CHECK(written["profiler"].IsNull());
  CHECK(fulgur::cli::to_yaml(named)["fsdp"]["sharding_strategy"].Scalar() == "HYBRID_SHARD");
  CHECK(fulgur::to_string(fulgur::MonitorMode::Max) == "max");
  CHECK(fulgur::parse_choice<fulgur::MonitorMode>("max") == fulgur::MonitorMode::Max);
}

template <class Options>
void check_readme_table() {
  const std::string expected = fulgur::cli::options_table(Options());
  INFO("The " << Options::options_name << " table in README.md or docs/ should read:\n" << expected);
  CHECK(readme_table(Options::options_name) == expected);
}

TEST_CASE("options: the option tables of README.md and docs/ are the declarations") {
  check_readme_table<fulgur::TrainerOptions>();
  check_readme_table<fulgur::EarlyStoppingOptions>();
  check_readme_table<fulgur::ModelCheckpointOptions>();
  check_readme_table<fulgur::TimerOptions>();
  check_readme_table<fulgur::EMAWeightAveragingOptions>();
  check_readme_table<fulgur::StochasticWeightAveragingOptions>();
  check_readme_table<fulgur::WandbLoggerOptions>();
  check_readme_table<fulgur::LRFinderOptions>();
  check_readme_table<fulgur::ScaleBatchSizeOptions>();
  check_readme_table<fulgur::LearningRateMonitorOptions>();
  check_readme_table<fulgur::GradientAccumulationSchedulerOptions>();
  check_readme_table<fulgur::ProgressBarOptions>();
  check_readme_table<fulgur::ModelSummaryOptions>();
  check_readme_table<fulgur::ThroughputMonitorOptions>();
  check_readme_table<fulgur::DeviceStatsMonitorOptions>();
  check_readme_table<fulgur::OnExceptionCheckpointOptions>();
  check_readme_table<fulgur::PredictionWriterOptions>();
  check_readme_table<fulgur::CINIC10Options>();
  check_readme_table<fulgur::CIFAR10Options>();
  check_readme_table<fulgur::ImageNetOptions>();
  check_readme_table<examples::LitClassifierOptions>();
}

}  // namespace options_test
