#pragma once

#include <fulgur/datamodules/images/encoded_image_source.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace fulgur {

/// One split of an image dataset packed into a single HDF5 file, as HPC
/// centres ship ImageNet to spare the parallel filesystem millions of small
/// files. The file holds the encoded images unchanged (JPEG/PNG bytes):
///
///   /images   uint8 [total bytes]   every encoded file, concatenated
///   /offsets  int64 [n + 1]         image i is images[offsets[i], offsets[i+1])
///   /labels   int64 [n]
///   /names    strings [n]           each image's path relative to the packed folder
///   /classes  strings [k]           class names, index = label
///   attribute "fulgur_format" = "packed-images-1" on the root group
///
/// Offsets, labels and names are read once when the file is opened; image
/// bytes are read on demand with a hyperslab. libhdf5 (Debian's serial
/// build) is not thread-safe, so reads are serialised by a lock held only
/// for the read, not for decoding.
///
/// HDF5 is optional: in a build configured with FULGUR_WITH_HDF5=OFF (no
/// libhdf5) the class is still here, and the constructor and write() throw
/// DataError naming the file and saying fulgur was built without HDF5.
class HDF5ImageFile : public EncodedImageSource {
 public:
  /// Opens `path`; a missing file or one that is not a pack throws DataError
  /// naming the path and what is wrong.
  explicit HDF5ImageFile(std::filesystem::path path);
  ~HDF5ImageFile() override;
  HDF5ImageFile(const HDF5ImageFile&) = delete;
  HDF5ImageFile& operator=(const HDF5ImageFile&) = delete;

  int64_t size() const override { return static_cast<int64_t>(labels_.size()); }
  std::string read(int64_t index) const override;
  int64_t label(int64_t index) const override { return labels_.at(static_cast<size_t>(index)); }
  /// "<file.h5>:<name in the pack>".
  std::string name(int64_t index) const override;
  const std::vector<std::string>& classes() const override { return classes_; }
  /// Names as stored (paths relative to the packed folder).
  const std::vector<std::string>& names() const { return names_; }
  const std::filesystem::path& path() const { return path_; }

  /// Packs `source` into `output`: written to "<output>.partial" and renamed
  /// when complete, so a failure (reported as DataError naming the image or
  /// the file) never leaves a half-written pack. `names` are stored per
  /// image (default: source.name(i)). Returns the number of image bytes.
  static int64_t write(const EncodedImageSource& source, const std::filesystem::path& output,
                       const std::vector<std::string>& names = {});

 private:
  std::filesystem::path path_;
  int64_t file_ = -1;    // hid_t
  int64_t images_ = -1;  // hid_t of /images
  std::vector<int64_t> offsets_;
  std::vector<int64_t> labels_;
  std::vector<std::string> names_;
  std::vector<std::string> classes_;
  mutable std::mutex mutex_;
};

}  // namespace fulgur
