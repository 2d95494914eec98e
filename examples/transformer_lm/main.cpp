// A decoder-only transformer language model over the bytes of a real text:
// by default Python's pydoc topics (/usr/lib/python3.11/pydoc_data/topics.py,
// about 750 kB of English documentation from Debian's libpython3.11-stdlib).
// Trained with the fully sharded strategy from its own main():
//
//   build/bin/transformer_lm --devices 2 --strategy fsdp --fsdp.sharding_strategy SHARD_GRAD_OP
//   build/bin/transformer_lm --devices 4 --strategy model_parallel --model_parallel.tensor_parallel_size 2
//   build/bin/transformer_lm --devices 2 --strategy model_parallel --model_parallel.data_parallel ddp \
//       --model_parallel.pipeline_parallel_size 2 --model_parallel.pipeline_schedule zero_bubble
//
// Flags: every TrainerOptions field (--devices, --strategy, --max_steps,
// --limit_train_batches: per epoch, 200 here; --limit_val_batches: 0 = none;
// --activation_checkpointing true: each block's forward runs again in
// backward instead of keeping its activations; --fsdp.KEY VALUE, ...), the
// model's (--text, --layers, --dim, --heads, --context, --lr, --batch_size
// per process, --optimizer adamw or sgd: a step --cuda_graph true captures,
// --sequence_parallel),
// --ckpt_path, --weights; --help lists them.
// Prints the validation perplexity, exp(val_loss), at the end.
#include "text_data.hpp"
#include "transformer_lm.hpp"

#include "../common/run_flags.hpp"

#include <cmath>
#include <iostream>

// clang-format off
#define TRANSFORMER_LM_FLAGS(X)                                                                           \
  X(std::string, text, "/usr/lib/python3.11/pydoc_data/topics.py", "the text to model, as bytes",          \
    fulgur::check::NotEmpty{})                                                                             \
  X(int64_t, layers, 4, "transformer blocks (one ShardedUnit each)", fulgur::check::Positive{})            \
  X(int64_t, dim, 128, "model width", fulgur::check::Positive{})                                           \
  X(int64_t, heads, 4, "attention heads", fulgur::check::Positive{})                                       \
  X(int64_t, context, 128, "bytes of context", fulgur::check::Positive{})                                  \
  X(double, lr, 0.001, "AdamW learning rate", fulgur::check::Positive{})                                   \
  X(int64_t, batch_size, 16, "sequences per process and batch", fulgur::check::Positive{})                 \
  X(std::string, optimizer, "adamw", "adamw, or sgd (a step --cuda_graph true can capture; use --lr 0.1)", \
    (fulgur::check::OneOf{{"adamw", "sgd"}}))                                                              \
  X(bool, sequence_parallel, false,                                                                        \
    "under --strategy model_parallel: norms and residuals on each rank's chunk of the sequence",           \
    fulgur::check::Any{})
// clang-format on

struct TransformerLMFlags {
  FULGUR_OPTIONS(TransformerLMFlags, TRANSFORMER_LM_FLAGS)
};

int main(int argc, char** argv) {
  return fulgur::cli::run_guarded([&] {
    const auto [trainer_options, run, flags] = fulgur::cli::parse_options(
        argc, argv,
        examples::example_trainer_options()
            .max_epochs(1)
            .default_root_dir("runs/transformer_lm")
            .limit_train_batches(fulgur::CountOrFraction(200))
            .limit_val_batches(fulgur::CountOrFraction(20)),
        examples::RunFlags(), TransformerLMFlags());
    fulgur::seed_everything(7);
    examples::TransformerLM model(flags.layers(), flags.dim(), flags.heads(), flags.context(), flags.lr(),
                                 flags.optimizer() == "sgd", flags.sequence_parallel());
    examples::TextData data(flags.text(), flags.context(), flags.batch_size());
    // Each block is a unit of its own (ShardedUnit); the embeddings and the head make the rest.
    // The layers are built by the Trainer (configure_model): on a pipeline, this rank's only.
    fulgur::Trainer trainer(trainer_options);
    trainer.fit(model, data, run.ckpt_path());
    examples::write_weights(run, model, trainer.global_rank());
    if (trainer.is_global_zero() && trainer.state().callback_metrics().count("val_loss")) {
      const double val_loss = trainer.state().callback_metrics().at("val_loss");
      std::cout << "val_loss " << val_loss << " perplexity " << std::exp(val_loss) << std::endl;
    }
    return trainer.exit_code();
  });
}
