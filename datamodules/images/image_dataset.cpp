#include <fulgur/datamodules/images/image_dataset.hpp>

#include <fulgur/datamodules/error_reason.hpp>
#include <fulgur/datamodules/data_error.hpp>
#include <fulgur/datamodules/images/device_decode_dataset.hpp>
#include <fulgur/core/option_enum.hpp>

#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <ATen/CPUGeneratorImpl.h>

#include <iostream>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace fulgur {

ImageDataset::ImageDataset(std::shared_ptr<const EncodedImageSource> source, std::shared_ptr<const Compose> recipe,
                           uint64_t seed, int64_t epoch, DeviceDecode device_decode)
    : source_(std::move(source)),
      recipe_(std::move(recipe)),
      seed_(seed),
      epoch_(epoch),
      device_decode_(std::move(device_decode)) {
  if (!source_) throw std::invalid_argument("[ImageDataset::ImageDataset] source is null");
  if (device_decode_.mode != DecodeMode::Cpu && !device_decode_.recipe &&
      (device_decode_.mode == DecodeMode::Gpu || device_decode_.cpu_reason.empty())) {
    throw std::invalid_argument("[ImageDataset::ImageDataset] decode " + to_string(device_decode_.mode) +
                                " needs a DeviceImageRecipe");
  }
  if (!recipe_) recipe_ = std::make_shared<const Compose>(std::vector<std::shared_ptr<const Transform>>{});
}

Image ImageDataset::transformed(int64_t index) const {
  if (index < 0 || index >= size()) {
    throw std::out_of_range("[ImageDataset::get] index " + std::to_string(index) + " is outside [0, " +
                            std::to_string(size()) + ")");
  }
  SampleRandom random(sample_seed(seed_, epoch_, index));
  std::optional<Image> pixels = source_->pixels(index);
  const std::string bytes = pixels ? std::string() : source_->read(index);  // read errors name the image
  try {
    if (pixels) return recipe_->apply_uint8(std::move(*pixels), random);
    return recipe_->decode_uint8(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), source_->name(index),
                                 random);
  } catch (const DataError&) {
    throw;  // already names the image
  } catch (const std::exception& error) {
    throw DataError("[ImageDataset::get] transform failed on '" + source_->name(index) + "': " + error_reason(error));
  }
}

Example ImageDataset::get(int64_t index) const {
  const Image image = transformed(index);
  torch::Tensor input = torch::empty({3, image.height, image.width}, torch::kFloat32);
  recipe_->write_float_chw(image, input.data_ptr<float>());
  return {input, class_index(source_->label(index)), {}};
}

Batch ImageDataset::get_batch(const std::vector<int64_t>& indices) const {
  if (indices.empty()) return Dataset::get_batch(indices);
  torch::Tensor input;
  std::vector<int64_t> labels;
  for (size_t i = 0; i < indices.size(); ++i) {
    const Image image = transformed(indices[i]);
    if (!input.defined()) {
      input = torch::empty({static_cast<int64_t>(indices.size()), 3, image.height, image.width}, torch::kFloat32);
    } else if (image.height != input.size(2) || image.width != input.size(3)) {
      return Dataset::get_batch(indices);  // sizes differ: collate says so, naming them
    }
    recipe_->write_float_chw(image, input[static_cast<int64_t>(i)].data_ptr<float>());
    labels.push_back(source_->label(indices[i]));
  }
  return {input, torch::tensor(labels, torch::kLong), {}};
}

std::shared_ptr<const Dataset> ImageDataset::at_epoch(int64_t epoch) const {
  return std::make_shared<const ImageDataset>(source_, recipe_, seed_, epoch, device_decode_);
}

namespace {

// Each distinct line once per process: the train and val loaders (and
// every fit of a program) resolve the same choice.
void say_once(const std::string& line) {
  static std::mutex mutex;
  static std::set<std::string> said;
  std::lock_guard<std::mutex> lock(mutex);
  if (said.insert(line).second) std::cerr << "fulgur: " << line << std::endl;
}

}  // namespace

std::shared_ptr<const Dataset> ImageDataset::for_device(const torch::Device& device) const {
  const DecodeMode mode = device_decode_.mode;
  if (mode == DecodeMode::Cpu) return nullptr;
  std::string why_not;
  std::shared_ptr<NvImageCodecDecoder> decoder;
  torch::Device target = device;
  if (!device_decode_.recipe) {
    why_not = device_decode_.cpu_reason;
  } else if (!device.is_cuda()) {
    why_not = "the run's device is " + device.str() + ", not a CUDA device";
  } else if (auto reason = NvImageCodecDecoder::unavailable_reason()) {
    why_not = *reason;
  } else {
    if (!target.has_index()) target = c10::impl::getDeviceGuardImpl(torch::kCUDA)->getDevice();
    try {
      decoder = std::make_shared<NvImageCodecDecoder>(NvImageCodecDecoder::Backend::Gpu, target.index(), 0,
                                                      static_cast<int>(device_decode_.batch_size));
    } catch (const std::exception& error) {
      why_not = error.what();
    }
  }
  if (!decoder) {
    if (mode == DecodeMode::Gpu) {
      throw std::invalid_argument("[ImageDataset] decode gpu: cannot decode on the GPU: " + why_not +
                               " (decode auto falls back to the CPU)");
    }
    say_once("decode auto: decoding JPEGs on the CPU: " + why_not);
    return nullptr;
  }
  say_once("decode " + to_string(mode) + ": decoding JPEGs on " + target.str() + " with nvImageCodec");
  return std::make_shared<const DeviceDecodeDataset>(source_, *device_decode_.recipe, decoder, target, seed_, epoch_);
}

uint64_t ImageDataset::seed_or_draw(const std::optional<int64_t>& seed) {
  if (seed) return static_cast<uint64_t>(*seed);
  auto generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get<at::CPUGeneratorImpl>()->random64();
}

}  // namespace fulgur
