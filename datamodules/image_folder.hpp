#pragma once

#include <fulgur/datamodules/dataset.hpp>

#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace fulgur {

/// Maps a decoded image (uint8 [height, width, 3] RGB) and its sample index
/// to the model input. The index lets random augmentation be seeded per
/// sample, independent of which worker thread runs it. Called concurrently
/// from loader threads, so it must not mutate shared state.
using ImageTransform = std::function<torch::Tensor(torch::Tensor image_hwc_uint8, int64_t index)>;

/// torchvision's ImageFolder layout: `root/<class>/**/<image>.png`. Class
/// folders sorted by name get labels 0..k-1; the images of each class, found
/// recursively and sorted by path, follow each other in class order. Names
/// starting with '.' are skipped (editor and notebook clutter, not classes).
/// Images are files named .jpg, .jpeg or .png in any case, decoded by
/// read_image (image_decode.hpp), which sniffs the real format from the
/// bytes; a directory named like an image is a folder like any other. An
/// entry named like an image that cannot be read (a dangling link, a FIFO)
/// is listed, and get() reports why with a DataError.
class ImageFolder : public Dataset {
 public:
  /// Scans `root` once; throws DataError if it is missing, has no class
  /// folders, or a class folder holds no image. `transform` defaults to
  /// to_float_chw (transforms.hpp).
  explicit ImageFolder(std::filesystem::path root, ImageTransform transform = {});

  int64_t size() const override { return static_cast<int64_t>(samples_.size()); }
  /// Decodes and transforms image `index`. Decode and transform errors throw
  /// DataError naming the image's path.
  Example get(int64_t index) const override;

  const std::filesystem::path& root() const { return root_; }
  /// Class names (folder names), index = label.
  const std::vector<std::string>& classes() const { return classes_; }
  /// (path, label) of every image, index = sample index.
  const std::vector<std::pair<std::filesystem::path, int64_t>>& samples() const { return samples_; }

 private:
  std::filesystem::path root_;
  ImageTransform transform_;
  std::vector<std::string> classes_;
  std::vector<std::pair<std::filesystem::path, int64_t>> samples_;
};

}  // namespace fulgur
