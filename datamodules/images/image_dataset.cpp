#include <fulgur/datamodules/images/image_dataset.hpp>

#include <fulgur/datamodules/error_reason.hpp>
#include <fulgur/datamodules/data_error.hpp>

#include <ATen/CPUGeneratorImpl.h>

#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace fulgur {

ImageDataset::ImageDataset(std::shared_ptr<const EncodedImageSource> source, std::shared_ptr<const Compose> recipe,
                           uint64_t seed, int64_t epoch)
    : source_(std::move(source)), recipe_(std::move(recipe)), seed_(seed), epoch_(epoch) {
  if (!source_) throw std::invalid_argument("[ImageDataset::ImageDataset] source is null");
  if (!recipe_) recipe_ = std::make_shared<const Compose>(std::vector<std::shared_ptr<const Transform>>{});
}

Example ImageDataset::get(int64_t index) const {
  if (index < 0 || index >= size()) {
    throw std::out_of_range("[ImageDataset::get] index " + std::to_string(index) + " is outside [0, " +
                            std::to_string(size()) + ")");
  }
  SampleRandom random(sample_seed(seed_, epoch_, index));
  std::optional<Image> pixels = source_->pixels(index);
  const std::string bytes = pixels ? std::string() : source_->read(index);  // read errors name the image
  try {
    if (pixels) return {(*recipe_)(std::move(*pixels), random), class_index(source_->label(index)), {}};
    return {recipe_->decode(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), source_->name(index), random),
            class_index(source_->label(index)), {}};
  } catch (const DataError&) {
    throw;  // already names the image
  } catch (const std::exception& error) {
    throw DataError("[ImageDataset::get] transform failed on '" + source_->name(index) + "': " + error_reason(error));
  }
}

std::shared_ptr<const Dataset> ImageDataset::at_epoch(int64_t epoch) const {
  return std::make_shared<const ImageDataset>(source_, recipe_, seed_, epoch);
}

uint64_t ImageDataset::seed_or_draw(const std::optional<int64_t>& seed) {
  if (seed) return static_cast<uint64_t>(*seed);
  auto generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get<at::CPUGeneratorImpl>()->random64();
}

}  // namespace fulgur
