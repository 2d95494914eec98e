// A decoder-only transformer language model over the bytes of a real text:
// by default Python's pydoc topics (/usr/lib/python3.11/pydoc_data/topics.py,
// about 750 kB of English documentation from Debian's libpython3.11-stdlib).
// Trained with the fully sharded strategy from its own main():
//
//   build/bin/transformer_lm --devices 2 --strategy fsdp
//
// Flags: --strategy, --devices, --batch_size (per process), --max_epochs,
// --max_steps, --root, --ckpt_path, --weights (examples/common/example_flags.hpp),
// --sharding_strategy (FULL_SHARD, SHARD_GRAD_OP, NO_SHARD), --state_dict_type
// (full, sharded), --text, --layers, --dim, --heads, --context, --lr,
// --train_batches (per epoch, default 200: a short run), --val_batches (0 = none),
// --whole_after_fit (false: each rank keeps its shard after fit), --forward_prefetch
// (true/false), --backward_prefetch (BACKWARD_PRE, NONE), --activation_checkpointing
// (true: each block's forward runs again in backward instead of keeping its activations).
// Prints the validation perplexity, exp(val_loss), at the end.
#include "text_data.hpp"
#include "transformer_lm.hpp"

#include "../common/example_flags.hpp"

#include <cmath>
#include <iostream>

int main(int argc, char** argv) {
  try {
    const auto flags = examples::parse_flags(
        argc, argv,
        {{"batch_size", "16"}, {"max_epochs", "1"}, {"root", "runs/transformer_lm"}, {"sharding_strategy", "FULL_SHARD"},
         {"state_dict_type", "full"}, {"text", "/usr/lib/python3.11/pydoc_data/topics.py"}, {"layers", "4"},
         {"dim", "128"}, {"heads", "4"}, {"context", "128"}, {"lr", "0.001"}, {"val_batches", "20"},
         {"train_batches", "200"}, {"whole_after_fit", "true"},
         {"forward_prefetch", "false"}, {"backward_prefetch", "BACKWARD_PRE"}, {"activation_checkpointing", "false"}});
    fulgur::seed_everything(7);
    const int64_t context = std::stoll(flags.at("context"));
    examples::TransformerLM model(std::stoll(flags.at("layers")), std::stoll(flags.at("dim")),
                                  std::stoll(flags.at("heads")), context, std::stod(flags.at("lr")));
    examples::TextData data(flags.at("text"), context, std::stoll(flags.at("batch_size")));
    // Each block is a unit of its own (ShardedUnit); the embeddings and the head make the rest.
    fulgur::Trainer trainer(examples::trainer_options(flags)
                                .limit_train_batches(fulgur::CountOrFraction(std::stoll(flags.at("train_batches"))))
                                .limit_val_batches(fulgur::CountOrFraction(std::stoll(flags.at("val_batches"))))
                                .activation_checkpointing(flags.at("activation_checkpointing") == "true")
                                .fsdp(fulgur::FSDPOptions()
                                          .sharding_strategy(flags.at("sharding_strategy"))
                                          .state_dict_type(flags.at("state_dict_type"))
                                          .whole_after_fit(flags.at("whole_after_fit") == "true")
                                          .forward_prefetch(flags.at("forward_prefetch") == "true")
                                          .backward_prefetch(flags.at("backward_prefetch"))));
    trainer.fit(model, data, flags.at("ckpt_path"));
    examples::write_weights(flags, model, trainer.global_rank());
    if (trainer.is_global_zero() && trainer.callback_metrics().count("val_loss")) {
      const double val_loss = trainer.callback_metrics().at("val_loss");
      std::cout << "val_loss " << val_loss << " perplexity " << std::exp(val_loss) << std::endl;
    }
    return trainer.exit_code();
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return 1;
  }
}
