// Segmentation from its own main(): dense float targets (a mask per image)
// through DatasetLoader worker threads, and an exact IoU over every rank.
//
//   build/bin/segmentation --strategy ddp --devices 2 --max_epochs 4
//   build/bin/segmentation --validate 1 --ckpt_path runs/segmentation/.../last.ckpt --devices 3
//
// Flags: --strategy, --devices, --batch_size (per process), --max_epochs,
// --max_steps, --root, --ckpt_path, --weights (see
// examples/common/example_flags.hpp); --num_workers N (loader threads),
// --validate 1 (only validate the --ckpt_path checkpoint).
#include "segmenter.hpp"
#include "shapes_data.hpp"

#include "../common/example_flags.hpp"

#include <fmt/format.h>

#include <iostream>

int main(int argc, char** argv) {
  try {
    const auto flags = examples::parse_flags(argc, argv,
                                             {{"batch_size", "32"},
                                              {"max_epochs", "4"},
                                              {"root", "runs/segmentation"},
                                              {"num_workers", "2"},
                                              {"validate", "0"}});
    fulgur::seed_everything(7);
    examples::Segmenter model;
    examples::ShapesData data(std::stoll(flags.at("batch_size")), std::stoll(flags.at("num_workers")));
    fulgur::Trainer trainer(examples::trainer_options(flags));
    std::map<std::string, double> metrics;
    if (flags.at("validate") == "1") {
      metrics = trainer.validate(model, data, flags.at("ckpt_path"));
    } else {
      trainer.fit(model, data, flags.at("ckpt_path"));
      examples::write_weights(flags, model, trainer.global_rank());
      metrics = trainer.callback_metrics();
    }
    if (trainer.is_global_zero()) {
      std::cout << fmt::format("val_iou {:.12f} val_dice {:.12f} val_images {}", metrics.at("val_iou"),
                               metrics.at("val_dice"), metrics.at("val_images"))
                << std::endl;
    }
    return trainer.exit_code();  // 143 after SIGTERM, a failed peer's code
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return 1;
  }
}
