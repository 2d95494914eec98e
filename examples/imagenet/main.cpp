// ImageNet classification from image folders, an index file or HDF5 packs
// (see fulgur_pack). Every option is a flag or a YAML key:
//
//   build/bin/imagenet fit --config examples/imagenet/config.yaml --data.root /data/imagenet
//   build/bin/imagenet fit --data.root packs/ --data.format hdf5 --trainer.devices 4
//
// At the end of training each rank prints how many batches it ran, the shape
// of its first input batch, and how many bad images it skipped
// (--data.skip_bad_samples true), so a run over damaged data can be checked
// for equal steps on every rank.
#include "imagenet_classifier.hpp"
#include "imagenet_data.hpp"

int main(int argc, char** argv) {
  return fulgur::cli::run<examples::ImageNetClassifier, examples::ImageNetData>(argc, argv);
}
