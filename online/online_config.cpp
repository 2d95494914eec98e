#include <fulgur/online/online_config.hpp>

#include <fulgur/loggers/csv_logger.hpp>
#include <fulgur/online/online_model_registry.hpp>
#include <fulgur/online/online_trainer.hpp>

#include <fulgur/trainer/cli/config_section.hpp>
#include <fulgur/trainer/cli/options_yaml.hpp>
#include <fulgur/trainer/cli/parse_options.hpp>  // read_options<TrainerOptions>: compiled once, in parse_options.cpp

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace fulgur {

namespace {

WhenFull parse_when_full(const std::string& name) {
  if (name == "block") return WhenFull::Block;
  if (name == "drop_oldest") return WhenFull::DropOldest;
  if (name == "replay") return WhenFull::Replay;
  throw cli::ConfigError(fmt::format("stream.when_full: '{}' is not one of block, drop_oldest, replay", name));
}

/// Fails on keys of `section` nobody read.
void check_all_read(const cli::ConfigSection& section) {
  const std::vector<std::string> unread = section.unread_keys();
  if (!unread.empty()) throw cli::ConfigError(fmt::format("{}: unknown key", unread.front()));
}

cli::ConfigSection sub(const YAML::Node& root, const std::string& name) {
  const YAML::Node node = root[name];
  if (node && !node.IsMap() && !node.IsNull()) throw cli::ConfigError(fmt::format("{}: expected a mapping", name));
  return cli::ConfigSection(node ? node : YAML::Node(YAML::NodeType::Null), name);
}

// Every number of the file in its range, so a bad value is one line here
// rather than LibTorch's check (with its backtrace) or a failure later.
void check_values(const OnlineConfig& config, int64_t num_threads, int64_t stream_seed) {
  const ModelSpec& m = config.model;
  const OnlineOptions& o = config.options;
  const SampleStreamOptions& s = o.stream;
  auto at_least = [](const char* key, auto value, auto low) {
    if (value < low) throw cli::ConfigError(fmt::format("{}: must be >= {}, got {}", key, low, value));
  };
  auto positive = [](const char* key, double value) {
    if (!(value > 0.0)) throw cli::ConfigError(fmt::format("{}: must be > 0, got {}", key, value));
  };
  positive("optimizer.lr", m.lr);
  at_least("optimizer.momentum", m.momentum, 0.0);
  at_least("optimizer.weight_decay", m.weight_decay, 0.0);
  at_least("lr_scheduler.step_size", m.scheduler_step_size, int64_t{0});
  positive("lr_scheduler.gamma", m.scheduler_gamma);
  at_least("model.kernel_size", m.kernel_size, int64_t{1});
  at_least("model.loss_border", m.loss_border, int64_t{0});
  at_least("online.publish_every_n_steps", o.publish_every_n_steps, int64_t{1});
  at_least("online.num_threads", num_threads, int64_t{0});
  at_least("online.max_steps", o.max_steps, int64_t{-1});
  at_least("stream.capacity", s.capacity, int64_t{1});
  at_least("stream.batch_size", s.batch_size, int64_t{1});
  at_least("stream.steps_per_epoch", s.steps_per_epoch, int64_t{1});
  at_least("stream.min_samples", s.min_samples, int64_t{0});
  at_least("stream.seed", stream_seed, int64_t{0});
}

OnlineConfig read(const YAML::Node& root) {
  if (!root.IsMap()) throw cli::ConfigError("expected a mapping at the top (model:, optimizer:, ...)");
  static const std::set<std::string> kSections{"model", "loss", "optimizer", "lr_scheduler", "seed",
                                               "online", "stream", "trainer"};
  for (const auto& entry : root) {
    const std::string key = entry.first.as<std::string>();
    if (kSections.count(key) == 0) {
      throw cli::ConfigError(fmt::format("{}: unknown key (known: {})", key, fmt::join(kSections, ", ")));
    }
  }
  OnlineConfig config;
  ModelSpec& m = config.model;

  cli::ConfigSection model = sub(root, "model");
  m.type = model.get<std::string>("type", m.type);
  m.layers = model.get<std::vector<int64_t>>("layers", m.layers);
  m.activation = model.get<std::string>("activation", m.activation);
  m.kernel_size = model.get<int64_t>("kernel_size", m.kernel_size);
  m.residual = model.get<bool>("residual", m.residual);
  m.loss_border = model.get<int64_t>("loss_border", m.loss_border);
  m.path = model.get<std::string>("path", "");
  check_all_read(model);

  if (root["loss"]) m.loss = root["loss"].as<std::string>();

  cli::ConfigSection optimizer = sub(root, "optimizer");
  m.optimizer = optimizer.get<std::string>("type", m.optimizer);
  m.lr = optimizer.get<double>("lr", m.lr);
  m.momentum = optimizer.get<double>("momentum", m.momentum);
  m.weight_decay = optimizer.get<double>("weight_decay", m.weight_decay);
  check_all_read(optimizer);

  cli::ConfigSection scheduler = sub(root, "lr_scheduler");
  m.scheduler_step_size = scheduler.get<int64_t>("step_size", m.scheduler_step_size);
  m.scheduler_gamma = scheduler.get<double>("gamma", m.scheduler_gamma);
  check_all_read(scheduler);

  if (root["seed"]) config.seed = root["seed"].as<uint64_t>();

  OnlineOptions& o = config.options;
  cli::ConfigSection online = sub(root, "online");
  o.publish_every_n_steps = online.get<int64_t>("publish_every_n_steps", o.publish_every_n_steps);
  const int64_t threads = online.get<int64_t>("num_threads", 0);  // 0: LibTorch's default
  if (threads > 0) o.num_threads = threads;
  o.max_steps = online.get<int64_t>("max_steps", o.max_steps);
  o.checkpoint_dir = online.get<std::string>("checkpoint_dir", "");
  o.checkpoint_buffer = online.get<bool>("checkpoint_buffer", o.checkpoint_buffer);
  config.log_dir = online.get<std::string>("log_dir", "");
  const std::string nonfinite = online.get<std::string>("on_nonfinite", "stop");
  if (nonfinite == "stop") {
    o.on_nonfinite = OnNonFinite::Stop;
  } else if (nonfinite == "skip") {
    o.on_nonfinite = OnNonFinite::Skip;
  } else {
    throw cli::ConfigError(fmt::format("online.on_nonfinite: '{}' is not one of stop, skip", nonfinite));
  }
  check_all_read(online);

  cli::ConfigSection stream = sub(root, "stream");
  SampleStreamOptions& s = o.stream;
  s.capacity = stream.get<int64_t>("capacity", s.capacity);
  s.when_full = parse_when_full(stream.get<std::string>("when_full", "block"));
  s.batch_size = stream.get<int64_t>("batch_size", s.batch_size);
  s.steps_per_epoch = stream.get<int64_t>("steps_per_epoch", s.steps_per_epoch);
  const int64_t stream_seed = stream.get<int64_t>("seed", 0);
  s.seed = static_cast<uint64_t>(stream_seed);
  s.min_samples = stream.get<int64_t>("min_samples", s.min_samples);
  check_all_read(stream);

  cli::ConfigSection trainer = sub(root, "trainer");
  o.trainer = cli::read_options(trainer, TrainerOptions());
  check_values(config, threads, static_cast<int64_t>(stream_seed));
  return config;
}

}  // namespace

OnlineConfig OnlineConfig::from_yaml(const std::string& text, const std::string& source) {
  try {
    return read(YAML::Load(text));
  } catch (const YAML::Exception& e) {
    throw std::invalid_argument(fmt::format("{}: not valid YAML: {}", source, e.what()));
  } catch (const std::exception& e) {
    throw std::invalid_argument(fmt::format("{}: {}", source, e.what()));
  }
}

OnlineConfig OnlineConfig::from_yaml_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument(fmt::format("{}: cannot read the configuration file", path.string()));
  std::stringstream text;
  text << in.rdbuf();
  return from_yaml(text.str(), path.string());
}

std::unique_ptr<OnlineTrainer> OnlineConfig::make_trainer(std::optional<int64_t> communicator) const {
  OnlineOptions o = options;
  TrainerOptions& trainer = o.trainer;
  if (communicator) trainer.mpi_communicator(*communicator);
  // One file serves any rank count (a communicator's ranks: Platform::for_options).
  const Platform platform = Platform::detect_for(trainer);
  if (!communicator && platform.world_size > 1 && trainer.devices() == "auto") {
    trainer.devices(std::to_string(platform.world_size / std::max<int64_t>(1, trainer.num_nodes())));
  }
  torch::manual_seed(seed);
  const ModelSpec spec = model;
  OnlineTrainer::ModuleFactory factory =
      OnlineModelRegistry::find(spec.type).value_or([spec]() -> std::shared_ptr<LightningModule> {
        return std::make_shared<ConfiguredModel>(spec);
      });
  std::vector<std::shared_ptr<Logger>> loggers;
  if (!log_dir.empty()) loggers.push_back(std::make_shared<CSVLogger>(log_dir));
  return std::make_unique<OnlineTrainer>(factory, o, loggers, platform);
}

}  // namespace fulgur
