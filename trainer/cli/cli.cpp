#include <fulgur/trainer/cli/cli.hpp>
#include <fulgur/core/ignored_signal.hpp>
#include <fulgur/strategies/cuda/cuda_runtime.hpp>

#include <fulgur/callbacks/prediction_writer.hpp>
#include <fulgur/callbacks/tuner.hpp>
#include <fulgur/trainer/cli/callback_registry.hpp>
#include <fulgur/core/did_you_mean.hpp>
#include <fulgur/trainer/cli/dotted_key.hpp>
#include <fulgur/datamodules/data_error.hpp>
#include <fulgur/strategies/launchers/subprocess_launcher.hpp>
#include <fulgur/trainer/connectors/stop_signal_error.hpp>
#include <fulgur/trainer/cli/trainer_options_reader.hpp>
#include <fulgur/trainer/hparams_yaml.hpp>
#include <fulgur/trainer/seed.hpp>
#include <fulgur/engine/checkpoint/checkpoint_error.hpp>
#include <fulgur/trainer/trainer.hpp>
#include <fulgur/version.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>

namespace fulgur::cli {
namespace {

constexpr const char* kUsage = R"(usage: {0} <fit|validate|test|predict|lr_find|scale_batch_size> [--config FILE.yaml]... [--KEY VALUE]...

  lr_find                the learning-rate range test on the fit configuration (Tuner::lr_find):
                         prints the suggested learning rate, writes the curve to
                         <default_root_dir>/lr_find.csv (scripts/plot_lr_find.py draws it)
  scale_batch_size       the largest batch size that trains (Tuner::scale_batch_size), on the fit
                         configuration: prints it and writes <default_root_dir>/scale_batch_size.yaml,
                         a --config that sets it (on the CPU, --scale_batch_size.max_val is required)

