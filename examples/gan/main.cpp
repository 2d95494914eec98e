// A GAN on a ring of eight Gaussians, trained from its own main() with
// manual optimization and two optimizers (see gan.hpp).
//
//   build/bin/gan --strategy ddp --devices 2 --max_epochs 8
//
// Flags: --strategy, --devices, --batch_size (per process), --max_epochs,
// --max_steps (optimizer steps: two per batch), --root, --ckpt_path,
// --weights (see examples/common/example_flags.hpp).
#include "gan.hpp"

#include "../common/example_flags.hpp"

#include <iostream>

int main(int argc, char** argv) {
  try {
    const auto flags = examples::parse_flags(argc, argv, {{"batch_size", "64"}, {"max_epochs", "8"}, {"root", "runs/gan"}});
    fulgur::seed_everything(7);
    examples::GAN model;
    examples::RingData data(std::stoll(flags.at("batch_size")), /*latent_dim=*/8);
    fulgur::Trainer trainer(examples::trainer_options(flags));
    trainer.fit(model, data, flags.at("ckpt_path"));
    examples::write_weights(flags, model, trainer.global_rank());
    const auto& m = trainer.callback_metrics();
    if (trainer.is_global_zero() && m.count("val_modes") != 0) {  // a run stopped before validation has none
      std::cout << "val_modes " << m.at("val_modes") << " val_quality " << m.at("val_quality") << std::endl;
    }
    return trainer.exit_code();  // 143 after SIGTERM, a failed peer's code
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return 1;
  }
}
