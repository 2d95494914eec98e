#include <fulgur/engine/checkpoint/checkpoint_io.hpp>

#include <fulgur/core/first_line.hpp>
#include <fulgur/engine/checkpoint/checkpoint_error.hpp>
#include <fulgur/engine/checkpoint/zip_checksums.hpp>

#include <caffe2/serialize/inline_container.h>
#include <fmt/format.h>
#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/csrc/jit/serialization/pickler.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

namespace fulgur {
namespace {

using detail::first_line;

/// Temp files are hidden and carry the target's name, so stale ones from a
/// killed writer can be recognised and removed. Appended rather than
/// `"." + name`: g++ 12 warns (-Wstringop-overflow, a false positive) there.
std::string temp_prefix(const std::filesystem::path& path) {
  std::string prefix(".");
  prefix += path.filename().string();
  prefix += ".tmp.";
  return prefix;
}

/// Writes all of `size` bytes to `fd`; returns 0 or the errno of the failure.
int write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t written = ::write(fd, data, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (written == 0) return EIO;
    data += written;
    size -= static_cast<size_t>(written);
  }
  return 0;
}

void fsync_directory(const std::filesystem::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // some file systems do not allow opening directories; the rename is still done
  ::fsync(fd);
  ::close(fd);
}

void remove_stale_temps(const std::filesystem::path& dir, const std::filesystem::path& target) {
  const std::string prefix = temp_prefix(target);
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().filename().string().rfind(prefix, 0) == 0) std::filesystem::remove(entry.path(), ec);
  }
}

}  // namespace

void CheckpointIO::save(const Checkpoint& checkpoint, const std::filesystem::path& path) {
  auto fail = [&](const std::string& why) {
    throw CheckpointError(fmt::format("[CheckpointIO::save] cannot write checkpoint {}: {}", path.string(), why));
  };
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) fail(ec.message());

  // Pickle first (small: tensors are referenced, not copied), then stream
  // the archive straight into the temp file.
  std::vector<char> pickle_bytes;
  // No type tags on dicts and lists: Python's weights_only unpickler rejects
  // the torch.jit globals they need.
  torch::jit::Pickler pickler(
      [&](const char* bytes, size_t size) { pickle_bytes.insert(pickle_bytes.end(), bytes, bytes + size); },
      /*tensor_table=*/nullptr, /*type_renamer=*/nullptr, /*memoized_class_types=*/nullptr,
      /*get_tensor_id=*/nullptr, /*tag_aggregates=*/false);
  try {
    pickler.protocol();
    pickler.pushIValue(checkpoint);
    pickler.stop();
  } catch (const std::exception& e) {
    fail("a value cannot be serialized: " + first_line(e.what()));
  }

  std::random_device random;
  const std::filesystem::path temp =
      dir / fmt::format("{}{}.{:08x}", temp_prefix(path), ::getpid(), random());
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) fail(std::strerror(errno));

  int error = 0;
  std::string failure;
  try {
    // The writer callback must not throw (the stream writer's destructor
    // calls it too): it remembers the first error and swallows the rest.
    caffe2::serialize::PyTorchStreamWriter writer([&](const void* bytes, size_t size) -> size_t {
      if (error == 0) error = write_all(fd, static_cast<const char*>(bytes), size);
      return size;
    });
    torch::jit::writeArchiveAndTensors("data", pickle_bytes.data(), pickle_bytes.size(), pickler.tensorData(),
                                       writer);
    writer.writeEndOfFile();
  } catch (const std::exception& e) {
    failure = first_line(e.what());
  }
  if (error == 0 && failure.empty() && ::fsync(fd) != 0) error = errno;
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error == 0 && failure.empty() && std::rename(temp.c_str(), path.c_str()) != 0) error = errno;
  if (error != 0 || !failure.empty()) {
    std::filesystem::remove(temp, ec);
    fail(failure.empty() ? std::strerror(error) : failure);
  }
  fsync_directory(dir);
  remove_stale_temps(dir, path);
}

Checkpoint CheckpointIO::load(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw CheckpointError(fmt::format("[CheckpointIO::load] cannot read checkpoint {}: {}", path.string(),
                                      std::filesystem::exists(path) ? std::strerror(errno) : "no such file"));
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) {
    throw CheckpointError(fmt::format("[CheckpointIO::load] cannot read checkpoint {}: read error", path.string()));
  }
  return load_from_bytes(std::move(buffer).str(), path.string());
}

Checkpoint CheckpointIO::load_from_bytes(const std::string& bytes, const std::string& name) {
  auto fail = [&](const std::string& why) {
    throw CheckpointError(fmt::format("[CheckpointIO::load] {} is not a valid checkpoint: {}", name, why));
  };
  try {
    verify_zip_checksums(bytes.data(), bytes.size());
  } catch (const std::exception& e) {
    fail(e.what());
  }
  c10::IValue value;
  try {
    value = torch::jit::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
  } catch (const std::exception& e) {
    fail("cannot unpickle it: " + first_line(e.what()));
  }
  if (!value.isGenericDict()) fail(fmt::format("expected a dict at the top level, got {}", value.tagKind()));
  Checkpoint checkpoint = new_state_dict();
  for (const auto& entry : value.toGenericDict()) {
    if (!entry.key().isString()) fail("a top-level key is not a string");
    checkpoint.insert(entry.key().toStringRef(), entry.value());
  }
  if (!checkpoint.contains(kVersionKey)) fail(fmt::format("no '{}' key (not written by fulgur)", kVersionKey));
  return checkpoint;
}

}  // namespace fulgur
