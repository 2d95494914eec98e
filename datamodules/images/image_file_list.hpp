#pragma once

#include <fulgur/datamodules/images/encoded_image_source.hpp>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace fulgur {

/// Image files on disk with their labels, in a fixed order: the source of
/// an ImageDataset for class folders, ILSVRC's validation layout and
/// `path,label` index files. Every builder throws DataError naming the path
/// (and line) of what is missing or malformed; read() refuses missing,
/// empty and non-regular files (read_image_bytes) with their path.
class ImageFileList : public EncodedImageSource {
 public:
  ImageFileList(std::vector<std::pair<std::filesystem::path, int64_t>> samples, std::vector<std::string> classes);

  /// `root/<class>/**/<file>` with an image extension (.png, .jpg, .jpeg,
  /// any case): classes sorted by folder name get labels 0..k-1, files sorted
  /// by path (torchvision's ImageFolder). Names starting with '.' are
  /// skipped (editor and notebook clutter); a directory named like an image
  /// is a folder like any other, and an entry named like an image that is
  /// not a readable file (a dangling link, a FIFO) is listed and fails when
  /// read. A missing root, no class folder or an empty one is an error.
  static ImageFileList from_class_folders(const std::filesystem::path& root);
  /// ILSVRC's flat validation folder: `dir/<ImageId>.JPEG` labelled by
  /// LOC_val_solution.csv (`ImageId,PredictionString` whose first word is the
  /// wnid). `classes` (the train split's wnids) give the labels; an image
  /// without a row, a row without an image, or an unknown wnid is an error.
  static ImageFileList from_val_solution(const std::filesystem::path& dir, const std::filesystem::path& csv,
                                         const std::vector<std::string>& classes);
  /// A text index, one `path,label` per line (or `path label`); relative
  /// paths are under `base`; an optional header line `path,label` and blank
  /// lines are skipped. Labels are integers >= 0; classes are their decimal
  /// names 0..max unless `classes` is given, which then bounds the labels.
  static ImageFileList from_index_file(const std::filesystem::path& index, const std::filesystem::path& base,
                                       const std::vector<std::string>& classes = {});

  int64_t size() const override { return static_cast<int64_t>(samples_.size()); }
  std::string read(int64_t index) const override;
  int64_t label(int64_t index) const override { return samples_.at(static_cast<size_t>(index)).second; }
  std::string name(int64_t index) const override { return samples_.at(static_cast<size_t>(index)).first.string(); }
  const std::vector<std::string>& classes() const override { return classes_; }
  const std::vector<std::pair<std::filesystem::path, int64_t>>& samples() const { return samples_; }

 private:
  std::vector<std::pair<std::filesystem::path, int64_t>> samples_;
  std::vector<std::string> classes_;
};

}  // namespace fulgur
