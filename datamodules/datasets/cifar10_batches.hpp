#pragma once

#include <fulgur/datamodules/images/encoded_image_source.hpp>

#include <torch/torch.h>

#include <filesystem>
#include <string>
#include <vector>

namespace fulgur {

/// CIFAR-10 in its binary distribution (cifar-10-batches-bin), as the source
/// of an ImageDataset: the training split is data_batch_1.bin ..
/// data_batch_5.bin, the test split test_batch.bin, in that order. Each
/// record is 3073 bytes: the label (0-9), then the 32x32 red, green and blue
/// planes, row-major. The split is read into memory once (150 MB for
/// training); images are raw pixels, so pixels() serves them undecoded.
class CIFAR10Batches : public EncodedImageSource {
 public:
  static constexpr int64_t kSide = 32;
  static constexpr int64_t kRecordBytes = 1 + 3 * kSide * kSide;

  /// Reads `root`'s batch files of the split; a missing file, a size that
  /// is not a whole number of records, or a label > 9 throws DataError
  /// naming the file (and record).
  CIFAR10Batches(std::filesystem::path root, bool train);

  int64_t size() const override { return images_.size(0); }
  /// There are no encoded bytes: throws std::logic_error (use pixels()).
  std::string read(int64_t index) const override;
  std::optional<Image> pixels(int64_t index) const override;
  int64_t label(int64_t index) const override;
  /// "<file>[<record>]", e.g. ".../data_batch_2.bin[17]".
  std::string name(int64_t index) const override;
  /// airplane, automobile, bird, cat, deer, dog, frog, horse, ship, truck.
  const std::vector<std::string>& classes() const override;

  /// All images, uint8 [n, 32, 32, 3] (HWC), and labels, int64 [n].
  const torch::Tensor& images() const { return images_; }
  const torch::Tensor& labels() const { return labels_; }
  /// The batch file names of a split.
  static std::vector<std::string> files(bool train);

 private:
  void check_index(int64_t index, const char* where) const;

  torch::Tensor images_;
  torch::Tensor labels_;
  std::vector<std::pair<std::filesystem::path, int64_t>> files_;  // path, first record index
};

}  // namespace fulgur
