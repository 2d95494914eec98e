// A sequence classifier trained from its own main(), no YAML: the strategy
// and the number of processes are Trainer options, and the Trainer starts
// the other ranks itself.
//
//   build/bin/sequence_classifier --devices 2 --strategy horovod --max_epochs 3
//
// Flags: --strategy auto|single_device|ddp|horovod, --devices N,
// --batch_size B (per process), --max_epochs N, --root DIR (run folder),
// --weights FILE (rank 0 writes the trained parameters there, one tensor).
#include "sequence_classifier.hpp"
#include "sequence_data.hpp"

#include <fstream>
#include <iostream>
#include <map>
#include <stdexcept>

namespace {

std::map<std::string, std::string> parse_flags(int argc, char** argv) {
  std::map<std::string, std::string> flags{{"strategy", "auto"}, {"devices", "1"},     {"batch_size", "32"},
                                           {"max_epochs", "4"},  {"root", "runs/sequence"}, {"weights", ""}};
  for (int i = 1; i < argc; ++i) {
    const std::string key = std::string(argv[i]).substr(2);
    if (std::string(argv[i]).rfind("--", 0) != 0 || !flags.count(key) || i + 1 >= argc) {
      throw std::invalid_argument("unknown or incomplete flag '" + std::string(argv[i]) + "' (see the top of main.cpp)");
    }
    flags[key] = argv[++i];
  }
  return flags;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const auto flags = parse_flags(argc, argv);
    fulgur::seed_everything(7);
    examples::SequenceClassifier model(/*vocab=*/8, /*dim=*/16, /*lr=*/0.02);
    examples::SequenceData data(std::stoll(flags.at("batch_size")), /*vocab=*/8);
    fulgur::Trainer trainer(fulgur::TrainerOptions()
                                .accelerator("cpu")
                                .devices(std::stoll(flags.at("devices")))
                                .strategy(flags.at("strategy"))
                                .max_epochs(std::stoll(flags.at("max_epochs")))
                                .default_root_dir(flags.at("root"))
                                .enable_progress_bar(false));
    trainer.fit(model, data);
    if (trainer.is_global_zero()) {
      std::cout << "val_acc " << trainer.callback_metrics().at("val_acc") << std::endl;
      if (!flags.at("weights").empty()) {
        std::vector<torch::Tensor> flat;
        for (const auto& p : model.parameters()) flat.push_back(p.detach().flatten());
        const std::vector<char> bytes = torch::pickle_save(torch::cat(flat));
        std::ofstream(flags.at("weights"), std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      }
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return 1;
  }
}
