#pragma once

#include <ATen/core/Dict.h>
#include <ATen/core/ivalue.h>

#include <filesystem>
#include <string>

namespace fulgur {

/// A checkpoint in memory: string keys to values (tensors, numbers, strings,
/// lists and dicts of those) that Python's `torch.load(path, weights_only=True)`
/// reads back. Lists must be generic (c10::impl::GenericList): LibTorch
/// pickles int/double/bool lists through torch.jit globals Python refuses.
using Checkpoint = c10::impl::GenericDict;

/// An empty dict with string keys and values of any type: a checkpoint, or
/// a nested section of one.
inline c10::impl::GenericDict new_state_dict() {
  return c10::impl::GenericDict(c10::StringType::get(), c10::AnyType::get());
}

/// Reads and writes checkpoint files in torch.save's zip format.
///
/// save() is atomic: it writes a temp file next to the target, fsyncs it,
/// renames it over the target and fsyncs the directory, so a process killed
/// at any moment leaves either the previous file or the new one, never a
/// mix. load() checks the archive's CRC-32s before unpickling, so a
/// truncated, bit-flipped or foreign file is one CheckpointError naming the
/// path.
class CheckpointIO {
 public:
  /// Writes `checkpoint` to `path` (parent folders are created). Throws
  /// CheckpointError naming the path on any write error; the previous file
  /// at `path`, if any, is left as it was and no temp file remains.
  static void save(const Checkpoint& checkpoint, const std::filesystem::path& path);

  /// Reads a checkpoint written by save(). Throws CheckpointError naming the
  /// path when it is missing, unreadable, corrupt or not a fulgur checkpoint.
  static Checkpoint load(const std::filesystem::path& path);

  /// Same checks as load(), on bytes already in memory (`name` goes into
  /// error messages). The fuzz target drives this.
  static Checkpoint load_from_bytes(const std::string& bytes, const std::string& name);

  /// Key every fulgur checkpoint carries (the version that wrote it).
  static constexpr const char* kVersionKey = "fulgur_version";
};

}  // namespace fulgur
