// A GAN on a ring of eight Gaussians, trained from its own main() with
// manual optimization and two optimizers (see gan.hpp).
//
//   build/bin/gan --strategy ddp --devices 2 --max_epochs 8
//
// Flags: every TrainerOptions field (--devices, --strategy, --max_epochs,
// --max_steps: optimizer steps, two per batch; --default_root_dir, ...),
// --batch_size (per process), --ckpt_path, --weights; --help lists them.
#include "gan.hpp"

#include "../common/run_flags.hpp"

#include <iostream>

#define GAN_FLAGS(X) X(int64_t, batch_size, 64, "samples per process and batch", fulgur::check::Positive{})

struct GanFlags {
  FULGUR_OPTIONS(GanFlags, GAN_FLAGS)
};

int main(int argc, char** argv) {
  return fulgur::cli::run_guarded([&] {
    const auto [trainer_options, run, flags] = fulgur::cli::parse_options(
        argc, argv, examples::example_trainer_options().max_epochs(8).default_root_dir("runs/gan"),
        examples::RunFlags(), GanFlags());
    fulgur::seed_everything(7);
    examples::GAN model;
    examples::RingData data(flags.batch_size(), /*latent_dim=*/8);
    fulgur::Trainer trainer(trainer_options);
    trainer.fit(model, data, run.ckpt_path());
    examples::write_weights(run, model, trainer.global_rank());
    const auto& m = trainer.state().callback_metrics();
    if (trainer.is_global_zero() && m.count("val_modes") != 0) {  // a run stopped before validation has none
      std::cout << "val_modes " << m.at("val_modes") << " val_quality " << m.at("val_quality") << std::endl;
    }
    return trainer.exit_code();  // 143 after SIGTERM, a failed peer's code
  });
}
