#pragma once

#include <fulgur/datamodules/images/image.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fulgur {

/// A labelled collection of images, the first part of an ImageDataset:
/// files on disk (ImageFileList: class folders, a `path,label` index, ...),
/// an HDF5 pack (HDF5ImageFile) or raw pixels (CIFAR10Batches). Methods are
/// const and called from several loader threads at once.
class EncodedImageSource {
 public:
  virtual ~EncodedImageSource() = default;
  virtual int64_t size() const = 0;
  /// The encoded (JPEG or PNG) bytes of image `index`; a missing or
  /// unreadable image throws DataError naming it.
  virtual std::string read(int64_t index) const = 0;
  /// Sources that store pixels rather than files (CIFAR-10's binary batches)
  /// return image `index` here and ImageDataset skips decoding; the default
  /// (nullopt) means "decode read(index)".
  virtual std::optional<Image> pixels(int64_t /*index*/) const { return std::nullopt; }
  /// The class index of image `index`.
  virtual int64_t label(int64_t index) const = 0;
  /// What names image `index` in messages: its path (or its path in the pack).
  virtual std::string name(int64_t index) const = 0;
  /// Class names, index = label.
  virtual const std::vector<std::string>& classes() const = 0;
};

}  // namespace fulgur
