// CINIC-10 image classification (or any data in its folder layout, such as
// the digits demo). Every option is a flag or a YAML key:
//
//   build/bin/cinic10 fit --config examples/cinic10/digits.yaml --trainer.max_epochs 3
//   build/bin/cinic10 fit --print_config
#include "lit_classifier.hpp"

#include <fulgur/datamodules/datasets/cinic10.hpp>

int main(int argc, char** argv) {
  return fulgur::cli::run<examples::LitClassifier, fulgur::CINIC10>(argc, argv);
}
