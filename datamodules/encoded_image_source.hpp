#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fulgur {

/// A labelled collection of encoded (still compressed) images: files on disk
/// (ImageFileList) or packed into one HDF5 file (HDF5ImageFile). Methods are
/// const and called from several loader threads at once.
class EncodedImageSource {
 public:
  virtual ~EncodedImageSource() = default;
  virtual int64_t size() const = 0;
  /// The encoded bytes of image `index`; a missing or unreadable image throws
  /// DataError naming it.
  virtual std::string read(int64_t index) const = 0;
  /// The class index of image `index`.
  virtual int64_t label(int64_t index) const = 0;
  /// What names image `index` in messages: its path (or its path in the pack).
  virtual std::string name(int64_t index) const = 0;
  /// Class names, index = label.
  virtual const std::vector<std::string>& classes() const = 0;
};

}  // namespace fulgur
