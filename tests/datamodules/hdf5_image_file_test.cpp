// HDF5 image packs through the real libhdf5 and the real fulgur_pack tool:
// packed bytes read back identical to the files, decode to the same pixels,
// and bad packs or images fail with one clear error.
#include "support/image_tree.hpp"
#include "support/test_support.hpp"

#include <fulgur/datamodules/data_error.hpp>
#include <fulgur/datamodules/images/hdf5_image_file.hpp>
#include <fulgur/datamodules/images/image_dataset.hpp>
#include <fulgur/datamodules/images/image_file_list.hpp>
#include <fulgur/datamodules/loading/dataset_loader.hpp>

#include <torch/torch.h>

#include <functional>

#include <doctest/doctest.h>

namespace hdf5_image_file_test {

using fulgur::DataError;
using fulgur::HDF5ImageFile;
using fulgur::ImageFileList;
using fulgur::testing::run_command;
using fulgur::testing::error_of;
using fulgur::testing::TempDir;

namespace {

const std::string kPack = std::string(FULGUR_BINARY_DIR) + "/bin/fulgur_pack";

}  // namespace

TEST_CASE("HDF5ImageFile: fulgur_pack packs a folder; bytes, labels, names and pixels read back identical") {
  TempDir dir("hdf5-pack");
  const auto paths = fulgur::testing::write_class_folders(dir / "images", {"cat", "dog", "eel"}, 5);
  const auto result = run_command(kPack + " " + (dir / "images").string() + " " + (dir / "train.h5").string(), 120);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  CHECK(result.output.find("fulgur_pack: packed 15 images") != std::string::npos);

  const HDF5ImageFile pack(dir / "train.h5");
  const ImageFileList files = ImageFileList::from_class_folders(dir / "images");
  REQUIRE(pack.size() == 15);
  CHECK(pack.classes() == std::vector<std::string>{"cat", "dog", "eel"});
  for (int64_t i = 0; i < pack.size(); ++i) {
    CAPTURE(i);
    CHECK(pack.read(i) == fulgur::testing::file_bytes(files.samples()[static_cast<size_t>(i)].first));
    CHECK(pack.label(i) == files.label(i));
    CHECK(pack.names()[static_cast<size_t>(i)] ==
          files.samples()[static_cast<size_t>(i)].first.lexically_relative(dir / "images").string());
  }
  CHECK(pack.name(4) == (dir / "train.h5").string() + ":cat/img_4.png");
  // Decoded through the datasets: the same tensors from the pack and the files, in any thread.
  auto from_pack = std::make_shared<fulgur::ImageDataset>(std::make_shared<HDF5ImageFile>(dir / "train.h5"));
  auto from_files = std::make_shared<fulgur::ImageDataset>(std::make_shared<ImageFileList>(files));
  fulgur::DatasetLoader a(from_pack, fulgur::DatasetLoaderOptions(4).num_workers(3).seed(0));
  fulgur::DatasetLoader b(from_files, fulgur::DatasetLoaderOptions(4).seed(0));
  auto ia = a.iterate();
  auto ib = b.iterate();
  int64_t batches = 0;
  while (auto batch = ia->next()) {
    auto other = ib->next();
    REQUIRE(other.has_value());
    CHECK(torch::equal(batch->input, other->input));
    CHECK(torch::equal(batch->target, other->target));
    ++batches;
  }
  CHECK(batches == 4);
  CHECK_FALSE(std::filesystem::exists(dir / "train.h5.partial"));
}

TEST_CASE("HDF5ImageFile: an unreadable image stops packing with its path and leaves no file behind") {
  TempDir dir("hdf5-pack-bad");
  const auto paths = fulgur::testing::write_class_folders(dir / "images", {"a", "b"}, 3);
  fulgur::testing::write_bytes(paths[4], "");  // b/img_1.png, 0 bytes
  const auto result = run_command(kPack + " " + (dir / "images").string() + " " + (dir / "out.h5").string(), 120);
  CHECK(result.exit_code == 2);
  CHECK(result.output.find("'" + paths[4].string() + "': empty file (0 bytes)") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir / "out.h5"));
  CHECK_FALSE(std::filesystem::exists(dir / "out.h5.partial"));
  // Usage errors exit 2 too.
  CHECK(run_command(kPack, 30).exit_code == 2);
}

TEST_CASE("HDF5ImageFile: missing, non-HDF5 and foreign HDF5 files are DataErrors naming the path") {
  TempDir dir("hdf5-bad");
  CHECK(error_of([&] { HDF5ImageFile(dir / "none.h5"); }) ==
        "[HDF5ImageFile] '" + (dir / "none.h5").string() + "' does not exist or is not a file");
  fulgur::testing::write_bytes(dir / "text.h5", "not hdf5");
  CHECK(error_of([&] { HDF5ImageFile(dir / "text.h5"); }) ==
        "[HDF5ImageFile] '" + (dir / "text.h5").string() + "' is not an HDF5 file");
  CHECK_THROWS_AS(HDF5ImageFile(dir / "text.h5"), DataError);
  // A real HDF5 file that is not a pack: a pack whose format attribute is renamed.
  fulgur::testing::write_class_folders(dir / "images", {"a"}, 1);
  HDF5ImageFile::write(ImageFileList::from_class_folders(dir / "images"), dir / "pack.h5");
  std::string bytes = fulgur::testing::file_bytes(dir / "pack.h5");
  const size_t at = bytes.find("fulgur_format");
  REQUIRE(at != std::string::npos);
  bytes.replace(at, 13, "other_format_");
  fulgur::testing::write_bytes(dir / "foreign.h5", bytes);
  CHECK(error_of([&] { HDF5ImageFile(dir / "foreign.h5"); }) ==
        "[HDF5ImageFile] '" + (dir / "foreign.h5").string() +
            "' is not a fulgur image pack (root attribute fulgur_format is '', expected 'packed-images-1')");
}

TEST_CASE("HDF5ImageFile: write returns the byte count; read checks the index") {
  TempDir dir("hdf5-api");
  fulgur::testing::write_class_folders(dir / "images", {"x", "y"}, 2, 7, 8);
  const ImageFileList files = ImageFileList::from_class_folders(dir / "images");
  int64_t total = 0;
  for (const auto& [path, label] : files.samples()) total += static_cast<int64_t>(std::filesystem::file_size(path));
  CHECK(HDF5ImageFile::write(files, dir / "p.h5") == total);
  const HDF5ImageFile pack(dir / "p.h5");
  CHECK(pack.read(3) == fulgur::testing::file_bytes(files.samples()[3].first));
  CHECK_THROWS_AS(pack.read(4), std::out_of_range);
}

}  // namespace hdf5_image_file_test
