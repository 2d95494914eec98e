#pragma once

// The flags the own-main examples share beside the Trainer's own (read by
// fulgur::cli::parse_options with TrainerOptions and the example's options):
//   --ckpt_path PATH|last  --weights FILE (every rank writes its parameters,
//   one flat tensor: rank 0 to FILE, rank r to FILE.rank<r>, so a test can
//   compare the replicas)
#include <fulgur/fulgur.hpp>

#include <fstream>
#include <string>

namespace examples {

#define EXAMPLES_RUN_FLAGS(X)                                                                          \
  X(std::string, ckpt_path, "", "checkpoint to start from: a file, last, or empty", fulgur::check::Any{}) \
  X(std::string, weights, "", "file each rank writes its parameters to (rank r: FILE.rank<r>)", fulgur::check::Any{})

struct RunFlags {
  FULGUR_OPTIONS(RunFlags, EXAMPLES_RUN_FLAGS)
};

/// The Trainer options the examples start from: CPU, one process, no progress bar.
inline fulgur::TrainerOptions example_trainer_options() {
  return fulgur::TrainerOptions().accelerator(fulgur::AcceleratorKind::Cpu).devices(1).enable_progress_bar(false);
}

/// --weights: every rank writes its parameters as one flat tensor.
inline void write_weights(const RunFlags& flags, const torch::nn::Module& model, int64_t rank) {
  if (flags.weights().empty()) return;
  std::vector<torch::Tensor> flat;
  for (const auto& p : model.parameters()) flat.push_back(p.detach().flatten());
  const std::vector<char> bytes = torch::pickle_save(torch::cat(flat));
  const std::string path = flags.weights() + (rank == 0 ? "" : ".rank" + std::to_string(rank));
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace examples
