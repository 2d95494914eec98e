#pragma once

// Small trees of real PNG files for the dataset tests: learnable images
// (each class has its own dominant colour) and the bad files a real dataset
// contains.
#include "write_png.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fulgur::testing {

/// A [side, side, 3] uint8 image of class `label`: channel label % 3 bright,
/// plus noise drawn from `seed`.
inline torch::Tensor class_image(int64_t label, int64_t seed, int64_t side = 16) {
  auto generator = at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(seed));
  torch::Tensor image = torch::randint(0, 90, {side, side, 3}, generator, torch::kInt64);
  image.select(2, label % 3).add_(150);
  return image.to(torch::kUInt8);
}

/// Writes `per_class` PNGs into dir/<class>/ for each class name; returns the paths.
inline std::vector<std::filesystem::path> write_class_folders(const std::filesystem::path& dir,
                                                              const std::vector<std::string>& classes,
                                                              int64_t per_class, int64_t seed = 0,
                                                              int64_t side = 16) {
  std::vector<std::filesystem::path> paths;
  for (size_t c = 0; c < classes.size(); ++c) {
    std::filesystem::create_directories(dir / classes[c]);
    for (int64_t i = 0; i < per_class; ++i) {
      const auto path = dir / classes[c] / ("img_" + std::to_string(i) + ".png");
      write_png(path, class_image(static_cast<int64_t>(c), seed + static_cast<int64_t>(c) * 1000 + i, side));
      paths.push_back(path);
    }
  }
  return paths;
}

inline std::string file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// Replaces three good PNGs by the bad files of a real dataset: 0 bytes,
/// cut at 50 %, and a flipped IDAT payload (chunk CRC mismatch).
inline void damage_pngs(const std::filesystem::path& empty, const std::filesystem::path& truncated,
                        const std::filesystem::path& bad_crc) {
  write_bytes(empty, "");
  const std::string cut = file_bytes(truncated);
  write_bytes(truncated, cut.substr(0, cut.size() / 2));
  std::string damaged = file_bytes(bad_crc);
  const size_t idat = damaged.find("IDAT");
  for (size_t i = idat + 8; i < idat + 20 && i < damaged.size() - 4; ++i) damaged[i] = static_cast<char>(~damaged[i]);
  write_bytes(bad_crc, damaged);
}

}  // namespace fulgur::testing
