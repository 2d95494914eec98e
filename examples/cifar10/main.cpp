// CIFAR-10 image classification from the binary batches
// (cifar-10-batches-bin). Every option is a flag or a YAML key:
//
//   build/bin/cifar10 fit --config examples/cifar10/config.yaml --data.root /data/cifar-10-batches-bin
//   build/bin/cifar10 fit --print_config
#include "lit_classifier.hpp"

#include <fulgur/datamodules/datasets/cifar10.hpp>

int main(int argc, char** argv) {
  return fulgur::cli::run<examples::LitClassifier, fulgur::CIFAR10>(argc, argv);
}
