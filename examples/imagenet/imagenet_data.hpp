#pragma once

#include <fulgur/datamodules/datasets/imagenet.hpp>

#include <iostream>

namespace examples {

/// The ImageNet DataModule that prints, at teardown, how many bad images it
/// skipped (with skip_bad_samples), so a run over damaged data can be checked.
class ImageNetData : public fulgur::ImageNet {
 public:
  using ImageNet::ImageNet;

  void teardown(fulgur::Stage stage) override {
    ImageNet::teardown(stage);
    if (options().skip_bad_samples()) {
      std::cout << "imagenet: skipped " << skipped_train_samples() << " bad training and " << skipped_val_samples()
                << " bad validation images" << std::endl;
    }
  }
};

}  // namespace examples
