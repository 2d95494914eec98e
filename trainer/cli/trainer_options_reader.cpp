#include <fulgur/trainer/cli/trainer_options_reader.hpp>

#include <fulgur/callbacks/loggers/make_loggers.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace fulgur::cli {
namespace {

std::string scalar_text(const YAML::Node& node) {
  if (node.IsScalar()) return node.Scalar();
  YAML::Emitter out;
  out << YAML::Flow << node;
  return out.c_str();
}

bool parse_int(const std::string& text, int64_t& out) {
  try {
    size_t used = 0;
    out = std::stoll(text, &used);
    return used == text.size();
  } catch (const std::exception&) {
    return false;
  }
}

CountOrFraction read_count_or_fraction(ConfigSection& s, const std::string& key, const CountOrFraction& fallback) {
  const YAML::Node node = s.raw(key, YAML::Node(fallback.to_string()));
  const std::string text = scalar_text(node);
  int64_t count = 0;
  if (node.IsScalar() && parse_int(text, count)) return count;
  try {
    size_t used = 0;
    const double fraction = std::stod(text, &used);
    if (node.IsScalar() && used == text.size()) return fraction;
  } catch (const std::exception&) {
  }
  s.fail(key, "a batch count (integer) or a fraction (number with a decimal point)", text);
}

std::optional<int64_t> read_optional_int(ConfigSection& s, const std::string& key, std::optional<int64_t> fallback) {
  const YAML::Node node = s.raw(key, fallback ? YAML::Node(*fallback) : YAML::Node(YAML::NodeType::Null));
  if (node.IsNull()) return std::nullopt;
  int64_t value = 0;
  if (!node.IsScalar() || !parse_int(node.Scalar(), value)) s.fail(key, "an integer or null", scalar_text(node));
  return value;
}

// trainer.horovod is a mapping of its own; unknown keys in it are errors too.
HorovodSettings read_horovod_settings(ConfigSection& trainer) {
  const HorovodSettings d;
  ConfigSection h(trainer.raw("horovod", YAML::Node(YAML::NodeType::Null)), trainer.dotted("horovod"));
  HorovodSettings o;
  o.fusion_threshold_mb(h.get<double>("fusion_threshold_mb", d.fusion_threshold_mb()));
  o.cycle_time_ms(h.get<double>("cycle_time_ms", d.cycle_time_ms()));
  o.compression(h.choice("compression", d.compression(), {"none", "fp16"}));
  o.backward_passes_per_step(h.get<int64_t>("backward_passes_per_step", d.backward_passes_per_step()));
  o.stall_warning_s(h.get<double>("stall_warning_s", d.stall_warning_s()));
  const YAML::Node shutdown = h.raw("stall_shutdown_s", YAML::Node(YAML::NodeType::Null));
  if (!shutdown.IsNull()) {
    try {
      size_t used = 0;
      const double value = std::stod(scalar_text(shutdown), &used);
      if (!shutdown.IsScalar() || used != shutdown.Scalar().size()) throw std::invalid_argument("");
      o.stall_shutdown_s(value);
    } catch (const std::exception&) {
      h.fail("stall_shutdown_s", "a number of seconds or null", scalar_text(shutdown));
    }
  }
  o.broadcast_optimizer_state(h.get<bool>("broadcast_optimizer_state", d.broadcast_optimizer_state()));
  const auto unknown = h.unread_keys();
  if (!unknown.empty()) throw ConfigError(fmt::format("unknown key '{}'", unknown.front()));
  return o;
}

}  // namespace