  --config FILE          YAML with sections trainer:, model:, data: (repeatable; later files win)
  --trainer.NAME VALUE   any Trainer option (max_epochs, accelerator, devices, precision, ...)
  --trainer.callbacks '[{{class_path: EarlyStopping, init_args: {{monitor: val_loss}}}}]'
                         callbacks, as in the YAML config (a list, one entry or a class name)
  --trainer.logger L     csv (default), tensorboard, wandb, a name the program registered
                         (LoggerRegistry), csv,tensorboard, false, or
                         '[csv, {{class_path: WandbLogger, init_args: {{project: P}}}}]'
  --model.NAME VALUE     an option of the model
  --optimizer NAME       replace the model's configure_optimizers by LibTorch's SGD, Adam, AdamW,
                         RMSprop or Adagrad; --optimizer.NAME VALUE sets its arguments (lr, ...)
  --lr_scheduler NAME    and a scheduler on it: StepLR or ReduceLROnPlateau (--lr_scheduler.monitor
                         val_loss); --lr_scheduler.NAME VALUE sets its arguments, interval, frequency
  --data.NAME VALUE      an option of the data module
  --seed_everything N    seed every generator (default: a random seed, printed)
  --test_after_fit BOOL  fit: run the test loop on the trained model, same run folder
  --ckpt_path PATH       fit: resume from a checkpoint; validate/test/predict: load its weights
                         (PATH: a file, "last" = newest checkpoint, "best" = ModelCheckpoint's best)
  --lr_find.NAME VALUE   lr_find: min_lr, max_lr, num_training_steps, mode, early_stop_threshold
  --scale_batch_size.NAME VALUE
                         scale_batch_size: mode, steps_per_trial, init_val, max_trials, batch_arg_name, max_val
  --print_config         print the full resolved configuration and exit
  --help                 this text
  --version              print fulgur's version ("fulgur MAJOR.MINOR.PATCH") and exit

Exit codes: 0 success, 2 bad input (the message names the key or file), 1 other failures,
  138 / 143: fit stopped early on SIGUSR1 / SIGTERM (128 + the signal) at a step every rank
  agreed on, after the normal stop path; under SLURM, SIGUSR1 also requeued the job.
)";

const std::vector<std::string> kTopLevelKeys = {"trainer",   "model",   "data",           "seed_everything", "test_after_fit",
                                                "ckpt_path", "lr_find", "scale_batch_size", "optimizer", "lr_scheduler"};

// Sections that name a class, LightningCLI's way: `--optimizer SGD` sets its
// class_path and `--optimizer.lr 0.1` its init_args.lr.
const std::vector<std::string> kClassSections = {"optimizer", "lr_scheduler"};

Stage parse_subcommand(const std::string& word) {
  if (word == "fit") return Stage::Fit;
  if (word == "validate") return Stage::Validate;
  if (word == "test") return Stage::Test;
  if (word == "predict") return Stage::Predict;
  throw ConfigError(
      fmt::format("subcommand: expected one of fit, validate, test, predict, lr_find, scale_batch_size, got '{}'", word));
}

// Deep merge: mappings merge key by key, anything else replaces.
void merge_into(YAML::Node target, const YAML::Node& source) {
  for (const auto& item : source) {
    const std::string key = item.first.as<std::string>();
    YAML::Node existing = target[key];
    if (item.second.IsMap() && existing.IsDefined() && existing.IsMap()) {
      merge_into(existing, item.second);
    } else {
      target[key] = YAML::Clone(item.second);
    }
  }
}

// {class_path: NAME} for a bare class name.
YAML::Node class_section(const YAML::Node& name) {
  YAML::Node section(YAML::NodeType::Map);
  section["class_path"] = name;
  return section;
}

void check_top_level(const YAML::Node& root) {
  for (const auto& item : root) {
    const std::string key = item.first.as<std::string>();
    if (std::find(kTopLevelKeys.begin(), kTopLevelKeys.end(), key) == kTopLevelKeys.end()) {
      throw ConfigError(fmt::format("unknown key '{}' (top-level keys: {}){}", key, fmt::join(kTopLevelKeys, ", "),
                                    did_you_mean(key, kTopLevelKeys)));
    }
  }
}

void print_metrics(const char* title, const std::map<std::string, double>& metrics) {
  std::cout << title << ":";
  for (const auto& [name, value] : metrics) std::cout << fmt::format(" {}={:.6g}", name, value);
  std::cout << std::endl;
}

int run_checked(const Arguments& args, const Factories& factories, const char* program) {
  if (args.help) {
    std::cout << fmt::format(kUsage, program);
    return 0;
  }
  if (args.version) {
    std::cout << version_line() << std::endl;
    return 0;
  }
  YAML::Node root = merge_configuration(args);
  check_top_level(root);

  // Seed first: the model's initial weights are drawn in its constructor.
  ConfigSection top(root, "");
  std::random_device entropy;
  const auto seed = top.get<int64_t>("seed_everything", static_cast<int64_t>(entropy() & 0x7fffffff));
  // Only fit acts on it; the other subcommands accept it so one config serves all.
  const bool test_after_fit = top.get<bool>("test_after_fit", false);
  const std::string ckpt_path = top.get<std::string>("ckpt_path", "");
  seed_everything(static_cast<uint64_t>(seed));
  // The program's launcher: every Trainer of this command (a tuner's and the
  // run's) shares the local ranks the first one starts.
  const auto launcher = std::make_shared<SubprocessLauncher>();

  ConfigSection trainer_section(root["trainer"], "trainer");
  ConfigSection model_section(root["model"], "model");
  ConfigSection data_section(root["data"], "data");
  ConfigSection lr_find_section(root["lr_find"], "lr_find");
  // Read whatever the subcommand, so one config serves all and its keys are checked.
  const LRFinderOptions lr_find_options = read_options<LRFinderOptions>(lr_find_section);
  ConfigSection scale_section(root["scale_batch_size"], "scale_batch_size");
  const ScaleBatchSizeOptions scale_options = read_options<ScaleBatchSizeOptions>(scale_section);
  TrainerOptions options = read_trainer_options(trainer_section, root["trainer"]);
  auto callbacks = factories.callbacks.create(
      trainer_section.raw("callbacks", YAML::Node(YAML::NodeType::Sequence)), "trainer.callbacks");
  // predict writes predictions.pt through a PredictionWriter, the configured one or a default.
  std::shared_ptr<PredictionWriter> writer;
  for (const auto& callback : callbacks) {
    if (auto found = std::dynamic_pointer_cast<PredictionWriter>(callback)) writer = found;
  }
  if (!writer && args.subcommand == Stage::Predict && !args.lr_find && !args.scale_batch_size) {
    writer = std::make_shared<PredictionWriter>();
    callbacks.push_back(writer);
  }
  const auto loggers =
      factories.loggers.create(trainer_section.raw("logger", YAML::Node(true)), "trainer.logger", options.default_root_dir());
  // optimizer: and lr_scheduler: replace configure_optimizers (LightningCLI).
  auto one_class = [](const auto& registry, YAML::Node node, const char* name) {
    if (node.IsSequence()) throw ConfigError(fmt::format("{}: expected one {} (class_path, init_args), got a list", name, name));
    auto built = registry.create(node, name);
    return built.empty() ? nullptr : built.front();
  };
  const auto optimizer = one_class(factories.optimizers, root["optimizer"], "optimizer");
  const auto scheduler = one_class(factories.schedulers, root["lr_scheduler"], "lr_scheduler");
  if (scheduler && !optimizer) {
    throw ConfigError("lr_scheduler: needs an optimizer: section too (the scheduler is built on that optimizer)");
  }
  options.logger(!loggers.empty());
  // --print_config shows what is missing instead of failing on it; the
  // objects it could not build are not needed to print.
  if (args.print_config) {
    model_section.show_missing_as_required();
    data_section.show_missing_as_required();
  }
  auto build = [&](ConfigSection& section, const auto& factory) -> decltype(factory(section)) {
    try {
      return factory(section);
    } catch (const ConfigError&) {
      throw;  // a value the user gave is wrong
    } catch (const std::invalid_argument&) {
      if (!section.missing_required()) throw;  // the constructor's check of what is missing
      return nullptr;
    }
  };
  std::shared_ptr<LightningModule> model = build(model_section, factories.model);
  std::shared_ptr<DataModule> data = build(data_section, factories.data);
  if (model && optimizer) {
    const char* rank = std::getenv("RANK");
    if (!args.print_config && (rank == nullptr || std::string(rank) == "0")) {
      std::cerr << fmt::format("fulgur: warning: the command line's optimizer:{} section{} replace{} the model's "
                               "configure_optimizers",
                               scheduler ? " and lr_scheduler:" : "", scheduler ? "s" : "", scheduler ? "" : "s")
                << std::endl;
    }
    model->override_configure_optimizers([optimizer, scheduler](LightningModule& m) {
      OptimizerConfig config{optimizer->make(m.parameters()), std::nullopt};
      if (scheduler) config.lr_scheduler = scheduler->make(*config.optimizer);
      return config;
    });
  }
  for (const ConfigSection* section : {&trainer_section, &model_section, &data_section}) {
    const auto unread = section->unread_keys();
    if (!unread.empty()) throw ConfigError(fmt::format("unknown key '{}'", unread.front()));
  }

  YAML::Node resolved(YAML::NodeType::Map);
  resolved["seed_everything"] = seed;
  resolved["test_after_fit"] = test_after_fit;
  resolved["trainer"] = trainer_section.resolved();
  resolved["model"] = model_section.resolved();
  resolved["data"] = data_section.resolved();
  if (optimizer) resolved["optimizer"] = root["optimizer"];
  if (scheduler) resolved["lr_scheduler"] = root["lr_scheduler"];
  if (args.lr_find) resolved["lr_find"] = lr_find_section.resolved();
  if (args.scale_batch_size) resolved["scale_batch_size"] = scale_section.resolved();
  if (args.print_config) {
    YAML::Emitter out;
    out << resolved;
    std::cout << out.c_str() << std::endl;
    return 0;
  }
  model->save_hyperparameters(hparams_from_yaml(resolved));

  if (args.lr_find) {
    const auto finder = Tuner(options, launcher).lr_find(*model, *data, lr_find_options);
    const auto csv = std::filesystem::path(options.default_root_dir()) / "lr_find.csv";
    finder->write_csv(csv);
    const auto suggestion = finder->suggestion();
    std::cout << fmt::format("lr_find: {} steps, suggested lr: {} (set it as the model's learning rate); curve: {}",
                             finder->lrs().size(), suggestion ? fmt::format("{:.6g}", *suggestion) : "none (too few points)",
                             csv.string())
              << std::endl;
    // Drawing needs matplotlib: the project's venv has it, an installed program may not, so say how.
    std::cout << fmt::format("lr_find: draw it with: .venv/bin/python scripts/plot_lr_find.py {}{}", csv.string(),
                             suggestion ? fmt::format(" {:.6g}", *suggestion) : "")
              << std::endl;
    return launcher->join();  // the ranks its Trainers started; their failure is the program's
  }
  if (args.scale_batch_size) {
    const int64_t size = Tuner(options, launcher).scale_batch_size(*model, *data, scale_options);
    const auto file = std::filesystem::path(options.default_root_dir()) / "scale_batch_size.yaml";
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << fmt::format("data:\n  {}: {}\n", scale_options.batch_arg_name(), size);
    std::cout << fmt::format("scale_batch_size: batch size {} (data.{}); fit with it: --config {}", size,
                             scale_options.batch_arg_name(), file.string())
              << std::endl;
    return launcher->join();  // the ranks its Trainers started; their failure is the program's
  }

  // The Trainer checks every option before a process, a group or a file
  // exists, starts the other ranks when no launcher did, and resumes a
  // restarted job.
  Trainer trainer(options, callbacks, loggers, std::nullopt, launcher);
  switch (args.subcommand) {
    case Stage::Fit: {
      trainer.fit(*model, *data, ckpt_path);
      if (trainer.is_global_zero()) print_metrics("fit", trainer.state().callback_metrics());
      // Stopped by SIGUSR1/SIGTERM: the run is unfinished (exit_code says so).
      if (trainer.state().stop_signal() != 0) break;
      if (test_after_fit) {
        const auto metrics = trainer.test(*model, *data);
        if (trainer.is_global_zero()) print_metrics("test", metrics);
      }
      break;
    }
    case Stage::Validate: {
      const auto metrics = trainer.validate(*model, *data, ckpt_path);
      if (trainer.is_global_zero()) print_metrics("validate", metrics);
      break;
    }
    case Stage::Test: {
      const auto metrics = trainer.test(*model, *data, ckpt_path);
      if (trainer.is_global_zero()) print_metrics("test", metrics);
      break;
    }
    case Stage::Predict: {
      const auto outputs = trainer.predict(*model, *data, ckpt_path);
      if (trainer.is_global_zero() && writer && !writer->last_file().empty()) {
        std::cout << "predict: " << outputs.size() << " batches written to " << writer->last_file().string()
                  << std::endl;
      }
      break;
    }
  }
  return trainer.exit_code();
}

}  // namespace

std::string version_line() { return fmt::format("fulgur {}", kVersion); }

Arguments parse_arguments(int argc, const char* const* argv) {
  Arguments args;
  int i = 1;
  if (argc < 2) {
    throw ConfigError("subcommand: expected one of fit, validate, test, predict, lr_find, scale_batch_size (see --help)");
  }
  const std::string first = argv[1];
  if (first == "--help" || first == "-h") {
    args.help = true;
    return args;
  }
  if (first == "--version") {
    args.version = true;
    return args;
  }
  args.lr_find = first == "lr_find";
  args.scale_batch_size = first == "scale_batch_size";
  args.subcommand = args.lr_find || args.scale_batch_size ? Stage::Fit : parse_subcommand(first);
  for (i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      args.help = true;
      continue;
    }
    if (arg == "--print_config") {
      args.print_config = true;
      continue;
    }
    if (arg == "--version") {
      args.version = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0 || arg.size() == 2) {
      throw ConfigError(fmt::format("argument '{}': expected --KEY VALUE", arg));
    }
    std::string key = arg.substr(2);
    std::string value;
    const size_t eq = key.find('=');
    if (eq != std::string::npos) {
      value = key.substr(eq + 1);
      key = key.substr(0, eq);
    } else {
      if (i + 1 >= argc) throw ConfigError(fmt::format("--{}: expected a value", key));
      value = argv[++i];
    }
    if (key == "config") {
      args.config_files.push_back(value);
    } else {
      args.overrides.emplace_back(key, value);
    }
  }
  return args;
}

