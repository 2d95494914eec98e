// Packs image folders into HDF5 files (HDF5ImageFile) that the ImageNet
// DataModule reads with --data.format hdf5: one file instead of millions of
// small ones on a parallel filesystem. The encoded bytes are stored as they
// are, so decoding a packed image gives exactly the pixels of its file.
//
//   fulgur_pack FOLDER OUT.h5          FOLDER/<class>/**/<image> -> OUT.h5
//   fulgur_pack --splits ROOT OUTDIR   ROOT/train and ROOT/val (class folders, or
//                                      flat val/ with LOC_val_solution.csv)
//                                      -> OUTDIR/train.h5, OUTDIR/val.h5
#include <fulgur/datamodules/data_error.hpp>
#include <fulgur/datamodules/images/hdf5_image_file.hpp>
#include <fulgur/datamodules/images/image_file_list.hpp>
#include <fulgur/datamodules/datasets/imagenet.hpp>

#include <filesystem>
#include <iostream>
#include <string>

namespace {

namespace fs = std::filesystem;

const char* kUsage =
    "usage: fulgur_pack FOLDER OUT.h5\n"
    "       fulgur_pack --splits ROOT OUTDIR\n"
    "Packs images (encoded bytes, labels, class names) into HDF5 files for --data.format hdf5.\n";

/// Stores names relative to the packed folder, so a pack is independent of where it was made.
void pack(const fulgur::EncodedImageSource& source, const fs::path& base, const fs::path& output) {
  std::vector<std::string> names;
  names.reserve(static_cast<size_t>(source.size()));
  for (int64_t i = 0; i < source.size(); ++i) names.push_back(fs::path(source.name(i)).lexically_relative(base).string());
  const int64_t bytes = fulgur::HDF5ImageFile::write(source, output, names);
  std::cout << "fulgur_pack: packed " << source.size() << " images (" << bytes << " bytes, "
            << source.classes().size() << " classes) into " << output.string() << std::endl;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << kUsage;
    return 0;
  }
  try {
    if (args.size() == 3 && args[0] == "--splits") {
      const fs::path out = args[2];
      fs::create_directories(out);
      fulgur::ImageNet data(fulgur::ImageNetOptions(args[1]).format(fulgur::ImageNetFormat::Folder));
      data.setup(fulgur::Stage::Fit);
      pack(*data.train_source(), fs::path(args[1]) / "train", out / "train.h5");
      pack(*data.val_source(), fs::path(args[1]) / "val", out / "val.h5");
      return 0;
    }
    if (args.size() == 2 && args[0].rfind("--", 0) != 0) {
      const auto list = fulgur::ImageFileList::from_class_folders(args[0]);
      pack(list, args[0], args[1]);
      return 0;
    }
  } catch (const fulgur::DataError& error) {
    std::cerr << "fulgur_pack: " << error.what() << std::endl;
    return 2;
  } catch (const std::exception& error) {
    std::cerr << "fulgur_pack: " << error.what() << std::endl;
    return 1;
  }
  std::cerr << kUsage;
  return 2;
}
