#pragma once

#include <fulgur/datamodules/images/codecs/image_codec.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fulgur {

/// One image of a batched decode: its encoded bytes, the region of it to
/// decode (source pixels; an empty region is the whole image;
/// min_height/min_width are ignored) and where the RGB result goes: HWC,
/// uint8, region height x width x 3 bytes without padding, in host memory
/// for the CPU backend and device memory for the GPU backend.
struct BatchDecodeItem {
  const uint8_t* data = nullptr;
  size_t size = 0;
  DecodeRequest region;
  uint8_t* out = nullptr;
};

/// Batched JPEG decoding through NVIDIA's nvImageCodec (libnvimgcodec.so.0,
/// the `nvidia-nvimgcodec-cu13` wheel), loaded at run time so that fulgur
/// neither links it nor needs it: the GPU backend takes the GPU's hardware
/// JPEG engines where they exist (A100, H100, H200) and nvJPEG's CUDA
/// decoder otherwise; the CPU backend is its libjpeg-turbo extension, which
/// runs the same batching, region and error paths on a machine without a
/// GPU. Only the extensions a backend needs are loaded (no JPEG 2000 or
/// TIFF). decode() is thread-safe: calls from several loader threads take
/// turns, which costs little since one call decodes a whole batch.
class NvImageCodecDecoder {
 public:
  enum class Backend { Cpu, Gpu };

  /// Loads the library (once per process) and makes a decoder on CUDA
  /// device `device` (ignored by the CPU backend) with at most `cpu_threads`
  /// host threads (0: one per core). Throws std::runtime_error saying why
  /// it cannot: built without the header, library or extension not found.
  NvImageCodecDecoder(Backend backend, int device = 0, int cpu_threads = 0);
  ~NvImageCodecDecoder();
  NvImageCodecDecoder(const NvImageCodecDecoder&) = delete;
  NvImageCodecDecoder& operator=(const NvImageCodecDecoder&) = delete;

  /// Why nvImageCodec cannot be used in this process (not built in, the
  /// library not found, with the paths tried), or nullopt when it loads.
  static std::optional<std::string> unavailable_reason();

  /// Decodes every item in one batched call; for the GPU backend on
  /// `cuda_stream` (a cudaStream_t; null is the legacy default stream),
  /// returning once the results are written. One flag per item: false for
  /// an image no backend could decode (unsupported, corrupt, truncated),
  /// which the caller decodes another way; never throws for bad bytes.
  std::vector<bool> decode(const std::vector<BatchDecodeItem>& items, void* cuda_stream = nullptr);

  Backend backend() const { return backend_; }

 private:
  struct State;
  Backend backend_;
  std::unique_ptr<State> state_;
};

}  // namespace fulgur
