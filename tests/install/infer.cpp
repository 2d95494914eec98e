// After training, without a Trainer: rebuilds the consumer's model from a
// checkpoint (full or sharded) and predicts; loads the same weights into a
// model without the ShardedUnit wrapper; shows what a weights-file reader
// says about a checkpoint.
//
//   infer CHECKPOINT
#include "line_model.hpp"

#include <iomanip>
#include <iostream>

// The same layers, unwrapped: its weights are "fc.weight", the checkpoint's "fc.module.weight".
struct PlainLine : torch::nn::Module {
  PlainLine() {
    fc = register_module("fc", torch::nn::Linear(1, 8));
    out = register_module("out", torch::nn::Linear(8, 1));
  }
  torch::nn::Linear fc{nullptr}, out{nullptr};
};

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: infer CHECKPOINT" << std::endl;
    return 2;
  }
  try {
    const auto model = fulgur::load_from_checkpoint<Line>(argv[1]);
    torch::NoGradGuard no_grad;
    const double y = model->forward(torch::tensor({{0.5f}})).item<double>();
    PlainLine plain;
    fulgur::load_checkpoint_weights(plain, argv[1]);
    const double plain_y = plain.out->forward(plain.fc->forward(torch::tensor({{0.5f}}))).item<double>();
    std::cout << "lr=" << model->lr << std::fixed << std::setprecision(1) << " y(0.5)=" << y
              << " plain y(0.5)=" << plain_y << std::endl;
    try {
      fulgur::read_state_dict(argv[1]);
    } catch (const std::invalid_argument& e) {
      std::cout << e.what() << std::endl;
    }
    return std::abs(y - 2.5) < 0.05 && y == plain_y ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "infer: " << e.what() << std::endl;
    return 1;
  }
}
