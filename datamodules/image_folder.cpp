#include <fulgur/datamodules/image_folder.hpp>

#include <fulgur/datamodules/data_error.hpp>
#include <fulgur/datamodules/image_codec.hpp>
#include <fulgur/datamodules/image_decode.hpp>
#include <fulgur/datamodules/transforms.hpp>

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace fulgur {

namespace {

std::string quoted(const std::filesystem::path& path) { return "'" + path.string() + "'"; }

bool is_hidden(const std::filesystem::path& path) {
  const std::string name = path.filename().string();
  return !name.empty() && name.front() == '.';
}

// c10::Error::what() carries a C++ backtrace; users want the one-line reason.
std::string reason_of(const std::exception& error) {
  if (const auto* torch_error = dynamic_cast<const c10::Error*>(&error)) return torch_error->what_without_backtrace();
  return error.what();
}

}  // namespace

ImageFolder::ImageFolder(std::filesystem::path root, ImageTransform transform)
    : root_(std::move(root)), transform_(std::move(transform)) {
  namespace fs = std::filesystem;
  const char* where = "[ImageFolder::ImageFolder] ";
  std::error_code error;
  if (!fs::exists(root_, error)) throw DataError(where + ("root " + quoted(root_)) + " does not exist");
  if (!fs::is_directory(root_, error)) throw DataError(where + ("root " + quoted(root_)) + " is not a directory");

  for (const auto& entry : fs::directory_iterator(root_)) {
    if (entry.is_directory() && !is_hidden(entry.path())) classes_.push_back(entry.path().filename().string());
  }
  if (classes_.empty()) {
    throw DataError(where + ("no class folders in " + quoted(root_)) +
                             "; expected one sub-folder of images per class");
  }
  std::sort(classes_.begin(), classes_.end());

  for (size_t label = 0; label < classes_.size(); ++label) {
    const fs::path class_dir = root_ / classes_[label];
    std::vector<fs::path> images;
    auto it = fs::recursive_directory_iterator(class_dir, fs::directory_options::follow_directory_symlink);
    for (; it != fs::recursive_directory_iterator(); ++it) {
      if (is_hidden(it->path())) {
        if (it->is_directory()) it.disable_recursion_pending();
        continue;
      }
      // Not only regular files: a dangling link or a FIFO named like an image
      // is reported by get() with its reason instead of silently vanishing.
      if (!it->is_directory() && has_image_extension(it->path())) images.push_back(it->path());
    }
    if (images.empty()) {
      throw DataError(where + ("class folder " + quoted(class_dir)) + " contains no images (.jpg, .jpeg or .png)");
    }
    std::sort(images.begin(), images.end());
    for (auto& image : images) samples_.emplace_back(std::move(image), static_cast<int64_t>(label));
  }
}

Example ImageFolder::get(int64_t index) const {
  if (index < 0 || index >= size()) {
    throw std::out_of_range("[ImageFolder::get] index " + std::to_string(index) + " is outside [0, " +
                            std::to_string(size()) + ")");
  }
  const auto& [path, label] = samples_[static_cast<size_t>(index)];
  torch::Tensor image = read_image(path);  // its errors already name the path
  if (!transform_) return {to_float_chw(image), label};
  try {
    return {transform_(std::move(image), index), label};
  } catch (const std::exception& error) {
    throw DataError("[ImageFolder::get] transform failed on " + quoted(path) + ": " + reason_of(error));
  }
}

}  // namespace fulgur
