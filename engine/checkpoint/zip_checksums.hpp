#pragma once

#include <cstddef>

namespace fulgur {

/// Checks the structure of a zip archive (the container torch.save writes)
/// and the CRC-32 of every record against its central-directory entry.
/// LibTorch's reader skips these checks, so without this a flipped bit in
/// tensor data would load silently. Throws std::runtime_error saying what
/// is wrong (truncated, not a zip archive, which record is corrupt).
void verify_zip_checksums(const char* data, size_t size);

}  // namespace fulgur
