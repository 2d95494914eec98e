#pragma once

// Reference results of Pillow and torchvision, made by the checked-in
// tests/golden/make_image_golden.py with the venv's Python into
// build/image-golden: once per ctest run (the image_golden fixture), or by
// the first test that finds them missing or older than the script. Python
// with torchvision takes about 7 s of CPU to start: not once per test.
#include <fulgur/datamodules/images/image.hpp>

#include "test_support.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace fulgur::testing {

struct GoldenArray {
  int64_t dims[3] = {0, 0, 0};
  std::string dtype;
  std::vector<uint8_t> bytes;
};

class ImageGolden {
 public:
  static const ImageGolden& get() {
    static std::unique_ptr<ImageGolden> golden(new ImageGolden());
    return *golden;
  }

  std::filesystem::path file(const std::string& name) const { return dir_ / name; }

  const GoldenArray& array(const std::string& name) const {
    auto it = arrays_.find(name);
    if (it == arrays_.end()) throw std::runtime_error("no golden array " + name);
    return it->second;
  }

  const std::vector<int64_t>& param(const std::string& name) const {
    auto it = params_.find(name);
    if (it == params_.end()) throw std::runtime_error("no golden param " + name);
    return it->second;
  }

  /// A uint8 HWC golden array as an Image.
  Image image(const std::string& name) const {
    const GoldenArray& a = array(name);
    Image image(a.dims[0], a.dims[1]);
    std::memcpy(image.pixels.get(), a.bytes.data(), image.bytes());
    return image;
  }

 private:
  ImageGolden() : dir_(std::filesystem::path(FULGUR_BINARY_DIR) / "image-golden") {
    const std::filesystem::path script = std::filesystem::path(FULGUR_SOURCE_DIR) / "tests/golden/make_image_golden.py";
    const std::filesystem::path made = dir_ / "manifest.txt";  // the script writes it last
    if (!std::filesystem::exists(made) ||
        std::filesystem::last_write_time(made) < std::filesystem::last_write_time(script)) {
      const CommandResult result = run_command(std::string(FULGUR_PYTHON) + " " + script.string() + " " + dir_.string(), 300);
      if (result.exit_code != 0) throw std::runtime_error("make_image_golden.py failed:\n" + result.output);
    }
    std::ifstream manifest(made);
    std::string line;
    while (std::getline(manifest, line)) {
      std::istringstream in(line);
      std::string kind, name;
      in >> kind >> name;
      if (kind == "array") {
        GoldenArray a;
        in >> a.dims[0] >> a.dims[1] >> a.dims[2] >> a.dtype;
        const std::string data = read_file(dir_ / (name + ".bin"));
        a.bytes.assign(data.begin(), data.end());
        arrays_[name] = std::move(a);
      } else if (kind == "param") {
        int64_t v;
        while (in >> v) params_[name].push_back(v);
      }
    }
    if (arrays_.empty()) throw std::runtime_error("make_image_golden.py wrote no arrays");
  }

  std::filesystem::path dir_;
  std::map<std::string, GoldenArray> arrays_;
  std::map<std::string, std::vector<int64_t>> params_;
};

/// Largest absolute difference between an Image and a same-shaped golden array, or -1 if shapes differ.
inline int max_abs_diff(const Image& image, const GoldenArray& golden) {
  if (image.height != golden.dims[0] || image.width != golden.dims[1] || golden.dims[2] != 3) return -1;
  int worst = 0;
  for (size_t i = 0; i < image.bytes(); ++i) {
    const int d = std::abs(static_cast<int>(image.pixels.get()[i]) - static_cast<int>(golden.bytes[i]));
    worst = std::max(worst, d);
  }
  return worst;
}

/// Largest absolute difference between two same-shaped images, or -1 if shapes differ.
inline int max_abs_diff(const Image& a, const Image& b) {
  if (a.height != b.height || a.width != b.width) return -1;
  int worst = 0;
  for (size_t i = 0; i < a.bytes(); ++i) {
    worst = std::max(worst, std::abs(static_cast<int>(a.pixels.get()[i]) - static_cast<int>(b.pixels.get()[i])));
  }
  return worst;
}

}  // namespace fulgur::testing
