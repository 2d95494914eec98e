// Image decoding against Pillow (the reference torchvision's ImageFolder
// uses), partial JPEG decoding, and bad input: each bad file gives one
// DataError naming the path and the reason, and the CLI exits 2.
#include <fulgur/datamodules/data_error.hpp>
#include <fulgur/datamodules/datasets/cinic10.hpp>
#include <fulgur/datamodules/images/codecs/image_codec.hpp>
#include <fulgur/datamodules/images/codecs/image_tensor.hpp>
#include <fulgur/datamodules/images/image_dataset.hpp>
#include <fulgur/datamodules/images/image_file_list.hpp>
#include <fulgur/datamodules/images/transforms/image_ops.hpp>
#include <fulgur/datamodules/images/transforms/image_resize.hpp>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "support/image_golden.hpp"
#include "support/test_support.hpp"
#include "support/write_png.hpp"

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace image_decode_test {

namespace fs = std::filesystem;
using fulgur::DataError;
using fulgur::DecodeRequest;
using fulgur::Image;
using fulgur::testing::ImageGolden;
using fulgur::testing::max_abs_diff;
using fulgur::testing::read_file;
using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {

std::vector<uint8_t> bytes_of(const fs::path& path) {
  const std::string bytes = fulgur::read_image_bytes(path);
  return {bytes.begin(), bytes.end()};
}

Image decode_file(const fs::path& path, const DecodeRequest& request = {}) {
  const auto bytes = bytes_of(path);
  return fulgur::decode_image_rgb(bytes.data(), bytes.size(), path.string(), request);
}

void write_bytes(const fs::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

double mean_abs_diff(const Image& a, const Image& b) {
  double total = 0;
  for (size_t i = 0; i < a.bytes(); ++i) total += std::abs(int(a.pixels.get()[i]) - int(b.pixels.get()[i]));
  return total / static_cast<double>(a.bytes());
}

// The message a DataError carries, or "" when none is thrown.
template <class F>
std::string data_error_of(F&& f) {
  try {
    f();
  } catch (const DataError& error) {
    return error.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A JPEG whose frame header (SOF) claims 60000 x 60000 pixels.
std::vector<uint8_t> huge_jpeg(std::vector<uint8_t> jpeg) {
  for (size_t i = 2; i + 9 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && (jpeg[i + 1] == 0xC0 || jpeg[i + 1] == 0xC2)) {
      jpeg[i + 5] = jpeg[i + 7] = 0xEA;  // 60000 = 0xEA60, big-endian
      jpeg[i + 6] = jpeg[i + 8] = 0x60;
      return jpeg;
    }
  }
  FAIL("no SOF marker");
  return jpeg;
}

// A PNG whose IHDR claims 60000 x 60000 pixels, with a valid CRC.
std::vector<uint8_t> huge_png(std::vector<uint8_t> png) {
  for (size_t at : {16, 20}) {  // width, height
    png[at] = 0;
    png[at + 1] = 0;
    png[at + 2] = 0xEA;
    png[at + 3] = 0x60;
  }
  const uLong crc = crc32(0, png.data() + 12, 17);  // "IHDR" + 13 data bytes
  for (int i = 0; i < 4; ++i) png[29 + i] = static_cast<uint8_t>(crc >> (24 - 8 * i));
  return png;
}

// A PNG with one bit of its first IDAT chunk's CRC flipped.
std::vector<uint8_t> bad_crc_png(std::vector<uint8_t> png) {
  const std::string data(png.begin(), png.end());
  const size_t at = data.find("IDAT");
  REQUIRE(at != std::string::npos);
  const uint32_t length = (uint32_t(png[at - 4]) << 24) | (uint32_t(png[at - 3]) << 16) |
                          (uint32_t(png[at - 2]) << 8) | uint32_t(png[at - 1]);
  png[at + 4 + length] ^= 0x01;
  return png;
}

}  // namespace

TEST_CASE("decode_image: PNGs equal Pillow's Image.convert('RGB') exactly") {
  const ImageGolden& golden = ImageGolden::get();
  for (const std::string name :
       {"rgb", "gray", "gray_alpha", "rgba", "palette", "palette_trns", "rgb16", "gray16"}) {
    CAPTURE(name);
    const Image decoded = decode_file(golden.file(name + ".png"));
    CHECK(max_abs_diff(decoded, golden.array("decoded_" + name + "_png")) == 0);
  }
  // The tensor entry point: uint8 [H, W, 3].
  const auto bytes = bytes_of(golden.file("palette.png"));
  const torch::Tensor tensor = fulgur::decode_image(bytes.data(), bytes.size(), "palette.png");
  CHECK(tensor.sizes() == torch::IntArrayRef({45, 61, 3}));
  CHECK((tensor.scalar_type() == torch::kUInt8));
  CHECK(max_abs_diff(fulgur::tensor_to_image(tensor), golden.array("decoded_palette_png")) == 0);
}

TEST_CASE("decode_image: JPEGs (4:2:0, 4:4:4, progressive, grey, CMYK) match Pillow within 1") {
  const ImageGolden& golden = ImageGolden::get();
  for (const std::string name : {"photo420", "photo444", "progressive", "gray", "cmyk"}) {
    CAPTURE(name);
    const Image decoded = decode_file(golden.file(name + ".jpg"));
    CHECK(max_abs_diff(decoded, golden.array("decoded_" + name + "_jpg")) <= 1);
  }
  const auto bytes = bytes_of(golden.file("photo420.jpg"));
  const fulgur::ImageInfo info = fulgur::read_image_info(bytes.data(), bytes.size(), "photo420.jpg");
  CHECK((info.format == fulgur::ImageFormat::Jpeg));
  CHECK(info.height == 375);
  CHECK(info.width == 500);
  // The file variant reads the same pixels; the format comes from the bytes, not the name.
  TempDir dir("decode-misnamed");
  fs::copy_file(golden.file("photo420.jpg"), dir / "really_a_jpeg.png");
  CHECK(max_abs_diff(fulgur::tensor_to_image(fulgur::read_image(dir / "really_a_jpeg.png")),
                     golden.array("decoded_photo420_jpg")) <= 1);
}

TEST_CASE("decode_image: a region decodes as the full image cropped") {
  const ImageGolden& golden = ImageGolden::get();
  for (const std::string name : {"photo420.jpg", "photo444.jpg", "progressive.jpg", "gray.jpg", "cmyk.jpg", "rgb.png"}) {
    const Image full = decode_file(golden.file(name));
    // Narrow, edge-touching and iMCU-aligned windows: libjpeg's cropping
    // changes chroma upsampling at a crop edge unless the decoder keeps a margin.
    for (const DecodeRequest& r : {DecodeRequest{0, 0, 10, 10}, DecodeRequest{17, 33, 20, 9},
                                   DecodeRequest{0, 0, 10, 40}, DecodeRequest{17, 0, 20, 64},
                                   DecodeRequest{16, 32, 16, 16}, DecodeRequest{3, 0, 30, 61},
                                   DecodeRequest{1, 5, 44, 56}}) {
      if (r.top + r.height > full.height || r.left + r.width > full.width) continue;
      CAPTURE(name);
      CAPTURE(r.top);
      CAPTURE(r.left);
      const Image region = decode_file(golden.file(name), r);
      REQUIRE(region.height == r.height);
      REQUIRE(region.width == r.width);
      CHECK(max_abs_diff(region, fulgur::crop_image(full, r.top, r.left, r.height, r.width)) == 0);
    }
  }
  const auto bytes = bytes_of(golden.file("photo420.jpg"));
  CHECK_THROWS_AS(fulgur::decode_image_rgb(bytes.data(), bytes.size(), "x", DecodeRequest{300, 0, 100, 10}),
                  DataError);
}

TEST_CASE("decode_image: DCT scaling keeps at least the requested size and looks like a real resize") {
  const ImageGolden& golden = ImageGolden::get();
  const Image full = decode_file(golden.file("photo420.jpg"));
  // Whole 375x500 image, at least 100x100 wanted: 3/8 scale gives 141x188.
  const Image scaled = decode_file(golden.file("photo420.jpg"), DecodeRequest{0, 0, 0, 0, 100, 100});
  CHECK(scaled.height == 141);
  CHECK(scaled.width == 188);
  // The test photo carries pixel noise, which the two ways of shrinking average differently.
  CHECK(mean_abs_diff(scaled, fulgur::resize_bilinear(full, 141, 188)) < 8.0);
  CHECK(mean_abs_diff(scaled, fulgur::flip_horizontal(fulgur::resize_bilinear(full, 141, 188))) > 20.0);
  // A region: rows 100..300, columns 40..440, at least 90x90 -> 4/8 scale.
  const Image region = decode_file(golden.file("photo420.jpg"), DecodeRequest{100, 40, 200, 400, 90, 90});
  CHECK(region.height == 100);
  CHECK(region.width == 200);
  CHECK(mean_abs_diff(region, fulgur::resize_bilinear(fulgur::crop_image(full, 100, 40, 200, 400), 100, 200)) < 8.0);
  // No minimum: full resolution.
  CHECK(decode_file(golden.file("photo420.jpg"), DecodeRequest{0, 0, 0, 0, 0, 0}).width == 500);
}

TEST_CASE("decode_image: bad files give one DataError naming the path and the reason") {
  const ImageGolden& golden = ImageGolden::get();
  TempDir dir("decode-bad");
  const auto jpeg = bytes_of(golden.file("photo420.jpg"));
  const auto png = bytes_of(golden.file("rgb.png"));

  write_bytes(dir / "empty.png", {});
  write_bytes(dir / "half.jpg", std::vector<uint8_t>(jpeg.begin(), jpeg.begin() + jpeg.size() / 2));
  write_bytes(dir / "half.png", std::vector<uint8_t>(png.begin(), png.begin() + png.size() / 2));
  write_bytes(dir / "bad_crc.png", bad_crc_png(png));
  const std::string text = "hello, I am a text file\n";
  write_bytes(dir / "text.JPEG", std::vector<uint8_t>(text.begin(), text.end()));
  write_bytes(dir / "huge.jpg", huge_jpeg(jpeg));
  write_bytes(dir / "huge.png", huge_png(png));
  fs::create_symlink(dir / "nowhere.jpg", dir / "dangling.jpg");
  // Tests run as root, for whom chmod 000 does not stop reading; a FIFO is
  // a file that honestly cannot be read as an image (and must not block).
  REQUIRE(::mkfifo((dir / "fifo.png").c_str(), 0644) == 0);
  fs::create_directory(dir / "folder.jpg");

  const std::vector<std::pair<std::string, std::string>> cases = {
      {"empty.png", "empty file (0 bytes)"},
      {"half.jpg", "corrupt or truncated JPEG: Premature end of JPEG file"},
      {"half.png", "corrupt or truncated PNG"},
      {"bad_crc.png", "corrupt or truncated PNG: IDAT: CRC error"},
      {"text.JPEG", "not a JPEG or PNG image (it starts with bytes 68 65 6c 6c 6f 2c 20 49)"},
      {"huge.jpg", "the header claims 60000x60000 pixels, more than the limit of 178956970"},
      {"huge.png", "the header claims 60000x60000 pixels, more than the limit of 178956970"},
      {"dangling.jpg", "dangling symbolic link (its target '" + (dir / "nowhere.jpg").string() + "' does not exist)"},
      {"fifo.png", "is a FIFO (named pipe), not a regular file"},
      {"folder.jpg", "is a directory, not an image file"},
      {"missing.png", "no such file"},
  };
  for (const auto& name_reason : cases) {
    const auto& name = name_reason.first;  // not bound: clang 14 cannot capture a binding
    const auto& reason = name_reason.second;
    CAPTURE(name);
    const auto started = std::chrono::steady_clock::now();
    const std::string message = data_error_of([&] { fulgur::read_image(dir / name); });
    CAPTURE(message);
    CHECK(contains(message, fmt::format("'{}': {}", (dir / name).string(), reason)));
    // One line, no backtrace.
    CHECK(message.find('\n') == std::string::npos);
    // Refused from the header: no 10 GB allocation, no decoding.
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(2));
  }
  // The header-only entry point refuses the bomb as well.
  const auto huge = huge_jpeg(jpeg);
  CHECK(contains(data_error_of([&] { fulgur::read_image_info(huge.data(), huge.size(), "bomb"); }),
                 "[decode_image] 'bomb': the header claims 60000x60000 pixels"));
}

TEST_CASE("class folders: .jpg/.jpeg/.JPEG/.png are images; bad entries fail in get() with their reason") {
  const ImageGolden& golden = ImageGolden::get();
  TempDir dir("folder-mixed");
  fs::create_directories(dir / "cat");
  fs::create_directories(dir / "dog" / "nested.jpg");  // a folder named like an image is a folder
  fs::copy_file(golden.file("photo420.jpg"), dir / "cat" / "a.jpg");
  fs::copy_file(golden.file("photo444.jpg"), dir / "cat" / "b.JPEG");
  fs::copy_file(golden.file("progressive.jpg"), dir / "cat" / "c.jpeg");
  fs::copy_file(golden.file("rgb.png"), dir / "dog" / "nested.jpg" / "d.png");
  fs::create_symlink(dir / "gone.png", dir / "dog" / "e.png");
  write_bytes(dir / "dog" / "notes.txt", {'x'});
  const fulgur::ImageDataset folder(
      std::make_shared<const fulgur::ImageFileList>(fulgur::ImageFileList::from_class_folders(dir.path())));
  REQUIRE(folder.size() == 5);
  CHECK(folder.get(0).input.sizes() == torch::IntArrayRef({3, 375, 500}));
  // Sorted by path: dog/e.png before dog/nested.jpg/d.png.
  CHECK(folder.get(4).input.sizes() == torch::IntArrayRef({3, 45, 61}));
  CHECK(contains(data_error_of([&] { folder.get(3); }),
                 fmt::format("'{}': dangling symbolic link", (dir / "dog" / "e.png").string())));
  fs::create_directories(dir / "empty_class");
  CHECK(contains(data_error_of([&] { fulgur::ImageFileList::from_class_folders(dir.path()); }),
                 "class folder '" + (dir / "empty_class").string() + "' contains no images (.jpg, .jpeg or .png)"));
}

TEST_CASE("cinic10 CLI: every kind of bad input exits 2 with one line naming the path and the reason") {
  const ImageGolden& golden = ImageGolden::get();
  const std::string binary = std::string(FULGUR_BINARY_DIR) + "/bin/cinic10";
  TempDir dir("cli-bad-input");
  const auto jpeg = bytes_of(golden.file("photo420.jpg"));
  const auto png = bytes_of(golden.file("rgb.png"));
  const std::string text = "not an image";

  // A small valid tree, plus one bad entry in train/b.
  auto make_tree = [&](const std::string& name) {
    const fs::path root = dir / name;
    for (const char* split : {"train", "valid", "test"}) {
      for (const char* cls : {"a", "b"}) {
        fs::create_directories(root / split / cls);
        for (int i = 0; i < 3; ++i) {
          fulgur::testing::write_png(root / split / cls / ("img" + std::to_string(i) + ".png"),
                            torch::full({8, 8, 3}, 40 * i, torch::kUInt8));
        }
      }
    }
    return root;
  };
  struct Case {
    std::string name;
    std::function<fs::path(const fs::path&)> damage;  // returns the path the message must name
    std::string reason;
  };
  const std::vector<Case> cases = {
      {"empty", [&](const fs::path& r) { write_bytes(r / "train/b/x.png", {}); return r / "train/b/x.png"; },
       "empty file (0 bytes)"},
      {"truncated",
       [&](const fs::path& r) {
         write_bytes(r / "train/b/x.jpg", std::vector<uint8_t>(jpeg.begin(), jpeg.begin() + jpeg.size() / 2));
         return r / "train/b/x.jpg";
       },
       "Premature end of JPEG file"},
      {"crc", [&](const fs::path& r) { write_bytes(r / "train/b/x.png", bad_crc_png(png)); return r / "train/b/x.png"; },
       "CRC error"},
      {"text",
       [&](const fs::path& r) {
         write_bytes(r / "train/b/x.JPEG", std::vector<uint8_t>(text.begin(), text.end()));
         return r / "train/b/x.JPEG";
       },
       "not a JPEG or PNG image"},
      {"huge", [&](const fs::path& r) { write_bytes(r / "train/b/x.jpg", huge_jpeg(jpeg)); return r / "train/b/x.jpg"; },
       "60000x60000 pixels"},
      {"fifo",
       [&](const fs::path& r) {
         REQUIRE(::mkfifo((r / "train/b/x.png").c_str(), 0644) == 0);
         return r / "train/b/x.png";
       },
       "is a FIFO"},
      {"dangling",
       [&](const fs::path& r) {
         fs::create_symlink(r / "gone.png", r / "train/b/x.png");
         return r / "train/b/x.png";
       },
       "dangling symbolic link"},
      {"empty_class",
       [&](const fs::path& r) {
         fs::create_directories(r / "train/c");
         return r / "train/c";
       },
       "contains no images"},
      {"missing_split",
       [&](const fs::path& r) {
         fs::remove_all(r / "valid");
         return r / "valid";
       },
       "does not exist"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const fs::path root = make_tree(c.name);
    const fs::path bad = c.damage(root);
    const auto result = run_command(binary + " fit --config " + FULGUR_SOURCE_DIR +
                                        "/examples/cinic10/digits.yaml --trainer.max_epochs 1 --data.num_workers 2 "
                                        "--trainer.enable_progress_bar false --data.root " +
                                        root.string() + " --trainer.default_root_dir " + (dir / "runs").string(),
                                    120);
    CHECK(result.exit_code == 2);
    CHECK(contains(result.output, fmt::format("'{}'", bad.string())));
    CHECK(contains(result.output, c.reason));
    CHECK(result.output.find("Segmentation") == std::string::npos);
  }
}

}  // namespace image_decode_test
