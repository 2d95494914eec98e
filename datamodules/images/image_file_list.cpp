#include <fulgur/datamodules/images/image_file_list.hpp>

#include <fulgur/datamodules/data_error.hpp>
#include <fulgur/datamodules/images/codecs/image_codec.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

namespace fulgur {

namespace {

namespace fs = std::filesystem;

bool is_hidden(const fs::path& path) {
  const std::string name = path.filename().string();
  return !name.empty() && name.front() == '.';
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::string trim(const std::string& text) {
  const auto begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(" \t\r\n") - begin + 1);
}

void require_directory(const fs::path& dir, const char* where, const std::string& what) {
  std::error_code error;
  if (!fs::is_directory(dir, error)) throw DataError(std::string(where) + " " + what + " " + quoted(dir) + " does not exist or is not a folder");
}

}  // namespace

ImageFileList::ImageFileList(std::vector<std::pair<fs::path, int64_t>> samples, std::vector<std::string> classes)
    : samples_(std::move(samples)), classes_(std::move(classes)) {}

ImageFileList ImageFileList::from_class_folders(const fs::path& root) {
  const char* where = "[ImageFileList::from_class_folders]";
  require_directory(root, where, "root");
  std::vector<std::string> classes;
  for (const auto& entry : fs::directory_iterator(root)) {
    if (entry.is_directory() && !is_hidden(entry.path())) classes.push_back(entry.path().filename().string());
  }
  if (classes.empty()) {
    throw DataError(std::string(where) + " no class folders in " + quoted(root) +
                    "; expected one sub-folder of images per class");
  }
  std::sort(classes.begin(), classes.end());
  std::vector<std::pair<fs::path, int64_t>> samples;
  for (size_t label = 0; label < classes.size(); ++label) {
    const fs::path dir = root / classes[label];
    std::vector<fs::path> images;
    auto it = fs::recursive_directory_iterator(dir, fs::directory_options::follow_directory_symlink);
    for (; it != fs::recursive_directory_iterator(); ++it) {
      if (is_hidden(it->path())) {
        if (it->is_directory()) it.disable_recursion_pending();
        continue;
      }
      // Not is_regular_file(): a dangling link or unreadable file is listed
      // and fails when read, where skip_bad_samples can handle it.
      if (!it->is_directory() && has_image_extension(it->path())) images.push_back(it->path());
    }
    if (images.empty()) throw DataError(std::string(where) + " class folder " + quoted(dir) + " contains no images (.jpg, .jpeg or .png)");
    std::sort(images.begin(), images.end());
    for (auto& image : images) samples.emplace_back(std::move(image), static_cast<int64_t>(label));
  }
  return ImageFileList(std::move(samples), std::move(classes));
}

ImageFileList ImageFileList::from_val_solution(const fs::path& dir, const fs::path& csv,
                                               const std::vector<std::string>& classes) {
  const char* where = "[ImageFileList::from_val_solution]";
  require_directory(dir, where, "validation folder");
  std::ifstream in(csv);
  if (!in) throw DataError(std::string(where) + " cannot open " + quoted(csv) + ": " + std::strerror(errno));
  std::map<std::string, int64_t> label_of_class;
  for (size_t i = 0; i < classes.size(); ++i) label_of_class[classes[i]] = static_cast<int64_t>(i);
  std::map<std::string, int64_t> label_of_image;
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    line = trim(line);
    if (line.empty() || (number == 1 && line.rfind("ImageId", 0) == 0)) continue;
    const auto comma = line.find(',');
    std::istringstream prediction(comma == std::string::npos ? "" : line.substr(comma + 1));
    std::string wnid;
    prediction >> wnid;
    const std::string at = std::string(where) + " " + quoted(csv) + " line " + std::to_string(number) + ": ";
    if (comma == std::string::npos || wnid.empty()) {
      throw DataError(at + "expected 'ImageId,wnid ...', got '" + line + "'");
    }
    const auto label = label_of_class.find(wnid);
    if (label == label_of_class.end()) throw DataError(at + "class '" + wnid + "' is not one of the training classes");
    label_of_image[trim(line.substr(0, comma))] = label->second;
  }
  std::vector<std::pair<fs::path, int64_t>> samples;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_directory() || is_hidden(entry.path()) || !has_image_extension(entry.path())) continue;
    const auto label = label_of_image.find(entry.path().stem().string());
    if (label == label_of_image.end()) {
      throw DataError(std::string(where) + " image " + quoted(entry.path()) + " has no row in " + quoted(csv));
    }
    samples.emplace_back(entry.path(), label->second);
    label_of_image.erase(label);
  }
  if (!label_of_image.empty()) {
    throw DataError(std::string(where) + " " + quoted(csv) + " lists image '" + label_of_image.begin()->first +
                    "' but " + quoted(dir) + " has no such image");
  }
  if (samples.empty()) throw DataError(std::string(where) + " validation folder " + quoted(dir) + " contains no images (.jpg, .jpeg or .png)");
  std::sort(samples.begin(), samples.end());
  return ImageFileList(std::move(samples), classes);
}

ImageFileList ImageFileList::from_index_file(const fs::path& index, const fs::path& base,
                                             const std::vector<std::string>& classes) {
  const char* where = "[ImageFileList::from_index_file]";
  std::ifstream in(index);
  if (!in) throw DataError(std::string(where) + " cannot open " + quoted(index) + ": " + std::strerror(errno));
  std::vector<std::pair<fs::path, int64_t>> samples;
  int64_t max_label = -1;
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    line = trim(line);
    if (line.empty() || (number == 1 && lower(line) == "path,label")) continue;
    const std::string at = std::string(where) + " " + quoted(index) + " line " + std::to_string(number) + ": ";
    auto separator = line.rfind(',');
    if (separator == std::string::npos) separator = line.find_last_of(" \t");
    if (separator == std::string::npos) throw DataError(at + "expected 'path,label', got '" + line + "'");
    const std::string path = trim(line.substr(0, separator));
    const std::string label_text = trim(line.substr(separator + 1));
    int64_t label = -1;
    size_t used = 0;
    try {
      label = std::stoll(label_text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (path.empty() || used == 0 || used != label_text.size() || label < 0) {
      throw DataError(at + "expected 'path,label' with an integer label >= 0, got '" + line + "'");
    }
    if (!classes.empty() && label >= static_cast<int64_t>(classes.size())) {
      throw DataError(at + "label " + std::to_string(label) + " is outside the " + std::to_string(classes.size()) +
                      " classes");
    }
    max_label = std::max(max_label, label);
    const fs::path file(path);
    samples.emplace_back(file.is_absolute() ? file : base / file, label);
  }
  if (samples.empty()) throw DataError(std::string(where) + " " + quoted(index) + " lists no images");
  std::vector<std::string> names = classes;
  if (names.empty()) {
    for (int64_t label = 0; label <= max_label; ++label) names.push_back(std::to_string(label));
  }
  return ImageFileList(std::move(samples), std::move(names));
}

std::string ImageFileList::read(int64_t index) const {
  return read_image_bytes(samples_.at(static_cast<size_t>(index)).first);  // its errors name the path
}

}  // namespace fulgur
