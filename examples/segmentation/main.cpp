// Segmentation from its own main(): dense float targets (a mask per image)
// through DatasetLoader worker threads, and an exact IoU over every rank.
//
//   build/bin/segmentation --strategy ddp --devices 2 --max_epochs 4
//   build/bin/segmentation --validate_only true --ckpt_path runs/segmentation/.../last.ckpt --devices 3
//
// Flags: every TrainerOptions field (--devices, --strategy, --max_epochs,
// --default_root_dir, ...), --batch_size (per process), --num_workers
// (loader threads), --validate_only (only validate the --ckpt_path checkpoint),
// --ckpt_path, --weights; --help lists them.
#include "segmenter.hpp"
#include "shapes_data.hpp"

#include "../common/run_flags.hpp"

#include <fmt/format.h>

#include <iostream>

#define SEGMENTATION_FLAGS(X)                                                                         \
  X(int64_t, batch_size, 32, "images per process and batch", fulgur::check::Positive{})               \
  X(int64_t, num_workers, 2, "loader threads", fulgur::check::AtLeast{0})                             \
  X(bool, validate_only, false, "only validate the --ckpt_path checkpoint", fulgur::check::Any{})

struct SegmentationFlags {
  FULGUR_OPTIONS(SegmentationFlags, SEGMENTATION_FLAGS)
};

int main(int argc, char** argv) {
  return fulgur::cli::run_guarded([&] {
    const auto [trainer_options, run, flags] = fulgur::cli::parse_options(
        argc, argv, examples::example_trainer_options().max_epochs(4).default_root_dir("runs/segmentation"),
        examples::RunFlags(), SegmentationFlags());
    fulgur::seed_everything(7);
    examples::Segmenter model;
    examples::ShapesData data(flags.batch_size(), flags.num_workers());
    fulgur::Trainer trainer(trainer_options);
    std::map<std::string, double> metrics;
    if (flags.validate_only()) {
      metrics = trainer.validate(model, data, run.ckpt_path());
    } else {
      trainer.fit(model, data, run.ckpt_path());
      examples::write_weights(run, model, trainer.global_rank());
      metrics = trainer.state().callback_metrics();
    }
    if (trainer.is_global_zero()) {
      std::cout << fmt::format("val_iou {:.12f} val_dice {:.12f} val_images {}", metrics.at("val_iou"),
                               metrics.at("val_dice"), metrics.at("val_images"))
                << std::endl;
    }
    return trainer.exit_code();  // 143 after SIGTERM, a failed peer's code
  });
}