TrainerOptions read_trainer_options(ConfigSection& s) {
  const TrainerOptions d;  // defaults
  TrainerOptions o;
  o.max_epochs(read_optional_int(s, "max_epochs", d.max_epochs()));
  o.max_steps(s.get<int64_t>("max_steps", d.max_steps()));
  o.min_epochs(s.get<int64_t>("min_epochs", d.min_epochs()));
  o.accelerator(s.choice("accelerator", d.accelerator(), {"auto", "cpu", "gpu", "cuda"}));
  o.devices(scalar_text(s.raw("devices", YAML::Node(d.devices()))));
  o.num_nodes(s.get<int64_t>("num_nodes", d.num_nodes()));
  o.strategy(s.get<std::string>("strategy", d.strategy()));
  o.precision(s.get<std::string>("precision", d.precision()));
  o.accumulate_grad_batches(s.get<int64_t>("accumulate_grad_batches", d.accumulate_grad_batches()));
  const YAML::Node clip = s.raw("gradient_clip_val", YAML::Node(YAML::NodeType::Null));
  if (!clip.IsNull()) {
    try {
      size_t used = 0;
      const double value = std::stod(scalar_text(clip), &used);
      if (!clip.IsScalar() || used != clip.Scalar().size()) throw std::invalid_argument("");
      o.gradient_clip_val(value);
    } catch (const std::exception&) {
      s.fail("gradient_clip_val", "a number or null", scalar_text(clip));
    }
  }
  o.gradient_clip_algorithm(s.choice("gradient_clip_algorithm", d.gradient_clip_algorithm(), {"norm", "value"}));
  o.val_check_interval(read_count_or_fraction(s, "val_check_interval", d.val_check_interval()));
  o.check_val_every_n_epoch(read_optional_int(s, "check_val_every_n_epoch", d.check_val_every_n_epoch()));
  o.limit_train_batches(read_count_or_fraction(s, "limit_train_batches", d.limit_train_batches()));
  o.limit_val_batches(read_count_or_fraction(s, "limit_val_batches", d.limit_val_batches()));
  o.limit_test_batches(read_count_or_fraction(s, "limit_test_batches", d.limit_test_batches()));
  o.limit_predict_batches(read_count_or_fraction(s, "limit_predict_batches", d.limit_predict_batches()));
  // fast_dev_run accepts a bool (true = 1 batch) or a batch count.
  const YAML::Node fdr = s.raw("fast_dev_run", YAML::Node(d.fast_dev_run()));
  int64_t fast = 0;
  const std::string fdr_text = scalar_text(fdr);
  if (fdr_text == "true") {
    fast = 1;
  } else if (fdr_text != "false" && !(fdr.IsScalar() && parse_int(fdr_text, fast))) {
    s.fail("fast_dev_run", "a boolean or a batch count", fdr_text);
  }
  o.fast_dev_run(fast);
  o.num_sanity_val_steps(s.get<int64_t>("num_sanity_val_steps", d.num_sanity_val_steps()));
  o.log_every_n_steps(s.get<int64_t>("log_every_n_steps", d.log_every_n_steps()));
  o.deterministic(s.get<bool>("deterministic", d.deterministic()));
  o.benchmark(s.get<bool>("benchmark", d.benchmark()));
  o.default_root_dir(s.get<std::string>("default_root_dir", d.default_root_dir()));
  o.enable_progress_bar(s.get<bool>("enable_progress_bar", d.enable_progress_bar()));
  o.logger(!read_logger_names(s).empty());
  o.enable_checkpointing(s.get<bool>("enable_checkpointing", d.enable_checkpointing()));
  o.process_group_timeout(s.get<double>("process_group_timeout", d.process_group_timeout()));
  o.node_rank(s.get<int64_t>("node_rank", d.node_rank()));
  o.find_unused_parameters(s.get<bool>("find_unused_parameters", d.find_unused_parameters()));
  o.bucket_cap_mb(s.get<double>("bucket_cap_mb", d.bucket_cap_mb()));
  o.broadcast_buffers(s.get<bool>("broadcast_buffers", d.broadcast_buffers()));
  o.use_distributed_sampler(s.get<bool>("use_distributed_sampler", d.use_distributed_sampler()));
  o.timeline(s.get<std::string>("timeline", d.timeline()));
  o.horovod(read_horovod_settings(s));
  return o;
}

std::vector<std::string> read_logger_names(ConfigSection& s) {
  const YAML::Node node = s.raw("logger", YAML::Node(true));
  const auto& known = known_logger_names();
  const std::string expected = fmt::format("true, false, or logger names from {} (a list or joined by commas)",
                                           fmt::join(known, ", "));
  std::vector<std::string> names;
  if (node.IsScalar()) {
    const std::string text = node.Scalar();
    bool enabled = false;
    if (YAML::convert<bool>::decode(node, enabled)) return enabled ? std::vector<std::string>{"csv"} : names;
    size_t start = 0;
    while (true) {
      const size_t comma = text.find(',', start);
      std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      part.erase(0, part.find_first_not_of(' '));
      part.erase(part.find_last_not_of(' ') + 1);
      names.push_back(part);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  } else if (node.IsSequence()) {
    for (const auto& item : node) {
      if (!item.IsScalar()) s.fail("logger", expected, scalar_text(node));
      names.push_back(item.Scalar());
    }
  } else if (!node.IsNull()) {
    s.fail("logger", expected, scalar_text(node));
  }
  for (size_t i = 0; i < names.size(); ++i) {
    if (std::find(known.begin(), known.end(), names[i]) == known.end()) s.fail("logger", expected, scalar_text(node));
    if (std::count(names.begin(), names.end(), names[i]) > 1) {
      s.fail("logger", "each logger at most once", scalar_text(node));
    }
  }
  return names;
}

}  // namespace fulgur::cli
