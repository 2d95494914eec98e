#include <fulgur/trainer/cli/trainer_options_reader.hpp>

#include <fulgur/trainer/cli/options_yaml.hpp>
#include <fulgur/trainer/cli/parse_options.hpp>  // read_options<TrainerOptions>: compiled once, in parse_options.cpp

#include <fmt/format.h>

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
  // The same defaults as a user's own main(): the ranks the Trainer starts
  // get the passive wait policy, and the program is never restarted.
  return read_options<TrainerOptions>(s, TrainerOptions(), {"logger", "callbacks"});
}

}  // namespace fulgur::cli
