// libFuzzer target for the image decoders: any bytes must give an image or
// a DataError, never a crash, a hang, a leak or a sanitizer report.
#include <fulgur/datamodules/data_error.hpp>
#include <fulgur/datamodules/images/codecs/image_codec.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>

using namespace fulgur;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const ImageInfo info = read_image_info(data, size, "fuzz");
    // Big valid headers decode slowly; the size limit itself is checked by
    // read_image_info above and by the unit tests.
    if (info.height * info.width > 2'000'000) return 0;
    const Image whole = decode_image_rgb(data, size, "fuzz");
    if (whole.height != info.height || whole.width != info.width) __builtin_trap();
    // A crop region with DCT scaling, derived from the header.
    const DecodeRequest region{info.height / 4, info.width / 3, std::max<int64_t>(1, info.height / 2),
                               std::max<int64_t>(1, info.width / 2), info.height / 5, info.width / 7};
    const Image part = decode_image_rgb(data, size, "fuzz", region);
    if (part.height < 1 || part.width < 1 || part.height > region.height || part.width > region.width) __builtin_trap();
  } catch (const DataError&) {
  }
  return 0;
}
