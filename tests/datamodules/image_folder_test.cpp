#include <fulgur/datamodules/data_error.hpp>
#include <fulgur/datamodules/images/codecs/image_tensor.hpp>
#include <fulgur/datamodules/images/image_dataset.hpp>
#include <fulgur/datamodules/images/image_file_list.hpp>
#include <fulgur/datamodules/images/transforms/random_horizontal_flip.hpp>
#include <fulgur/datamodules/loading/dataset_loader.hpp>

#include <ATen/CPUGeneratorImpl.h>

#include <png.h>

#include <doctest/doctest.h>

#include "support/test_support.hpp"
#include "support/write_png.hpp"

#include <csetjmp>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace image_folder_test {

namespace fs = std::filesystem;
using fulgur::DataError;
using fulgur::ImageDataset;
using fulgur::ImageFileList;
using fulgur::testing::write_png;
using fulgur::testing::error_of;
using fulgur::testing::TempDir;

namespace {

/// A PNG of any colour type and bit depth, written with libpng directly:
/// `rows` are raw PNG rows (16-bit samples big-endian, sub-byte samples
/// packed), so the test controls every stored byte.
struct RawPng {
  uint32_t width = 0;
  uint32_t height = 0;
  int color_type = PNG_COLOR_TYPE_RGB;
  int bit_depth = 8;
  bool interlaced = false;
  std::vector<std::vector<uint8_t>> rows;
  std::vector<png_color> palette;
  std::vector<uint8_t> palette_alpha;  // tRNS for palette images
};

RawPng raw_png(uint32_t width, uint32_t height, int color_type, int bit_depth = 8) {
  RawPng png;
  png.width = width;
  png.height = height;
  png.color_type = color_type;
  png.bit_depth = bit_depth;
  return png;
}

// No C++ objects with destructors live in this frame, so longjmp is safe.
bool write_raw_png_c(std::FILE* file, const RawPng* image, png_bytep* row_pointers) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!png || !info || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return false;
  }
  png_init_io(png, file);
  png_set_IHDR(png, info, image->width, image->height, image->bit_depth, image->color_type,
               image->interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  if (!image->palette.empty()) {
    png_set_PLTE(png, info, image->palette.data(), static_cast<int>(image->palette.size()));
  }
  if (!image->palette_alpha.empty()) {
    png_set_tRNS(png, info, image->palette_alpha.data(), static_cast<int>(image->palette_alpha.size()), nullptr);
  }
  png_write_info(png, info);
  png_write_image(png, row_pointers);  // handles the Adam7 passes itself
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return true;
}

void write_raw_png(const fs::path& path, RawPng image) {
  std::vector<png_bytep> row_pointers;
  for (auto& row : image.rows) row_pointers.push_back(row.data());
  std::FILE* file = std::fopen(path.c_str(), "wb");
  REQUIRE(file != nullptr);
  const bool ok = write_raw_png_c(file, &image, row_pointers.data());
  std::fclose(file);
  REQUIRE(ok);
}

torch::Tensor rgb(std::vector<std::vector<std::vector<int>>> pixels) {
  const auto h = static_cast<int64_t>(pixels.size());
  const auto w = static_cast<int64_t>(pixels[0].size());
  auto out = torch::empty({h, w, 3}, torch::kUInt8);
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      for (int64_t c = 0; c < 3; ++c) out[y][x][c] = pixels[y][x][c];
    }
  }
  return out;
}

torch::Tensor random_image(int64_t h, int64_t w, int64_t c, uint64_t seed) {
  auto generator = at::make_generator<at::CPUGeneratorImpl>(seed);
  return torch::randint(0, 256, {h, w, c}, generator, torch::kUInt8);
}

bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

}  // namespace

TEST_CASE("read_image (PNG): 8-bit RGB and grey written by write_png read back exactly") {
  TempDir dir("png_roundtrip");
  const auto image = random_image(5, 7, 3, 1);
  write_png(dir / "rgb.png", image);
  const auto back = fulgur::read_image(dir / "rgb.png");
  CHECK((back.scalar_type() == torch::kUInt8));
  CHECK(back.sizes() == torch::IntArrayRef({5, 7, 3}));
  CHECK(torch::equal(back, image));

  const auto grey = random_image(4, 3, 1, 2);
  write_png(dir / "grey.png", grey);
  const auto grey_back = fulgur::read_image(dir / "grey.png");
  CHECK(grey_back.sizes() == torch::IntArrayRef({4, 3, 3}));
  CHECK(torch::equal(grey_back, grey.expand({4, 3, 3})));

  CHECK(starts_with(error_of([&] { write_png(dir / "x.png", torch::zeros({2, 2, 2}, torch::kUInt8)); }),
                    "[write_png] '" + (dir / "x.png").string() + "': expected a uint8 [height, width, 1 or 3] tensor"));
  CHECK_FALSE(fs::exists(dir / "x.png"));
}

