// A sequence classifier trained from its own main(), no YAML: the strategy
// and the number of processes are Trainer options, and the Trainer starts
// the other ranks itself.
//
//   build/bin/sequence_classifier --devices 2 --strategy horovod --max_epochs 3
//
// Flags: every TrainerOptions field (--devices, --strategy, --max_epochs,
// --default_root_dir, ...), --batch_size (per process), --optimizer (adam,
// or sgd: a step --cuda_graph true captures), --ckpt_path, --weights;
// --help lists them.
#include "sequence_classifier.hpp"
#include "sequence_data.hpp"

#include "../common/run_flags.hpp"

#include <iostream>

#define SEQUENCE_FLAGS(X)                                                                          \
  X(int64_t, batch_size, 32, "sequences per process and batch", fulgur::check::Positive{})         \
  X(std::string, optimizer, "adam", "adam, or sgd (a step --cuda_graph true can capture)",          \
    (fulgur::check::OneOf{{"adam", "sgd"}}))

struct SequenceFlags {
  FULGUR_OPTIONS(SequenceFlags, SEQUENCE_FLAGS)
};

int main(int argc, char** argv) {
  return fulgur::cli::run_guarded([&] {
    const auto [trainer_options, run, flags] = fulgur::cli::parse_options(
        argc, argv, examples::example_trainer_options().max_epochs(4).default_root_dir("runs/sequence"),
        examples::RunFlags(), SequenceFlags());
    fulgur::seed_everything(7);
    examples::SequenceClassifier model(/*vocab=*/8, /*dim=*/16, /*lr=*/flags.optimizer() == "sgd" ? 0.5 : 0.02,
                                       /*sgd=*/flags.optimizer() == "sgd");
    examples::SequenceData data(flags.batch_size(), /*vocab=*/8);
    fulgur::Trainer trainer(trainer_options);
    trainer.fit(model, data, run.ckpt_path());
    examples::write_weights(run, model, trainer.global_rank());
    // No validation (--limit_val_batches 0) leaves no val_acc.
    if (trainer.is_global_zero() && trainer.state().callback_metrics().count("val_acc")) {
      std::cout << "val_acc " << trainer.state().callback_metrics().at("val_acc") << std::endl;
    }
    return trainer.exit_code();  // 143 after SIGTERM, a failed peer's code
  });
}
