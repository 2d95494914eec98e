#include <fulgur/datamodules/images/hdf5_image_file.hpp>

#include <fulgur/datamodules/data_error.hpp>

#include <hdf5.h>

#include <stdexcept>

namespace fulgur {

namespace {

namespace fs = std::filesystem;

constexpr const char* kFormat = "packed-images-1";

/// libhdf5 is not thread-safe: every call in this file runs under this lock.
std::mutex& hdf5_mutex() {
  static std::mutex mutex;
  return mutex;
}

/// libhdf5 prints its error stack to stderr by default; we report our own.
void silence_hdf5() {
  static const bool silenced = [] {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)silenced;
}

/// Closes an HDF5 handle when it leaves scope.
class Handle {
 public:
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~Handle() {
    if (id_ >= 0) close_(id_);
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

hsize_t length_of(hid_t dataset) {
  Handle space(H5Dget_space(dataset), H5Sclose);
  if (!space.ok() || H5Sget_simple_extent_ndims(space.get()) != 1) return static_cast<hsize_t>(-1);
  hsize_t dims[1] = {0};
  H5Sget_simple_extent_dims(space.get(), dims, nullptr);
  return dims[0];
}

std::vector<int64_t> read_int64s(hid_t file, const char* name, const std::string& at) {
  Handle dataset(H5Dopen2(file, name, H5P_DEFAULT), H5Dclose);
  if (!dataset.ok()) throw DataError(at + "has no dataset '" + name + "'; not a pack written by fulgur_pack");
  const hsize_t n = length_of(dataset.get());
  if (n == static_cast<hsize_t>(-1)) throw DataError(at + "dataset '" + name + "' is not one-dimensional");
  std::vector<int64_t> values(n);
  if (n > 0 && H5Dread(dataset.get(), H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0) {
    throw DataError(at + "cannot read dataset '" + name + "'");
  }
  return values;
}

std::vector<std::string> read_strings(hid_t file, const char* name, const std::string& at) {
  Handle dataset(H5Dopen2(file, name, H5P_DEFAULT), H5Dclose);
  if (!dataset.ok()) throw DataError(at + "has no dataset '" + name + "'; not a pack written by fulgur_pack");
  const hsize_t n = length_of(dataset.get());
  if (n == static_cast<hsize_t>(-1)) throw DataError(at + "dataset '" + name + "' is not one-dimensional");
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), H5T_VARIABLE);
  std::vector<char*> raw(n, nullptr);
  if (n > 0 && H5Dread(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, raw.data()) < 0) {
    throw DataError(at + "cannot read dataset '" + name + "' as strings");
  }
  std::vector<std::string> values;
  values.reserve(n);
  for (char* text : raw) values.emplace_back(text ? text : "");
  if (n > 0) {
    Handle space(H5Dget_space(dataset.get()), H5Sclose);
    H5Dvlen_reclaim(type.get(), space.get(), H5P_DEFAULT, raw.data());
  }
  return values;
}

void write_dataset(hid_t file, const char* name, hid_t type, hsize_t n, const void* data, const std::string& at) {
  Handle space(H5Screate_simple(1, &n, nullptr), H5Sclose);
  Handle dataset(H5Dcreate2(file, name, type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
  if (!dataset.ok() || (n > 0 && H5Dwrite(dataset.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)) {
    throw DataError(at + "cannot write dataset '" + name + "'");
  }
}

void write_strings(hid_t file, const char* name, const std::vector<std::string>& values, const std::string& at) {
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), H5T_VARIABLE);
  std::vector<const char*> raw;
  raw.reserve(values.size());
  for (const auto& value : values) raw.push_back(value.c_str());
  write_dataset(file, name, type.get(), values.size(), raw.data(), at);
}

}  // namespace

HDF5ImageFile::HDF5ImageFile(fs::path path) : path_(std::move(path)) {
  const std::string at = "[HDF5ImageFile] " + quoted(path_) + " ";
  std::error_code error;
  if (!fs::is_regular_file(path_, error)) throw DataError(at + "does not exist or is not a file");
  std::lock_guard<std::mutex> lock(hdf5_mutex());
  silence_hdf5();
  if (H5Fis_hdf5(path_.c_str()) <= 0) throw DataError(at + "is not an HDF5 file");
  file_ = H5Fopen(path_.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file_ < 0) throw DataError(at + "cannot be opened by libhdf5");
  try {
    {
      Handle attribute(H5Aopen(file_, "fulgur_format", H5P_DEFAULT), H5Aclose);
      std::string format;
      if (attribute.ok()) {
        Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
        H5Tset_size(type.get(), H5T_VARIABLE);
        char* text = nullptr;
        if (H5Aread(attribute.get(), type.get(), &text) >= 0 && text) {
          format = text;
          H5free_memory(text);
        }
      }
      if (format != kFormat) {
        throw DataError(at + "is not a fulgur image pack (root attribute fulgur_format is '" + format +
                        "', expected '" + kFormat + "')");
      }
    }
    offsets_ = read_int64s(file_, "offsets", at);
    labels_ = read_int64s(file_, "labels", at);
    names_ = read_strings(file_, "names", at);
    classes_ = read_strings(file_, "classes", at);
    images_ = H5Dopen2(file_, "images", H5P_DEFAULT);
    if (images_ < 0) throw DataError(at + "has no dataset 'images'");
    const auto n = labels_.size();
    if (offsets_.size() != n + 1 || names_.size() != n) {
      throw DataError(at + "is inconsistent: " + std::to_string(n) + " labels, " + std::to_string(names_.size()) +
                      " names and " + std::to_string(offsets_.size()) + " offsets (expected labels + 1)");
    }
    const auto total = static_cast<int64_t>(length_of(images_));
    for (size_t i = 0; i < n; ++i) {
      if (offsets_[i] < 0 || offsets_[i] > offsets_[i + 1] || offsets_[i + 1] > total) {
        throw DataError(at + "has a bad offset range for image " + std::to_string(i) + " ('" + names_[i] + "')");
      }
      if (labels_[i] < 0 || labels_[i] >= static_cast<int64_t>(classes_.size())) {
        throw DataError(at + "image " + std::to_string(i) + " ('" + names_[i] + "') has label " +
                        std::to_string(labels_[i]) + " outside the " + std::to_string(classes_.size()) + " classes");
      }
    }
  } catch (...) {
    if (images_ >= 0) H5Dclose(images_);
    H5Fclose(file_);
    throw;
  }
}

HDF5ImageFile::~HDF5ImageFile() {
  std::lock_guard<std::mutex> lock(hdf5_mutex());
  if (images_ >= 0) H5Dclose(images_);
  if (file_ >= 0) H5Fclose(file_);
}

std::string HDF5ImageFile::name(int64_t index) const {
  return path_.string() + ":" + names_.at(static_cast<size_t>(index));
}

std::string HDF5ImageFile::read(int64_t index) const {
  if (index < 0 || index >= size()) {
    throw std::out_of_range("[HDF5ImageFile::read] index " + std::to_string(index) + " is outside [0, " +
                            std::to_string(size()) + ")");
  }
  const auto i = static_cast<size_t>(index);
  const hsize_t start = static_cast<hsize_t>(offsets_[i]);
  const hsize_t count = static_cast<hsize_t>(offsets_[i + 1] - offsets_[i]);
  if (count == 0) throw DataError("[HDF5ImageFile::read] '" + name(index) + "' is empty (0 bytes)");
  std::string bytes(count, '\0');
  std::lock_guard<std::mutex> lock(hdf5_mutex());
  Handle file_space(H5Dget_space(images_), H5Sclose);
  Handle memory_space(H5Screate_simple(1, &count, nullptr), H5Sclose);
  if (!file_space.ok() || !memory_space.ok() ||
      H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, &start, nullptr, &count, nullptr) < 0 ||
      H5Dread(images_, H5T_NATIVE_UINT8, memory_space.get(), file_space.get(), H5P_DEFAULT, bytes.data()) < 0) {
    throw DataError("[HDF5ImageFile::read] cannot read '" + name(index) + "'");
  }
  return bytes;
}

int64_t HDF5ImageFile::write(const EncodedImageSource& source, const fs::path& output,
                             const std::vector<std::string>& names) {
  const int64_t n = source.size();
  if (!names.empty() && static_cast<int64_t>(names.size()) != n) {
    throw std::invalid_argument("[HDF5ImageFile::write] " + std::to_string(names.size()) + " names for " +
                                std::to_string(n) + " images");
  }
  const fs::path partial = output.string() + ".partial";
  const std::string at = "[HDF5ImageFile::write] " + quoted(output) + ": ";
  std::vector<int64_t> offsets{0};
  std::vector<int64_t> labels;
  std::vector<std::string> stored_names;
  // Images are read one at a time and appended to a chunked dataset, so
  // memory stays bounded whatever the split's size.
  try {
    std::unique_lock<std::mutex> lock(hdf5_mutex());
    silence_hdf5();
    Handle file(H5Fcreate(partial.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
    if (!file.ok()) throw DataError(at + "cannot create " + quoted(partial));
    hsize_t zero = 0, unlimited = H5S_UNLIMITED, chunk = 1 << 20;
    Handle space(H5Screate_simple(1, &zero, &unlimited), H5Sclose);
    Handle properties(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
    H5Pset_chunk(properties.get(), 1, &chunk);
    Handle images(H5Dcreate2(file.get(), "images", H5T_NATIVE_UINT8, space.get(), H5P_DEFAULT, properties.get(),
                             H5P_DEFAULT),
                  H5Dclose);
    if (!images.ok()) throw DataError(at + "cannot create dataset 'images'");
    for (int64_t i = 0; i < n; ++i) {
      // Read without the lock: the source may be another pack.
      lock.unlock();
      std::string bytes;
      try {
        bytes = source.read(i);  // its DataError names the image
      } catch (...) {
        lock.lock();  // the handles close under the lock
        throw;
      }
      lock.lock();
      const auto start = static_cast<hsize_t>(offsets.back());
      const auto count = static_cast<hsize_t>(bytes.size());
      const hsize_t extent = start + count;
      Handle memory_space(H5Screate_simple(1, &count, nullptr), H5Sclose);
      bool ok = H5Dset_extent(images.get(), &extent) >= 0;
      Handle file_space(H5Dget_space(images.get()), H5Sclose);
      ok = ok && file_space.ok() &&
           H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, &start, nullptr, &count, nullptr) >= 0 &&
           H5Dwrite(images.get(), H5T_NATIVE_UINT8, memory_space.get(), file_space.get(), H5P_DEFAULT,
                    bytes.data()) >= 0;
      if (!ok) throw DataError(at + "cannot write image '" + source.name(i) + "' (disk full?)");
      offsets.push_back(static_cast<int64_t>(extent));
      labels.push_back(source.label(i));
      stored_names.push_back(names.empty() ? source.name(i) : names[static_cast<size_t>(i)]);
    }
    write_dataset(file.get(), "offsets", H5T_NATIVE_INT64, offsets.size(), offsets.data(), at);
    write_dataset(file.get(), "labels", H5T_NATIVE_INT64, labels.size(), labels.data(), at);
    write_strings(file.get(), "names", stored_names, at);
    write_strings(file.get(), "classes", source.classes(), at);
    Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(type.get(), H5T_VARIABLE);
    Handle scalar(H5Screate(H5S_SCALAR), H5Sclose);
    Handle attribute(H5Acreate2(file.get(), "fulgur_format", type.get(), scalar.get(), H5P_DEFAULT, H5P_DEFAULT),
                     H5Aclose);
    const char* format = kFormat;
    if (!attribute.ok() || H5Awrite(attribute.get(), type.get(), &format) < 0) {
      throw DataError(at + "cannot write the format attribute");
    }
    if (H5Fflush(file.get(), H5F_SCOPE_GLOBAL) < 0) throw DataError(at + "cannot flush " + quoted(partial));
  } catch (...) {
    std::error_code ignored;
    fs::remove(partial, ignored);
    throw;
  }
  std::error_code error;
  fs::rename(partial, output, error);
  if (error) {
    fs::remove(partial, error);
    throw DataError(at + "cannot rename the finished pack into place: " + error.message());
  }
  return offsets.back();
}

}  // namespace fulgur
