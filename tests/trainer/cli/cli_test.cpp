#include "support/test_support.hpp"
#include "support/tiny_modules.hpp"

#include <fulgur/trainer/cli/cli.hpp>
#include <fulgur/trainer/cli/options_yaml.hpp>
#include <fulgur/trainer/yaml_value.hpp>

#include <doctest/doctest.h>

#include <csignal>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>

namespace cli_test {

using namespace fulgur;
using fulgur::testing::read_file;
using fulgur::testing::TempDir;

namespace {

#define CLI_MODEL_OPTIONS(X)                        \
  X(double, lr, 0.1, "learning rate", check::Any{}) \
  X(std::string, arch, "linear", "network", (check::OneOf{{"linear"}}))

struct CliModelOptions {
  FULGUR_OPTIONS(CliModelOptions, CLI_MODEL_OPTIONS)
};

struct CliModel : testing::RecordingModule {
  using Options = CliModelOptions;
  explicit CliModel(const CliModelOptions& o) : RecordingModule(4, o.lr()) {}
};

#define CLI_DATA_OPTIONS(X)                                            \
  X(int64_t, train_batches, 4, "batches per epoch", check::AtLeast{1}) \
  X(int64_t, batch_size, 8, "samples per batch", check::AtLeast{1})

struct CliDataOptions {
  FULGUR_OPTIONS(CliDataOptions, CLI_DATA_OPTIONS)
};

struct CliData : testing::RegressionData {
  using Options = CliDataOptions;
  explicit CliData(const CliDataOptions& o) : RegressionData(o.train_batches(), 2, o.batch_size()) {}
};

// A callback of the program's own, named in YAML once registered.
#define END_MARKER_OPTIONS(X)                                                   \
  X(std::string, path, "", "file written when fit ends", check::NotEmpty{})     \
  X(std::string, label, "done", "text written before the step count", check::Any{})

struct EndMarkerOptions {
  FULGUR_OPTIONS(EndMarkerOptions, END_MARKER_OPTIONS)
};

struct EndMarker : Callback {
  using Options = EndMarkerOptions;
  explicit EndMarker(const Options& o) : options(o) { o.validate(); }
  std::string state_key() const override { return "EndMarker"; }
  void on_fit_end(Trainer& trainer, LightningModule&) override {
    std::ofstream(options.path()) << options.label() << ' ' << trainer.state().global_step();
  }
  Options options;
};

// A logger of the program's own: counts the rows it is given and writes the
// count and the last step into its run folder at finalize.
#define ROW_COUNTER_OPTIONS(X) X(std::string, file, "rows.txt", "file name in the run folder", check::NotEmpty{})

struct RowCounterOptions {
  FULGUR_OPTIONS(RowCounterOptions, ROW_COUNTER_OPTIONS)
};

struct RowCounter : Logger {
  using Options = RowCounterOptions;
  RowCounter(const Options& o, const RunFolder& f) : options(o), folder(f) { o.validate(); }
  std::string name() const override { return folder.name; }
  std::filesystem::path log_dir() override { return folder.path(); }
  std::optional<std::filesystem::path> open_versions_dir() override { return folder.open_versions_dir(); }
  void set_version(int64_t version) override { folder.version = version; }
  void log_hyperparams(const YAML::Node&) override {}
  void log_metrics(const std::map<std::string, double>&, int64_t step) override {
    ++rows;
    last_step = step;
  }
  void finalize(const std::string& status) override {
    std::filesystem::create_directories(log_dir());
    std::ofstream(log_dir() / options.file()) << status << ' ' << rows << ' ' << last_step;
  }
  Options options;
  RunFolder folder;
  int64_t rows = 0, last_step = -1;
};

// SLURM's warning before the first step and after the last one, where no
// run records it: the model's constructor and destructor raise SIGUSR1.
struct WarnedModel : CliModel {
  using CliModel::CliModel;
  explicit WarnedModel(const CliModelOptions& o) : CliModel(o) { std::raise(SIGUSR1); }
  ~WarnedModel() override { std::raise(SIGUSR1); }
};

struct Outcome {
  int code;
  std::string out;
  std::string err;
};

Outcome run_cli(std::vector<std::string> args, cli::CallbackRegistry callbacks = cli::CallbackRegistry::with_builtins(),
                cli::LoggerRegistry loggers = cli::LoggerRegistry::with_builtins()) {
  args.insert(args.begin(), "prog");
  std::vector<const char*> argv;
  for (auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  auto* old_out = std::cout.rdbuf(out.rdbuf());
  auto* old_err = std::cerr.rdbuf(err.rdbuf());
  const int code = cli::run<CliModel, CliData>(static_cast<int>(argv.size()), argv.data(), std::move(callbacks),
                                               std::move(loggers));
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  return {code, out.str(), err.str()};
}

}  // namespace

TEST_CASE("cli: parse_arguments reads subcommand, configs, overrides and flags") {
  const char* argv[] = {"prog", "test", "--config", "a.yaml", "--trainer.max_epochs", "3",
                        "--model.lr=0.5", "--print_config", "--config=b.yaml"};
  const cli::Arguments a = cli::parse_arguments(9, argv);
  CHECK(a.subcommand == fulgur::Stage::Test);
  CHECK(a.config_files == std::vector<std::string>{"a.yaml", "b.yaml"});
  REQUIRE(a.overrides.size() == 2);
  CHECK(a.overrides[0] == std::pair<std::string, std::string>{"trainer.max_epochs", "3"});
  CHECK(a.overrides[1] == std::pair<std::string, std::string>{"model.lr", "0.5"});
  CHECK(a.print_config);

  const char* bad_sub[] = {"prog", "train"};
  CHECK_THROWS_WITH_AS(cli::parse_arguments(2, bad_sub),
                       "subcommand: expected one of fit, validate, test, predict, lr_find, scale_batch_size, got 'train'", cli::ConfigError);
  const char* no_value[] = {"prog", "fit", "--trainer.max_epochs"};
  CHECK_THROWS_WITH_AS(cli::parse_arguments(3, no_value), "--trainer.max_epochs: expected a value", cli::ConfigError);
  const char* positional[] = {"prog", "fit", "extra"};
  CHECK_THROWS_WITH_AS(cli::parse_arguments(3, positional), "argument 'extra': expected --KEY VALUE",
                       cli::ConfigError);
}

TEST_CASE("cli: config files merge in order and overrides win") {
  TempDir dir("cli-merge");
  std::ofstream(dir / "a.yaml") << "trainer:\n  max_epochs: 5\n  precision: bf16-mixed\nmodel:\n  lr: 0.1\n";
  std::ofstream(dir / "b.yaml") << "trainer:\n  max_epochs: 7\n";
  cli::Arguments a;
  a.config_files = {(dir / "a.yaml").string(), (dir / "b.yaml").string()};
  a.overrides = {{"model.lr", "0.25"}, {"data.mean", "[1, 2, 3]"}};
  const YAML::Node root = cli::merge_configuration(a);
  CHECK(root["trainer"]["max_epochs"].as<int>() == 7);
  CHECK(root["trainer"]["precision"].as<std::string>() == "bf16-mixed");
  CHECK(root["model"]["lr"].as<double>() == doctest::Approx(0.25));
  CHECK(root["data"]["mean"].size() == 3);

  std::ofstream(dir / "broken.yaml") << "trainer:\n  max_epochs: [1, 2\n";
  a.config_files = {(dir / "broken.yaml").string()};
  try {
    cli::merge_configuration(a);
    FAIL("expected an error");
  } catch (const cli::ConfigError& e) {
    CHECK(std::string(e.what()).rfind("--config " + (dir / "broken.yaml").string() + ": invalid YAML at line", 0) ==
          0);
  }
  a.config_files = {(dir / "missing.yaml").string()};
  CHECK_THROWS_WITH_AS(cli::merge_configuration(a), ("--config " + (dir / "missing.yaml").string() + ": file not found").c_str(),
                       cli::ConfigError);
}

TEST_CASE("cli: bad input exits 2 with one message naming the key, and writes nothing") {
  TempDir dir("cli-errors");
  const std::string root = (dir / "runs").string();
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--trainer.max_epoch", "3"}, "error: unknown key 'trainer.max_epoch'; did you mean 'trainer.max_epochs'?\n"},
      {{"--trainer.devcies", "2"}, "error: unknown key 'trainer.devcies'; did you mean 'trainer.devices'?\n"},
      {{"--modle.lr", "3"},
       "error: unknown key 'modle' (top-level keys: trainer, model, data, seed_everything, test_after_fit, ckpt_path, "
       "lr_find, scale_batch_size, optimizer, lr_scheduler); did you mean 'model'?\n"},
      {{"--model.depth", "3"}, "error: unknown key 'model.depth'\n"},
      {{"--optimizer.lr", "3"}, "error: optimizer.class_path: expected the class name of the optimizer\n"},
      {{"--optimizer", "SGDD"},
       "error: optimizer.class_path: unknown optimizer class 'SGDD' (known: Adagrad, Adam, AdamW, RMSprop, SGD); did "
       "you mean 'SGD'?\n"},
      {{"--optimizer", "SGD", "--optimizer.lrr", "0.1"},
       "error: unknown key 'optimizer.init_args.lrr' for SGD; did you mean 'optimizer.init_args.lr'?\n"},
      {{"--optimizer", "Adam", "--optimizer.betas", "[0.9]"},
       "error: optimizer.init_args.betas: expected two numbers, as [0.9, 0.999], got '[0.9]'\n"},
      {{"--lr_scheduler", "ReduceLROnPlateau", "--lr_scheduler.monitor", "val_loss"},
       "error: lr_scheduler: needs an optimizer: section too (the scheduler is built on that optimizer)\n"},
      {{"--optimizer", "SGD", "--lr_scheduler", "ReduceLROnPlateau", "--lr_scheduler.mode", "lowest",
        "--lr_scheduler.monitor", "val_loss"},
       "error: lr_scheduler.init_args.mode: must be one of min, max, got 'lowest'\n"},
      {{"--trainer.max_epochs", "abc"}, "error: trainer.max_epochs: expected an integer or null, got 'abc'\n"},
      {{"--trainer.deterministic", "maybe"},
       "error: trainer.deterministic: expected a boolean (true/false), got 'maybe'\n"},
      {{"--model.lr", "fast"}, "error: model.lr: expected a number, got 'fast'\n"},
      {{"--model.arch", "resnet"}, "error: model.arch: must be one of linear, got resnet\n"},
      {{"--data.batch_size", "0"}, "error: data.batch_size: must be >= 1, got 0\n"},
      {{"--trainer.limit_train_batches", "lots"},
       "error: trainer.limit_train_batches: expected a batch count (integer) or a fraction (number with a decimal "
       "point), got 'lots'\n"},
      {{"--trainer.precision", "64"},
       "error: trainer.precision: must be one of 32-true, bf16-mixed, 16-mixed, got '64'\n"},
      {{"--trainer.accelerator", "tpu"},
       "error: trainer.accelerator: must be one of auto, cpu, gpu, got 'tpu'; did you mean 'cpu'?\n"},
      {{"--trainer.precision", "16mixed"},
       "error: trainer.precision: must be one of 32-true, bf16-mixed, 16-mixed, got '16mixed'; did you mean "
       "'16-mixed'?\n"},
      {{"--trainer.ddp.bucket_cap_mb", "0"}, "error: trainer.ddp.bucket_cap_mb: must be > 0, got 0\n"},
      {{"--trainer.strategy", "deepspeed"},
       "error: trainer.strategy: must be one of auto, single_device, ddp, horovod, fsdp, model_parallel, got 'deepspeed'\n"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"fit", "--trainer.default_root_dir", root};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const Outcome o = run_cli(args);
    CAPTURE(c.args[0]);
    CHECK(o.code == 2);
    CHECK(o.err == c.message);
    CHECK_FALSE(std::filesystem::exists(root));
  }
}

TEST_CASE("cli: --print_config shows every resolved option and exits 0") {
  TempDir dir("cli-print");
  const std::string root = (dir / "runs").string();
  const Outcome o = run_cli({"fit", "--print_config", "--trainer.default_root_dir", root, "--model.lr", "0.3",
                             "--seed_everything", "5"});
  CHECK(o.code == 0);
  const YAML::Node printed = YAML::Load(o.out);
  CHECK(printed["seed_everything"].as<int>() == 5);
  CHECK(printed["model"]["lr"].as<double>() == doctest::Approx(0.3));
  CHECK(printed["model"]["arch"].as<std::string>() == "linear");
  CHECK(printed["trainer"]["max_epochs"].IsNull());
  CHECK(printed["trainer"]["precision"].as<std::string>() == "32-true");
  CHECK(printed["trainer"]["limit_train_batches"].as<std::string>() == "1.0");
  CHECK(printed["data"]["batch_size"].as<int>() == 8);
  CHECK_FALSE(std::filesystem::exists(root));
}

TEST_CASE("cli: floats print in the shortest form that reads back exactly; a float where a list is expected is a list of one") {
  TempDir dir("cli-floats");
  const std::string root = (dir / "runs").string();
  // The declared default 0.1 (no text given for it) and a float in a list.
  const Outcome o = run_cli({"fit", "--print_config", "--trainer.default_root_dir", root, "--trainer.callbacks",
                             "[{class_path: StochasticWeightAveraging, init_args: {swa_lrs: 0.01}}]"});
  INFO(o.err);
  CHECK(o.code == 0);
  CHECK(o.out.find("  lr: 0.1\n") != std::string::npos);
  CHECK(o.out.find("0.10000000000000001") == std::string::npos);
  CHECK(YAML::Load(o.out)["model"]["lr"].as<double>() == 0.1);
  CHECK(fulgur::yaml_float(1.0) == "1.0");
  CHECK(fulgur::yaml_float(0.05) == "0.05");
  CHECK(fulgur::yaml_float(-std::numeric_limits<double>::infinity()) == "-.inf");
  // swa_lrs: 0.01 and swa_lrs: [0.01] read alike (Lightning takes a float or a list).
  const YAML::Node scalar = YAML::Load("{swa_lrs: 0.01}");
  cli::ConfigSection section(scalar, "swa");
  const auto swa = cli::read_options<StochasticWeightAveragingOptions>(section);
  CHECK(swa.swa_lrs() == std::vector<double>{0.01});
}

TEST_CASE("cli: the ddp options' old spellings still work, with a deprecation line; fast_dev_run: true is 1") {
  TempDir dir("cli-deprecated");
  const Outcome o = run_cli({"fit", "--print_config", "--trainer.default_root_dir", (dir / "runs").string(),
                             "--trainer.bucket_cap_mb", "50", "--trainer.find_unused_parameters", "true",
                             "--trainer.fast_dev_run", "true"});
  CHECK(o.code == 0);
  CHECK(o.err ==
        "fulgur: warning: trainer.find_unused_parameters is deprecated; use trainer.ddp.find_unused_parameters\n"
        "fulgur: warning: trainer.bucket_cap_mb is deprecated; use trainer.ddp.bucket_cap_mb\n");
  const YAML::Node printed = YAML::Load(o.out);
  CHECK(printed["trainer"]["ddp"]["bucket_cap_mb"].as<double>() == 50.0);
  CHECK(printed["trainer"]["ddp"]["find_unused_parameters"].as<bool>());
  CHECK(printed["trainer"]["ddp"]["broadcast_buffers"].as<bool>());
  CHECK_FALSE(printed["trainer"]["bucket_cap_mb"].IsDefined());
  CHECK(printed["trainer"]["fast_dev_run"].as<int>() == 1);
}

TEST_CASE("cli: a program's own callback type, registered, is named and configured from YAML") {
  TempDir dir("cli-user-callback");
  const std::string marker = (dir / "marker.txt").string();
  cli::CallbackRegistry registry = cli::CallbackRegistry::with_builtins();
  registry.add<EndMarker>("EndMarker");
  const std::vector<std::string> args = {
      "fit", "--trainer.default_root_dir", (dir / "runs").string(), "--trainer.max_epochs", "1",
      "--trainer.enable_progress_bar", "false", "--trainer.callbacks",
      "[{class_path: my.callbacks.EndMarker, init_args: {path: " + marker + ", label: hello}}]"};
  const Outcome o = run_cli(args, registry);
  INFO(o.err);
  CHECK(o.code == 0);
  CHECK(read_file(marker) == "hello 4");

  std::vector<std::string> printing = args;
  printing.push_back("--print_config");
  const YAML::Node printed = YAML::Load(run_cli(printing, registry).out);
  CHECK(printed["trainer"]["callbacks"][0]["init_args"]["label"].as<std::string>() == "hello");
  // Without the registration the name is unknown, and the message lists what is known.
  const Outcome unknown = run_cli(args);
  CHECK(unknown.code == 2);
  CHECK(unknown.err.find("unknown callback class 'my.callbacks.EndMarker'") != std::string::npos);
}

TEST_CASE("cli: a program's own logger type, registered, is named and configured from YAML") {
  TempDir dir("cli-user-logger");
  cli::LoggerRegistry registry = cli::LoggerRegistry::with_builtins();
  registry.add<RowCounter>("RowCounter");
  const std::vector<std::string> args = {
      "fit", "--trainer.default_root_dir", (dir / "runs").string(), "--trainer.max_epochs", "1",
      "--trainer.log_every_n_steps", "1", "--trainer.enable_progress_bar", "false", "--trainer.logger",
      "[csv, {class_path: my.loggers.RowCounter, init_args: {file: counted.txt}}]"};
  const Outcome o = run_cli(args, cli::CallbackRegistry::with_builtins(), registry);
  INFO(o.err);
  CHECK(o.code == 0);
  // Beside the CSV logger, in the run folder they share: 4 training rows, one
  // validation row at step 4 (and its epoch row).
  const auto run = dir / "runs" / "fulgur_logs" / "version_0";
  CHECK(std::filesystem::exists(run / "metrics.csv"));
  CHECK(read_file(run / "counted.txt") == "success 5 4");

  std::vector<std::string> printing = args;
  printing.push_back("--print_config");
  const YAML::Node printed = YAML::Load(run_cli(printing, cli::CallbackRegistry::with_builtins(), registry).out);
  CHECK(printed["trainer"]["logger"][1]["init_args"]["file"].as<std::string>() == "counted.txt");
  // Without the registration the name is unknown, and the message lists what is known.
  const Outcome unknown = run_cli(args);
  CHECK(unknown.code == 2);
  CHECK(unknown.err ==
        "error: trainer.logger[1].class_path: unknown logger class 'my.loggers.RowCounter' (known: CSVLogger, "
        "TensorBoardLogger, WandbLogger, csv, tensorboard, wandb)\n");
  const Outcome bad_option = run_cli({"fit", "--trainer.logger", "{class_path: WandbLogger, init_args: {projekt: p}}"});
  CHECK(bad_option.code == 2);
  CHECK(bad_option.err == "error: unknown key 'trainer.logger.init_args.projekt'; did you mean 'trainer.logger.init_args.project'?\n");
}

TEST_CASE("cli: fit then test writes one run folder with hparams and metrics") {
  TempDir dir("cli-fit");
  const std::string root = (dir / "runs").string();
  const Outcome o = run_cli({"fit", "--trainer.default_root_dir", root, "--trainer.max_epochs", "2",
                             "--trainer.enable_progress_bar", "false", "--trainer.log_every_n_steps", "1",
                             "--seed_everything", "3", "--test_after_fit", "true"});
  CHECK(o.code == 0);
  CHECK(o.err.empty());
  const auto run = std::filesystem::path(root) / "fulgur_logs" / "version_0";
  CHECK(o.out.find("run folder " + run.string()) != std::string::npos);
  const YAML::Node hparams = YAML::LoadFile((run / "hparams.yaml").string());
  CHECK(hparams["seed_everything"].as<int>() == 3);
  CHECK(hparams["trainer"]["max_epochs"].as<int>() == 2);
  const std::string csv = read_file(run / "metrics.csv");
  CHECK(csv.rfind("epoch,step,test_loss,train_loss,val_loss\n", 0) == 0);
  INFO(csv);
  CHECK(csv.find("\n0,4,") != std::string::npos);  // 4 batches per epoch, logged every step
  CHECK(csv.find("\n2,8,") != std::string::npos);  // the test row: after 2 epochs, 8 steps
  CHECK_FALSE(std::filesystem::exists(std::filesystem::path(root) / "fulgur_logs" / "version_1"));
}

TEST_CASE("cli: optimizer: and lr_scheduler: sections replace configure_optimizers, as in LightningCLI") {
  TempDir dir("cli-optimizer");
  const std::string root = (dir / "runs").string();
  const std::vector<std::string> common = {"fit", "--trainer.default_root_dir", root, "--trainer.max_epochs", "3",
                                           "--trainer.enable_progress_bar", "false", "--seed_everything", "3"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> args = common;
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  const Outcome step = run_cli(with({"--trainer.callbacks", "LearningRateMonitor", "--optimizer", "SGD",
                                     "--optimizer.lr", "0.05", "--optimizer.momentum", "0.9", "--lr_scheduler",
                                     "StepLR", "--lr_scheduler.step_size", "1", "--lr_scheduler.gamma", "0.5"}));
  INFO(step.err);
  REQUIRE(step.code == 0);
  CHECK(step.err == "fulgur: warning: the command line's optimizer: and lr_scheduler: sections replace the model's "
                    "configure_optimizers\n");
  const auto run = std::filesystem::path(root) / "fulgur_logs" / "version_0";
  // The epoch scheduler halves 0.05 after each epoch: the third epoch trains at 0.0125.
  CHECK(testing::last_csv_value(read_file(run / "metrics.csv"), "lr-SGD") == doctest::Approx(0.0125));
  const YAML::Node hparams = YAML::LoadFile((run / "hparams.yaml").string());
  CHECK(hparams["optimizer"]["class_path"].as<std::string>() == "SGD");
  CHECK(hparams["optimizer"]["init_args"]["momentum"].as<double>() == doctest::Approx(0.9));
  CHECK(hparams["lr_scheduler"]["init_args"]["interval"].as<std::string>() == "epoch");

  // ReduceLROnPlateau on a logged metric; its defaults are printed with the config.
  const auto plateau_args = with({"--optimizer", "Adam", "--lr_scheduler", "ReduceLROnPlateau",
                                  "--lr_scheduler.monitor", "val_loss", "--lr_scheduler.patience", "0"});
  const Outcome plateau = run_cli(plateau_args);
  INFO(plateau.err);
  CHECK(plateau.code == 0);
  std::vector<std::string> printing = plateau_args;
  printing.push_back("--print_config");
  const YAML::Node printed = YAML::Load(run_cli(printing).out);
  CHECK(printed["optimizer"]["init_args"]["lr"].as<double>() == doctest::Approx(1e-3));
  CHECK(printed["lr_scheduler"]["init_args"]["mode"].as<std::string>() == "min");
  CHECK(printed["lr_scheduler"]["init_args"]["factor"].as<double>() == doctest::Approx(0.1));
  CHECK(printed["lr_scheduler"]["init_args"]["strict"].as<bool>());

  // A monitor nobody logs fails the fit, naming what was logged.
  const Outcome missing = run_cli(with({"--optimizer", "SGD", "--lr_scheduler", "ReduceLROnPlateau",
                                        "--lr_scheduler.monitor", "val_los"}));
  CHECK(missing.code == 1);
  CHECK(missing.err.find("ReduceLROnPlateau conditioned on metric 'val_los', which is not available; available "
                         "metrics: ") != std::string::npos);
}

}  // namespace cli_test

namespace cli_test {

TEST_CASE("cli: a SIGUSR1 before the first step or after the last does not end the program; SIGUSR1 is default again after") {
  struct sigaction before {};
  ::sigaction(SIGUSR1, nullptr, &before);
  REQUIRE((before.sa_handler == SIG_DFL));
  TempDir dir("cli-warned");
  const std::string root = (dir / "runs").string();
  const std::vector<std::string> args = {"prog", "fit", "--trainer.default_root_dir", root, "--trainer.max_epochs", "1",
                                         "--trainer.enable_progress_bar", "false"};
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  const int code = cli::run<WarnedModel, CliData>(static_cast<int>(argv.size()), argv.data());
  CHECK(code == 0);  // reached at all: the default action would have ended the test program
  const auto checkpoints = std::filesystem::path(root) / "fulgur_logs" / "version_0" / "checkpoints";
  CHECK((std::filesystem::is_directory(checkpoints) && !std::filesystem::is_empty(checkpoints)));  // fit saved
  struct sigaction after {};
  ::sigaction(SIGUSR1, nullptr, &after);
  CHECK((after.sa_handler == SIG_DFL));
}

}  // namespace cli_test