YAML::Node merge_configuration(const Arguments& args) {
  YAML::Node root(YAML::NodeType::Map);
  for (const auto& file : args.config_files) {
    if (!std::filesystem::is_regular_file(file)) {
      throw ConfigError(fmt::format("--config {}: file not found", file));
    }
    YAML::Node loaded;
    try {
      loaded = YAML::LoadFile(file);
    } catch (const YAML::Exception& e) {
      throw ConfigError(fmt::format("--config {}: invalid YAML at line {}, column {}: {}", file, e.mark.line + 1,
                                    e.mark.column + 1, e.msg));
    }
    if (loaded.IsNull()) continue;
    if (!loaded.IsMap()) throw ConfigError(fmt::format("--config {}: expected a mapping at the top level", file));
    merge_into(root, loaded);
  }
  for (const std::string& section : kClassSections) {
    if (root[section].IsScalar()) root[section] = class_section(root[section]);
  }
  for (const auto& [given, text] : args.overrides) {
    std::string key = given;
    YAML::Node value;
    try {
      value = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      throw ConfigError(fmt::format("--{}: cannot parse value '{}': {}", key, text, e.msg));
    }
    const std::string first = key.substr(0, key.find('.'));
    if (std::find(kClassSections.begin(), kClassSections.end(), first) != kClassSections.end()) {
      if (key == first && value.IsScalar()) {
        // Another class starts with its own defaults; the same one keeps its init_args.
        if (root[first].IsMap() && root[first]["class_path"].IsScalar() &&
            root[first]["class_path"].Scalar() == value.Scalar()) {
          continue;
        }
        value = class_section(value);
      } else if (key != first && key.rfind(first + ".class_path", 0) != 0 && key.rfind(first + ".init_args", 0) != 0) {
        key = first + ".init_args" + key.substr(first.size());
      }
    }
    set_dotted(root, key, value);
  }
  return root;
}

