#pragma once

#include <fulgur/datamodules/images/codecs/decode_engine.hpp>
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
///
/// The GPU backend is two nvImageCodec decoders tried in turn (a
/// DecodeCascade): the hardware engine alone, then nvJPEG's CUDA and hybrid
/// decoders for what it refused, so decode() can say which engine decoded
/// each image (nvImageCodec's fallback between backends does not). The
/// hardware decoder's batch share is fixed (load hint 1, policy fixed), not
/// set by whichever call comes first, and with `batch_size` its buffers
/// are preallocated for that many images.
class NvImageCodecDecoder {
 public:
  enum class Backend { Cpu, Gpu };

  /// Loads the library (once per process) and makes a decoder on CUDA
  /// device `device` (ignored by the CPU backend) with at most `cpu_threads`
  /// host threads (0: one per core). Throws std::runtime_error saying why
  /// it cannot: built without the header, library or extension not found.
  /// `batch_size` > 0: the images per decode() call to preallocate the
  /// hardware decoder for (the loader's batch size).
  NvImageCodecDecoder(Backend backend, int device = 0, int cpu_threads = 0, int batch_size = 0);
  ~NvImageCodecDecoder();
  NvImageCodecDecoder(const NvImageCodecDecoder&) = delete;
  NvImageCodecDecoder& operator=(const NvImageCodecDecoder&) = delete;

  /// Why nvImageCodec cannot be used in this process (not built in, the
  /// library not found, with the paths tried), or nullopt when it loads.
  static std::optional<std::string> unavailable_reason();

  /// Decodes every item in one batched call; for the GPU backend on
  /// `cuda_stream` (a cudaStream_t; null is the legacy default stream),
  /// returning once the results are written. One engine per item: the one
  /// that decoded it, or DecodeEngine::None for an image no backend could
  /// decode (unsupported, corrupt, truncated), which the caller decodes
  /// another way; never throws for bad bytes.
  std::vector<DecodeEngine> decode(const std::vector<BatchDecodeItem>& items, void* cuda_stream = nullptr);
  /// Whether the hardware engine's decoder could be made (the GPU backend on
  /// a GPU with JPEG engines; false for the CPU backend).
  bool has_hardware_decoder() const;

  Backend backend() const { return backend_; }

 private:
  struct State;
  Backend backend_;
  std::unique_ptr<State> state_;
};

}  // namespace fulgur
