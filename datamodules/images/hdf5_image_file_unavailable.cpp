// HDF5ImageFile in a build without libhdf5 (FULGUR_WITH_HDF5=OFF): the class
// exists so that every caller compiles unchanged, and opening or writing a
// pack throws one DataError naming the file.
#include <fulgur/datamodules/images/hdf5_image_file.hpp>

#include <fulgur/datamodules/data_error.hpp>

#include <stdexcept>

namespace fulgur {

namespace {

std::string without_hdf5(const char* where, const std::filesystem::path& path) {
  return std::string(where) + " '" + path.string() +
         "': fulgur was built without HDF5 (FULGUR_WITH_HDF5=OFF), so it cannot read or write HDF5 image packs; "
         "rebuild with libhdf5 installed (Debian: libhdf5-dev) and -DFULGUR_WITH_HDF5=ON";
}

}  // namespace

HDF5ImageFile::HDF5ImageFile(std::filesystem::path path) : path_(std::move(path)) {
  throw DataError(without_hdf5("[HDF5ImageFile]", path_));
}

HDF5ImageFile::~HDF5ImageFile() = default;

std::string HDF5ImageFile::name(int64_t index) const {
  return path_.string() + ":" + names_.at(static_cast<size_t>(index));
}

std::string HDF5ImageFile::read(int64_t) const { throw DataError(without_hdf5("[HDF5ImageFile::read]", path_)); }

int64_t HDF5ImageFile::write(const EncodedImageSource&, const std::filesystem::path& output,
                             const std::vector<std::string>&) {
  throw DataError(without_hdf5("[HDF5ImageFile::write]", output));
}

}  // namespace fulgur