int run(int argc, const char* const* argv, const Factories& factories) {
  // Runs record SLURM's warning; before the first and after the last, a
  // default SIGUSR1 would end a job whose training finished (IgnoredSignal).
  const IgnoredSignal warning(SIGUSR1);
  CudaRuntime::load();  // before a model's constructor may ask ATen about CUDA (CudaRuntime)
  return run_guarded([&] { return run_checked(parse_arguments(argc, argv), factories, argc > 0 ? argv[0] : "fulgur"); });
}

int run_guarded(const std::function<int()>& body) {
  auto report = [](const std::exception& e, int exit_code) {
    std::cerr << "error: " << e.what() << std::endl;
    return exit_code;
  };
  try {
    return body();
  } catch (const c10::Error& e) {  // LibTorch's own, outside a stage: its message without the backtrace
    std::cerr << "error: " << e.what_without_backtrace() << std::endl;
    return 1;
  } catch (const std::invalid_argument& e) {  // ConfigError and invalid options: bad input
    return report(e, 2);
  } catch (const DataError& e) {  // missing folder, corrupt image: bad input too
    return report(e, 2);
  } catch (const CheckpointError& e) {  // a missing or corrupt checkpoint: bad input
    return report(e, 2);
  } catch (const StopSignalError& e) {  // stopped by SIGTERM/SIGINT where no step boundary could act on it
    return report(e, e.exit_code());
  } catch (const std::exception& e) {
    return report(e, 1);
  }
}

}  // namespace fulgur::cli
