#include <fulgur/datamodules/composed_image_dataset.hpp>

#include <fulgur/datamodules/data_error.hpp>
#include <fulgur/datamodules/transforms.hpp>

#include <stdexcept>
#include <string>

namespace fulgur {

ComposedImageDataset::ComposedImageDataset(std::shared_ptr<const EncodedImageSource> source,
                                           std::shared_ptr<const Compose> pipeline, uint64_t seed, int64_t epoch)
    : source_(std::move(source)), pipeline_(std::move(pipeline)), seed_(seed), epoch_(epoch) {
  if (!source_ || !pipeline_) {
    throw std::invalid_argument("[ComposedImageDataset::ComposedImageDataset] source and pipeline must be set");
  }
}

Example ComposedImageDataset::get(int64_t index) const {
  if (index < 0 || index >= size()) {
    throw std::out_of_range("[ComposedImageDataset::get] index " + std::to_string(index) + " is outside [0, " +
                            std::to_string(size()) + ")");
  }
  const std::string bytes = source_->read(index);
  const std::string name = source_->name(index);
  SampleRandom random(sample_seed(seed_, epoch_, index));
  try {
    return {pipeline_->decode(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), name, random),
            source_->label(index)};
  } catch (const DataError&) {
    throw;  // already names the image
  } catch (const std::exception& error) {
    throw DataError("[ComposedImageDataset::get] transform failed on '" + name + "': " + error.what());
  }
}

std::shared_ptr<const ComposedImageDataset> ComposedImageDataset::at_epoch(int64_t epoch) const {
  return std::make_shared<const ComposedImageDataset>(source_, pipeline_, seed_, epoch);
}

}  // namespace fulgur
