#include <fulgur/datamodules/encoded_image_dataset.hpp>

#include <fulgur/datamodules/data_error.hpp>
#include <fulgur/datamodules/image_decode.hpp>
#include <fulgur/datamodules/transforms.hpp>

#include <ATen/CPUGeneratorImpl.h>

#include <stdexcept>

namespace fulgur {

EncodedImageDataset::EncodedImageDataset(std::shared_ptr<const EncodedImageSource> source,
                                         RandomImageTransform transform, uint64_t seed, int64_t epoch)
    : source_(std::move(source)), transform_(std::move(transform)), seed_(seed), epoch_(epoch) {
  if (!source_) throw std::invalid_argument("[EncodedImageDataset::EncodedImageDataset] source is null");
}

Example EncodedImageDataset::get(int64_t index) const {
  if (index < 0 || index >= size()) {
    throw std::out_of_range("[EncodedImageDataset::get] index " + std::to_string(index) + " is outside [0, " +
                            std::to_string(size()) + ")");
  }
  const std::string bytes = source_->read(index);
  const std::string name = source_->name(index);
  torch::Tensor image = decode_image(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), name);
  const int64_t label = source_->label(index);
  if (!transform_) return {to_float_chw(image), label};
  try {
    torch::Generator generator = at::make_generator<at::CPUGeneratorImpl>(sample_seed(seed_, epoch_, index));
    return {transform_(std::move(image), generator), label};
  } catch (const c10::Error& error) {
    throw DataError("[EncodedImageDataset::get] transform failed on '" + name + "': " + error.what_without_backtrace());
  } catch (const DataError&) {
    throw;
  } catch (const std::exception& error) {
    throw DataError("[EncodedImageDataset::get] transform failed on '" + name + "': " + error.what());
  }
}

std::shared_ptr<const EncodedImageDataset> EncodedImageDataset::at_epoch(int64_t epoch) const {
  return std::make_shared<const EncodedImageDataset>(source_, transform_, seed_, epoch);
}

}  // namespace fulgur
