#pragma once

#include <string>
#include <vector>

namespace fulgur {

/// Where an image data module decodes JPEGs (option `decode`): `cpu` in the
/// loader threads (libjpeg-turbo, only the crop window, DCT-scaled); `gpu`
/// batched on the training device through nvImageCodec (the GPU's JPEG
/// engines), the loader threads only reading file bytes; `auto`: gpu when
/// the run's device is a CUDA device and nvImageCodec loads, else cpu, with
/// one line saying which and why.
enum class DecodeMode { Cpu, Gpu, Auto };
inline std::vector<std::string> option_choices(DecodeMode) { return {"cpu", "gpu", "auto"}; }

}  // namespace fulgur
