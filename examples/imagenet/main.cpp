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
#include "lit_classifier.hpp"

#include <fulgur/datamodules/imagenet.hpp>

#include <iostream>

namespace {

// The ImageNet recipe's model: ResNet-50, 1000 classes, SGD lr 0.1 with
// momentum 0.9, weight decay 1e-4, divided by 10 every 30 epochs.
examples::LitClassifier::Options imagenet_defaults() {
  examples::LitClassifier::Options o;
  o.arch = "resnet50";
  o.num_classes = 1000;
  o.lr = 0.1;
  o.weight_decay = 1e-4;
  o.lr_step_size = 30;
  return o;
}

class ImageNetClassifier : public examples::LitClassifier {
 public:
  explicit ImageNetClassifier(fulgur::cli::ConfigSection& config) : LitClassifier(config, imagenet_defaults()) {}
  void on_train_batch_end(const torch::Tensor& loss, const fulgur::Batch& batch, int64_t batch_idx) override {
    LitClassifier::on_train_batch_end(loss, batch, batch_idx);
    if (train_batches_++ == 0) first_input_ = batch.input.sizes().vec();
  }
  void on_train_end() override {
    LitClassifier::on_train_end();
    std::cout << "imagenet: rank " << trainer()->strategy().global_rank() << " ran " << train_batches_
              << " training batches, inputs " << c10::IntArrayRef(first_input_) << std::endl;
  }

 private:
  int64_t train_batches_ = 0;
  std::vector<int64_t> first_input_;  // the shape the data pipeline gave the first batch
};

class ImageNetData : public fulgur::ImageNet {
 public:
  explicit ImageNetData(fulgur::cli::ConfigSection& config) : ImageNet(config) {}
  void teardown(fulgur::Stage stage) override {
    ImageNet::teardown(stage);
    if (options().skip_bad_samples()) {
      std::cout << "imagenet: skipped " << skipped_train_samples() << " bad training and " << skipped_val_samples()
                << " bad validation images" << std::endl;
    }
  }
};

}  // namespace

int main(int argc, char** argv) { return fulgur::cli::run<ImageNetClassifier, ImageNetData>(argc, argv); }
