// A sequence classifier trained from its own main(), no YAML: the strategy
// and the number of processes are Trainer options, and the Trainer starts
// the other ranks itself.
//
//   build/bin/sequence_classifier --devices 2 --strategy horovod --max_epochs 3
//
// Flags: --strategy, --devices, --batch_size (per process), --max_epochs,
// --max_steps, --root, --ckpt_path, --weights (see
// examples/common/example_flags.hpp).
#include "sequence_classifier.hpp"
#include "sequence_data.hpp"

#include "../common/example_flags.hpp"

#include <iostream>

int main(int argc, char** argv) {
  try {
    const auto flags =
        examples::parse_flags(argc, argv, {{"batch_size", "32"}, {"max_epochs", "4"}, {"root", "runs/sequence"}});
    fulgur::seed_everything(7);
    examples::SequenceClassifier model(/*vocab=*/8, /*dim=*/16, /*lr=*/0.02);
    examples::SequenceData data(std::stoll(flags.at("batch_size")), /*vocab=*/8);
    fulgur::Trainer trainer(examples::trainer_options(flags));
    trainer.fit(model, data, flags.at("ckpt_path"));
    examples::write_weights(flags, model, trainer.global_rank());
    if (trainer.is_global_zero()) std::cout << "val_acc " << trainer.callback_metrics().at("val_acc") << std::endl;
    return trainer.exit_code();  // 143 after SIGTERM, a failed peer's code
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return 1;
  }
}
