#pragma once

#include <fulgur/datamodules/dataset.hpp>
#include <fulgur/datamodules/image_folder.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace fulgur {

/// CIFAR-10 in its binary distribution (cifar-10-batches-bin): the training
/// split is data_batch_1.bin .. data_batch_5.bin, the test split
/// test_batch.bin, in that order. Each record is 3073 bytes: the label
/// (0-9), then the 32x32 red, green and blue planes, row-major. The split is
/// read into memory once (150 MB for training).
class CIFAR10 : public Dataset {
 public:
  static constexpr int64_t kSide = 32;
  static constexpr int64_t kRecordBytes = 1 + 3 * kSide * kSide;

  /// Reads `root`'s batch files of the split; a missing file, a size that
  /// is not a whole number of records, or a label > 9 throws DataError
  /// naming the file (and record). `transform` as ImageFolder's (default
  /// to_float_chw).
  CIFAR10(std::filesystem::path root, bool train, ImageTransform transform = {});

  int64_t size() const override { return images_.size(0); }
  Example get(int64_t index) const override;

  /// All images, uint8 [n, 32, 32, 3] (HWC), and labels, int64 [n].
  const torch::Tensor& images() const { return images_; }
  const torch::Tensor& labels() const { return labels_; }
  /// airplane, automobile, bird, cat, deer, dog, frog, horse, ship, truck.
  static const std::vector<std::string>& classes();
  /// The batch file names of a split.
  static std::vector<std::string> files(bool train);

 private:
  torch::Tensor images_;
  torch::Tensor labels_;
  ImageTransform transform_;
};

}  // namespace fulgur
