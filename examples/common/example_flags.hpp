#pragma once

// The flags the own-main examples (sequence, gan, segmentation) share:
//   --strategy auto|single_device|ddp|horovod  --devices N  --batch_size B (per process)
//   --max_epochs N  --max_steps N  --root DIR (run folder)  --ckpt_path PATH|last
//   --weights FILE (every rank writes its parameters, one flat tensor: rank 0
//   to FILE, rank r to FILE.rank<r>, so a test can compare the replicas)
#include <fulgur/fulgur.hpp>

#include <fstream>
#include <map>
#include <stdexcept>
#include <string>

namespace examples {

using Flags = std::map<std::string, std::string>;

/// `defaults` names every flag the program takes; anything else is an error.
inline Flags parse_flags(int argc, char** argv, Flags defaults) {
  for (const std::string common : {"strategy", "devices", "max_steps", "ckpt_path", "weights"}) {
    defaults.try_emplace(common, common == "strategy" ? "auto" : common == "devices" ? "1" : common == "max_steps" ? "-1" : "");
  }
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const std::string key = arg.rfind("--", 0) == 0 ? arg.substr(2) : "";
    if (key.empty() || !defaults.count(key) || i + 1 >= argc) {
      throw std::invalid_argument("unknown or incomplete flag '" + arg + "' (see the top of main.cpp)");
    }
    defaults[key] = argv[++i];
  }
  return defaults;
}

/// The Trainer options every example takes from its flags (CPU, no progress bar).
inline fulgur::TrainerOptions trainer_options(const Flags& flags) {
  return fulgur::TrainerOptions()
      .accelerator("cpu")
      .devices(std::stoll(flags.at("devices")))
      .strategy(flags.at("strategy"))
      .max_epochs(std::stoll(flags.at("max_epochs")))
      .max_steps(std::stoll(flags.at("max_steps")))
      .default_root_dir(flags.at("root"))
      .enable_progress_bar(false);
}

/// --weights: every rank writes its parameters as one flat tensor.
inline void write_weights(const Flags& flags, const torch::nn::Module& model, int64_t rank) {
  if (flags.at("weights").empty()) return;
  std::vector<torch::Tensor> flat;
  for (const auto& p : model.parameters()) flat.push_back(p.detach().flatten());
  const std::vector<char> bytes = torch::pickle_save(torch::cat(flat));
  const std::string path = flags.at("weights") + (rank == 0 ? "" : ".rank" + std::to_string(rank));
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace examples
