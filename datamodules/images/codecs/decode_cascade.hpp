#pragma once

#include <fulgur/datamodules/images/codecs/decode_engine.hpp>

#include <cstddef>
#include <functional>
#include <vector>

namespace fulgur {

/// Decoding stages tried in order, each on what the earlier ones left: the
/// hardware engine, then nvJPEG's CUDA decoders (or nvImageCodec's CPU
/// backend). nvImageCodec's own fallback between backends does not say
/// which one decoded an image; one decoder per stage does, so each image's
/// engine is known. The stages are functions, so the bookkeeping is tested
/// without a GPU.
class DecodeCascade {
 public:
  /// Decodes the batch items at `which` (indices into the batch), one flag
  /// per entry of `which`: true where the image was decoded.
  using Stage = std::function<std::vector<bool>(const std::vector<size_t>& which)>;

  void add(DecodeEngine engine, Stage stage);
  /// The engine that decoded each of `items` items (None: no stage did).
  /// A stage is called only with items left, never with none.
  std::vector<DecodeEngine> run(size_t items) const;
  size_t stages() const { return stages_.size(); }

 private:
  std::vector<std::pair<DecodeEngine, Stage>> stages_;
};

}  // namespace fulgur