TEST_CASE("read_image (PNG): RGBA and grey+alpha drop alpha without compositing") {
  TempDir dir("png_alpha");
  RawPng rgba = raw_png(2, 1, PNG_COLOR_TYPE_RGB_ALPHA);
  rgba.rows = {{10, 20, 30, 0, 200, 100, 50, 128}};
  write_raw_png(dir / "rgba.png", rgba);
  CHECK(torch::equal(fulgur::read_image(dir / "rgba.png"), rgb({{{10, 20, 30}, {200, 100, 50}}})));

  RawPng grey_alpha = raw_png(3, 1, PNG_COLOR_TYPE_GRAY_ALPHA);
  grey_alpha.rows = {{0, 255, 77, 0, 255, 9}};
  write_raw_png(dir / "ga.png", grey_alpha);
  CHECK(torch::equal(fulgur::read_image(dir / "ga.png"), rgb({{{0, 0, 0}, {77, 77, 77}, {255, 255, 255}}})));
}

TEST_CASE("read_image (PNG): palette images are expanded, with or without tRNS") {
  TempDir dir("png_palette");
  RawPng palette = raw_png(3, 2, PNG_COLOR_TYPE_PALETTE);
  palette.palette = {{255, 0, 0}, {0, 128, 7}, {1, 2, 3}};
  palette.rows = {{0, 1, 2}, {2, 2, 0}};
  write_raw_png(dir / "p8.png", palette);
  const auto expected = rgb({{{255, 0, 0}, {0, 128, 7}, {1, 2, 3}}, {{1, 2, 3}, {1, 2, 3}, {255, 0, 0}}});
  CHECK(torch::equal(fulgur::read_image(dir / "p8.png"), expected));

  palette.palette_alpha = {0, 128};
  write_raw_png(dir / "p8t.png", palette);
  CHECK(torch::equal(fulgur::read_image(dir / "p8t.png"), expected));

  // 2-bit palette: four indices per byte, most significant first.
  RawPng packed = raw_png(3, 1, PNG_COLOR_TYPE_PALETTE, 2);
  packed.palette = {{9, 9, 9}, {40, 50, 60}, {7, 8, 9}};
  packed.rows = {{0b10'01'00'00}};
  write_raw_png(dir / "p2.png", packed);
  CHECK(torch::equal(fulgur::read_image(dir / "p2.png"), rgb({{{7, 8, 9}, {40, 50, 60}, {9, 9, 9}}})));
}

TEST_CASE("read_image (PNG): 16-bit samples keep their high byte; low bit depths expand to 0..255") {
  TempDir dir("png_depth");
  RawPng rgb16 = raw_png(1, 2, PNG_COLOR_TYPE_RGB, 16);
  rgb16.rows = {{0xAB, 0xCD, 0x00, 0xFF, 0xFF, 0xFF}, {0x12, 0x80, 0x7F, 0xFF, 0x01, 0x00}};
  write_raw_png(dir / "rgb16.png", rgb16);
  CHECK(torch::equal(fulgur::read_image(dir / "rgb16.png"), rgb({{{0xAB, 0x00, 0xFF}}, {{0x12, 0x7F, 0x01}}})));

  RawPng grey16 = raw_png(2, 1, PNG_COLOR_TYPE_GRAY, 16);
  grey16.rows = {{0x42, 0xFF, 0xFE, 0x01}};
  write_raw_png(dir / "g16.png", grey16);
  CHECK(torch::equal(fulgur::read_image(dir / "g16.png"), rgb({{{0x42, 0x42, 0x42}, {0xFE, 0xFE, 0xFE}}})));

  RawPng rgba16 = raw_png(1, 1, PNG_COLOR_TYPE_RGB_ALPHA, 16);
  rgba16.rows = {{0x10, 0x00, 0x20, 0x00, 0x30, 0x00, 0x00, 0x00}};
  write_raw_png(dir / "rgba16.png", rgba16);
  CHECK(torch::equal(fulgur::read_image(dir / "rgba16.png"), rgb({{{0x10, 0x20, 0x30}}})));

  RawPng grey1 = raw_png(3, 1, PNG_COLOR_TYPE_GRAY, 1);
  grey1.rows = {{0b101'00000}};
  write_raw_png(dir / "g1.png", grey1);
  CHECK(torch::equal(fulgur::read_image(dir / "g1.png"), rgb({{{255, 255, 255}, {0, 0, 0}, {255, 255, 255}}})));

  RawPng grey4 = raw_png(2, 1, PNG_COLOR_TYPE_GRAY, 4);
  grey4.rows = {{0x3F}};
  write_raw_png(dir / "g4.png", grey4);
  CHECK(torch::equal(fulgur::read_image(dir / "g4.png"), rgb({{{0x33, 0x33, 0x33}, {0xFF, 0xFF, 0xFF}}})));
}

TEST_CASE("read_image (PNG): Adam7-interlaced images decode to the same pixels") {
  TempDir dir("png_interlace");
  const auto image = random_image(9, 11, 3, 3);
  RawPng raw = raw_png(11, 9, PNG_COLOR_TYPE_RGB);
  raw.interlaced = true;
  for (int64_t y = 0; y < 9; ++y) {
    const auto row = image[y].contiguous();
    raw.rows.emplace_back(row.data_ptr<uint8_t>(), row.data_ptr<uint8_t>() + 33);
  }
  write_raw_png(dir / "interlaced.png", raw);
  CHECK(torch::equal(fulgur::read_image(dir / "interlaced.png"), image));
}

TEST_CASE("read_image (PNG): missing, non-PNG, truncated and corrupt files throw DataError naming the path") {
  TempDir dir("png_errors");
  const auto missing = dir / "missing.png";
  CHECK_THROWS_WITH_AS(fulgur::read_image(missing), ("[read_image] '" + missing.string() + "': no such file").c_str(),
                       DataError);

  const auto text = dir / "text.png";
  std::ofstream(text) << "this is not an image at all";
  CHECK(starts_with(error_of([&] { fulgur::read_image(text); }),
                    "[decode_image] '" + text.string() + "': not a JPEG or PNG image (it starts with bytes 74 68 69 73"));
  CHECK_THROWS_AS(fulgur::read_image(text), DataError);

  write_png(dir / "good.png", random_image(16, 16, 3, 4));
  const std::string bytes = fulgur::testing::read_file(dir / "good.png");
  const auto truncated = dir / "truncated.png";
  std::ofstream(truncated, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
  const std::string prefix = "[decode_image] '" + truncated.string() + "': corrupt or truncated PNG: ";
  CHECK(starts_with(error_of([&] { fulgur::read_image(truncated); }), prefix));

  // Flip bytes inside the IDAT payload: the chunk CRC no longer matches.
  std::string damaged = bytes;
  const size_t idat = damaged.find("IDAT");
  REQUIRE(idat != std::string::npos);
  for (size_t i = idat + 8; i < idat + 20; ++i) damaged[i] = static_cast<char>(~damaged[i]);
  const auto corrupt = dir / "corrupt.png";
  std::ofstream(corrupt, std::ios::binary).write(damaged.data(), static_cast<std::streamsize>(damaged.size()));
  const std::string message = error_of([&] { fulgur::read_image(corrupt); });
  CHECK(starts_with(message, "[decode_image] '" + corrupt.string() + "': corrupt or truncated PNG: "));
  CHECK_THROWS_AS(fulgur::read_image(corrupt), DataError);

  // decode_image sees the same bytes in memory.
  CHECK(torch::equal(fulgur::decode_image(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "mem"),
                     fulgur::read_image(dir / "good.png")));
  CHECK(starts_with(error_of([&] { fulgur::decode_image(reinterpret_cast<const uint8_t*>(bytes.data()), 40, "shard[3]"); }),
                    "[decode_image] 'shard[3]': corrupt or truncated PNG: "));
}

TEST_CASE("ImageFileList::from_class_folders: classes sorted by name, images sorted by path, labels by class") {
  TempDir dir("image_folder_layout");
  const fs::path root = dir.path();
  for (const char* cls : {"b_cat", "a_dog", "Zebra"}) fs::create_directories(root / cls);
  fs::create_directories(root / "a_dog" / "nested");
  fs::create_directories(root / ".ipynb_checkpoints");
  fs::create_directories(root / "b_cat" / ".hidden");
  auto pixel = [](int v) { return torch::full({2, 2, 3}, v, torch::kUInt8); };
  write_png(root / "b_cat" / "2.png", pixel(1));
  write_png(root / "b_cat" / "1.PNG", pixel(2));
  write_png(root / "b_cat" / ".hidden" / "0.png", pixel(99));
  write_png(root / "a_dog" / "x.png", pixel(3));
  write_png(root / "a_dog" / "nested" / "a.png", pixel(4));
  write_png(root / "Zebra" / "z.png", pixel(255));
  write_png(root / ".ipynb_checkpoints" / "y.png", pixel(99));
  std::ofstream(root / "a_dog" / "notes.txt") << "not an image";

  auto list = std::make_shared<const ImageFileList>(ImageFileList::from_class_folders(root));
  CHECK(list->classes() == std::vector<std::string>{"Zebra", "a_dog", "b_cat"});  // byte order, like sorted()
  REQUIRE(list->size() == 5);
  const std::vector<std::pair<fs::path, int64_t>> expected = {{root / "Zebra" / "z.png", 0},
                                                               {root / "a_dog" / "nested" / "a.png", 1},
                                                               {root / "a_dog" / "x.png", 1},
                                                               {root / "b_cat" / "1.PNG", 2},
                                                               {root / "b_cat" / "2.png", 2}};
  CHECK(list->samples() == expected);

  // Without a pipeline, an ImageDataset is ToTensor: float CHW in [0, 1].
  const ImageDataset folder(list);
  const auto example = folder.get(1);
  CHECK(example.target.item<int64_t>() == 1);
  CHECK((example.input.scalar_type() == torch::kFloat32));
  CHECK(example.input.sizes() == torch::IntArrayRef({3, 2, 2}));
  CHECK(torch::allclose(example.input, torch::full({3, 2, 2}, 4.0f / 255.0f)));
  CHECK(folder.get(0).input[2][1][1].item<float>() == 1.0f);
  CHECK_THROWS_WITH_AS(folder.get(5), "[ImageDataset::get] index 5 is outside [0, 5)", std::out_of_range);

  fulgur::DatasetLoader loader(std::make_shared<ImageDataset>(list), fulgur::DatasetLoaderOptions(2).num_workers(2));
  auto it = loader.iterate();
  const auto batch = it->next();
  REQUIRE(batch.has_value());
  CHECK(batch->input.sizes() == torch::IntArrayRef({2, 3, 2, 2}));
  CHECK(torch::equal(batch->target, torch::tensor({0, 1}, torch::kLong)));
}

TEST_CASE("ImageFileList::from_class_folders: a missing root, no class folders or an empty class folder are DataErrors naming the path") {
  TempDir dir("image_folder_errors");
  const char* where = "[ImageFileList::from_class_folders] ";
  const fs::path missing = dir / "nope";
  CHECK_THROWS_WITH_AS(ImageFileList::from_class_folders(missing),
                       (where + ("root '" + missing.string()) + "' does not exist or is not a folder").c_str(),
                       DataError);

  const fs::path flat = dir / "flat";
  fs::create_directories(flat);
  write_png(flat / "a.png", torch::zeros({1, 1, 3}, torch::kUInt8));
  CHECK_THROWS_WITH_AS(ImageFileList::from_class_folders(flat),
                       (where + ("no class folders in '" + flat.string()) +
                        "'; expected one sub-folder of images per class")
                           .c_str(),
                       DataError);

  const fs::path root = dir / "data";
  fs::create_directories(root / "cat");
  fs::create_directories(root / "dog");
  write_png(root / "cat" / "a.png", torch::zeros({1, 1, 3}, torch::kUInt8));
  std::ofstream(root / "dog" / "readme.txt") << "no images here";
  CHECK_THROWS_WITH_AS(ImageFileList::from_class_folders(root),
                       (where + ("class folder '" + (root / "dog").string()) +
                        "' contains no images (.jpg, .jpeg or .png)")
                           .c_str(),
                       DataError);
}

TEST_CASE("ImageDataset: a corrupt image fails get() and the loader with its path, in any thread") {
  TempDir dir("image_folder_corrupt");
  const fs::path root = dir.path();
  fs::create_directories(root / "a");
  for (int i = 0; i < 6; ++i) {
    write_png(root / "a" / (std::to_string(i) + ".png"), random_image(4, 4, 3, 10 + i));
  }
  const fs::path bad = root / "a" / "4.png";
  const std::string bytes = fulgur::testing::read_file(bad);
  std::ofstream(bad, std::ios::binary | std::ios::trunc).write(bytes.data(), 30);

  auto list = std::make_shared<const ImageFileList>(ImageFileList::from_class_folders(root));
  auto folder = std::make_shared<ImageDataset>(list);
  const std::string prefix = "[decode_image] '" + bad.string() + "': corrupt or truncated PNG: ";
  CHECK(starts_with(error_of([&] { folder->get(4); }), prefix));
  for (const int64_t workers : {0, 2}) {
    CAPTURE(workers);
    fulgur::DatasetLoader loader(folder, fulgur::DatasetLoaderOptions(2).num_workers(workers));
    auto it = loader.iterate();
    REQUIRE(it->next().has_value());
    REQUIRE(it->next().has_value());
    CHECK(starts_with(error_of([&] { it->next(); }), prefix));
  }

  // A transform that throws is a DataError naming the image.
  struct Boom : fulgur::Transform {
    fulgur::Image apply(fulgur::Image, fulgur::SampleRandom&) const override { throw std::runtime_error("boom"); }
  };
  ImageDataset throwing(list, std::make_shared<fulgur::Compose>(
                                  std::vector<std::shared_ptr<const fulgur::Transform>>{std::make_shared<Boom>()}));
  const auto good = root / "a" / "0.png";
  CHECK_THROWS_WITH_AS(throwing.get(0),
                       ("[ImageDataset::get] transform failed on '" + good.string() + "': boom").c_str(), DataError);
}

TEST_CASE("ImageDataset: the augmentation of (seed, epoch, index) is the same for any worker count and follows set_epoch") {
  TempDir dir("image_dataset_epochs");
  const fs::path root = dir.path();
  fs::create_directories(root / "a");
  for (int i = 0; i < 24; ++i) write_png(root / "a" / (std::to_string(10 + i) + ".png"), random_image(3, 5, 3, 40 + i));
  auto list = std::make_shared<const ImageFileList>(ImageFileList::from_class_folders(root));
  auto flip = std::make_shared<fulgur::Compose>(
      std::vector<std::shared_ptr<const fulgur::Transform>>{std::make_shared<fulgur::RandomHorizontalFlip>()});
  auto dataset = std::make_shared<ImageDataset>(list, flip, 7);

  // Sample i of epoch e is its image flipped or not, as SampleRandom(sample_seed(7, e, i)) decides.
  auto expected_sample = [&](int64_t epoch, int64_t index) {
    fulgur::SampleRandom random(fulgur::sample_seed(7, epoch, index));
    const auto original = fulgur::read_image(list->samples()[static_cast<size_t>(index)].first);
    fulgur::Image image = fulgur::RandomHorizontalFlip().apply(fulgur::tensor_to_image(original), random);
    return fulgur::image_to_tensor(std::move(image))
        .permute({2, 0, 1})
        .to(torch::kFloat32)
        .div(255.0f);
  };
  auto epoch_inputs = [&](int64_t workers, int64_t epoch) {
    fulgur::DatasetLoader loader(dataset, fulgur::DatasetLoaderOptions(5).shuffle(true).num_workers(workers).seed(3));
    loader.set_epoch(epoch);
    std::vector<torch::Tensor> inputs;
    std::vector<int64_t> order = loader.epoch_order();
    auto it = loader.iterate();
    while (auto batch = it->next()) inputs.push_back(batch->input);
    return std::make_pair(torch::cat(inputs), order);
  };
  for (const int64_t epoch : {0, 1}) {
    CAPTURE(epoch);
    const auto [serial, order] = epoch_inputs(0, epoch);
    for (const int64_t workers : {1, 2, 3}) {
      CAPTURE(workers);
      CHECK(torch::equal(epoch_inputs(workers, epoch).first, serial));
    }
    for (size_t k = 0; k < order.size(); ++k) {
      CAPTURE(k);
      CHECK(torch::allclose(serial[static_cast<int64_t>(k)], expected_sample(epoch, order[k])));
    }
  }
  // Some samples flip differently between epochs: the loader's epoch reached the dataset.
  int64_t differ = 0;
  for (int64_t i = 0; i < dataset->size(); ++i) {
    differ += torch::equal(dataset->at_epoch(0)->get(i).input, dataset->at_epoch(1)->get(i).input) ? 0 : 1;
  }
  CHECK(differ >= 3);
  CHECK(torch::equal(dataset->get(5).input, dataset->at_epoch(0)->get(5).input));
}

TEST_CASE("sample_seed: a function of (seed, epoch, index)") {
  CHECK(fulgur::sample_seed(1, 0, 5) == fulgur::sample_seed(1, 0, 5));
  CHECK(fulgur::sample_seed(1, 0, 5) != fulgur::sample_seed(1, 1, 5));
  CHECK(fulgur::sample_seed(1, 0, 5) != fulgur::sample_seed(1, 0, 6));
  CHECK(fulgur::sample_seed(1, 0, 5) != fulgur::sample_seed(2, 0, 5));
}

}  // namespace image_folder_test
