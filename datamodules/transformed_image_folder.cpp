#include <fulgur/datamodules/transformed_image_folder.hpp>

#include <fulgur/datamodules/data_error.hpp>
#include <fulgur/datamodules/image_codec.hpp>
#include <fulgur/datamodules/transforms.hpp>

#include <stdexcept>
#include <string>

namespace fulgur {

TransformedImageFolder::TransformedImageFolder(std::shared_ptr<const ImageFolder> folder,
                                               std::shared_ptr<const Compose> pipeline, uint64_t seed, int64_t epoch)
    : folder_(std::move(folder)), pipeline_(std::move(pipeline)), seed_(seed), epoch_(epoch) {
  if (!folder_ || !pipeline_) {
    throw std::invalid_argument("[TransformedImageFolder::TransformedImageFolder] folder and pipeline must be set");
  }
}

Example TransformedImageFolder::get(int64_t index) const {
  if (index < 0 || index >= size()) {
    throw std::out_of_range("[TransformedImageFolder::get] index " + std::to_string(index) + " is outside [0, " +
                            std::to_string(size()) + ")");
  }
  const auto& [path, label] = folder_->samples()[static_cast<size_t>(index)];
  const std::vector<uint8_t> bytes = read_image_bytes(path);
  SampleRandom random(sample_seed(seed_, epoch_, index));
  try {
    return {pipeline_->decode(bytes.data(), bytes.size(), path.string(), random), label};
  } catch (const DataError&) {
    throw;  // already names the path
  } catch (const std::exception& error) {
    throw DataError("[TransformedImageFolder::get] transform failed on '" + path.string() + "': " + error.what());
  }
}

}  // namespace fulgur
