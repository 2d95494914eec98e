// libFuzzer target for the checkpoint loader: any bytes must give a loaded
// checkpoint or a CheckpointError, never a crash, a hang or another
// exception type. Built with clang by the build (tests/CMakeLists.txt).
#include <fulgur/engine/checkpoint/checkpoint_error.hpp>
#include <fulgur/engine/checkpoint/checkpoint_io.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    fulgur::CheckpointIO::load_from_bytes(bytes, "fuzz-input");
  } catch (const fulgur::CheckpointError&) {
    // The one expected failure.
  } catch (...) {
    std::abort();  // any other exception escaping the loader is a bug
  }
  return 0;
}
