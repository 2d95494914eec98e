#include <fulgur/trainer/cli/trainer_options_reader.hpp>

#include <fulgur/callbacks/loggers/make_loggers.hpp>
#include <fulgur/trainer/cli/options_yaml.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iostream>

namespace fulgur::cli {
namespace {

// Spellings from before the ddp options had a section of their own.
constexpr const char* kMovedToDdp[] = {"find_unused_parameters", "bucket_cap_mb", "broadcast_buffers"};

}  // namespace

TrainerOptions read_trainer_options(ConfigSection& s, YAML::Node trainer) {
  if (trainer.IsMap()) {
    for (const char* key : kMovedToDdp) {
      if (!trainer[key].IsDefined()) continue;
      std::cerr << fmt::format("fulgur: warning: trainer.{0} is deprecated; use trainer.ddp.{0}", key) << std::endl;
      if (!trainer["ddp"].IsDefined() || trainer["ddp"].IsNull()) trainer["ddp"] = YAML::Node(YAML::NodeType::Map);
      trainer["ddp"][key] = trainer[key];
      trainer.remove(key);
    }
    // Lightning accepts fast_dev_run: true (one batch) as well as a count.
    const YAML::Node fast = trainer["fast_dev_run"];
    bool flag = false;
    if (fast.IsDefined() && fast.IsScalar() && YAML::convert<bool>::decode(fast, flag) && fast.Scalar() != "0" &&
        fast.Scalar() != "1") {
      trainer["fast_dev_run"] = flag ? 1 : 0;
    }
  }
  TrainerOptions options = read_options<TrainerOptions>(s, TrainerOptions(), {"logger", "callbacks"});
  options.logger(!read_logger_names(s).empty());
  return options;
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
      if (!item.IsScalar()) s.fail("logger", expected, detail::node_text(node));
      names.push_back(item.Scalar());
    }
  } else if (!node.IsNull()) {
    s.fail("logger", expected, detail::node_text(node));
  }
  for (size_t i = 0; i < names.size(); ++i) {
    if (std::find(known.begin(), known.end(), names[i]) == known.end()) s.fail("logger", expected, detail::node_text(node));
    if (std::count(names.begin(), names.end(), names[i]) > 1) {
      s.fail("logger", "each logger at most once", detail::node_text(node));
    }
  }
  return names;
}

}  // namespace fulgur::cli
