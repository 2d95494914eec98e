#include <fulgur/datamodules/images/device_decode_dataset.hpp>

#include <fulgur/datamodules/data_error.hpp>
#include <fulgur/datamodules/error_reason.hpp>
#include <fulgur/datamodules/images/codecs/image_tensor.hpp>
#include <fulgur/datamodules/images/transforms/image_ops.hpp>

#include <c10/core/DeviceGuard.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/version.h>

#include <dlfcn.h>

#include <iostream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>

namespace fulgur {

namespace {

// One stream per loader thread and device, taken from the pool once: the
// batches of different threads decode concurrently, none on the stream the
// training step runs on.
// The stream's cudaStream_t: c10::Stream::native_handle() from LibTorch 2.11
// on; before, the fulgur_cuda module (loaded RTLD_GLOBAL with LibTorch's CUDA
// half, CudaRuntime) unpacks it.
void* native_stream(const c10::Stream& stream) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 11)
  return stream.native_handle();
#else
  using Unpack = void* (*)(int64_t, int8_t);
  static const auto unpack = reinterpret_cast<Unpack>(::dlsym(RTLD_DEFAULT, "fulgur_cuda_native_stream"));
  return unpack != nullptr ? unpack(stream.id(), stream.device_index()) : nullptr;
#endif
}

c10::Stream loader_stream(const torch::Device& device) {
  thread_local std::map<c10::DeviceIndex, c10::Stream> streams;
  auto it = streams.find(device.index());
  if (it == streams.end()) {
    it = streams.emplace(device.index(), c10::impl::getDeviceGuardImpl(device.type())->getStreamFromGlobalPool(device))
             .first;
  }
  return it->second;
}

// One image of a batch on its way through.
struct Pending {
  int64_t index = 0;
  std::string bytes;            // encoded, unless the source holds pixels
  std::optional<Image> pixels;  // CIFAR-style sources
  ImageInfo info;
  DeviceImagePlan plan;
  int64_t height = 0;  // of the region to decode
  int64_t width = 0;
  int64_t offset = -1;  // in the batch buffer; -1: not given to the decoder
};

}  // namespace

DeviceDecodeDataset::DeviceDecodeDataset(std::shared_ptr<const EncodedImageSource> source, DeviceImageRecipe recipe,
                                         std::shared_ptr<NvImageCodecDecoder> decoder, torch::Device device,
                                         uint64_t seed, int64_t epoch, std::shared_ptr<DecodeStats> stats)
    : source_(std::move(source)),
      recipe_(std::move(recipe)),
      decoder_(std::move(decoder)),
      device_(device),
      seed_(seed),
      epoch_(epoch),
      stats_(stats ? std::move(stats) : std::make_shared<DecodeStats>(device.str())) {
  if (!source_) throw std::invalid_argument("[DeviceDecodeDataset] source is null");
  if (!decoder_) throw std::invalid_argument("[DeviceDecodeDataset] decoder is null");
  const bool gpu = decoder_->backend() == NvImageCodecDecoder::Backend::Gpu;
  if (gpu != device_.is_cuda()) {
    throw std::invalid_argument(std::string("[DeviceDecodeDataset] a ") + (gpu ? "GPU" : "CPU") +
                                " decoder cannot write to device " + device_.str());
  }
}

Example DeviceDecodeDataset::get(int64_t index) const {
  Batch batch = get_batch({index});
  return {batch.input[0], batch.target[0], {}};
}

Batch DeviceDecodeDataset::get_batch(const std::vector<int64_t>& indices) const {
  return decode_batch(indices).batch;
}

DeviceDecodeDataset::DecodedBatch DeviceDecodeDataset::decode_batch(const std::vector<int64_t>& indices) const {
  std::optional<c10::DeviceGuard> device_guard;
  std::optional<c10::Stream> stream;
  std::optional<c10::StreamGuard> stream_guard;
  if (device_.is_cuda()) {
    device_guard.emplace(device_);
    stream = loader_stream(device_);
    stream_guard.emplace(*stream);
  }

  // On the host: bytes, header, crop and flip (the CPU path's draws).
  std::vector<Pending> pending(indices.size());
  int64_t buffer_bytes = 0;
  std::vector<int64_t> labels;
  for (size_t i = 0; i < indices.size(); ++i) {
    Pending& p = pending[i];
    p.index = indices[i];
    if (p.index < 0 || p.index >= size()) {
      throw std::out_of_range("[DeviceDecodeDataset::get_batch] index " + std::to_string(p.index) +
                              " is outside [0, " + std::to_string(size()) + ")");
    }
    SampleRandom random(sample_seed(seed_, epoch_, p.index));
    p.pixels = source_->pixels(p.index);
    if (p.pixels) {
      p.info = {ImageFormat::Png, p.pixels->height, p.pixels->width};
    } else {
      p.bytes = source_->read(p.index);  // read errors name the image
      p.info = read_image_info(reinterpret_cast<const uint8_t*>(p.bytes.data()), p.bytes.size(), source_->name(p.index));
    }
    p.plan = recipe_.plan(p.info.height, p.info.width, random);
    const bool whole = p.plan.region.height == 0 || p.plan.region.width == 0;
    p.height = whole ? p.info.height : p.plan.region.height;
    p.width = whole ? p.info.width : p.plan.region.width;
    if (!p.pixels && p.info.format == ImageFormat::Jpeg) {
      p.offset = buffer_bytes;
      buffer_bytes += p.height * p.width * 3;
    }
    labels.push_back(source_->label(p.index));
  }

  // One batched decode into one buffer on the device.
  const torch::Tensor buffer = torch::empty({buffer_bytes}, torch::TensorOptions().dtype(torch::kUInt8).device(device_));
  std::vector<BatchDecodeItem> items;
  std::vector<size_t> item_of;
  for (size_t i = 0; i < pending.size(); ++i) {
    const Pending& p = pending[i];
    if (p.offset < 0) continue;
    BatchDecodeItem item;
    item.data = reinterpret_cast<const uint8_t*>(p.bytes.data());
    item.size = p.bytes.size();
    item.region = p.plan.region;
    item.out = buffer.data_ptr<uint8_t>() + p.offset;
    items.push_back(item);
    item_of.push_back(i);
  }
  const std::vector<DecodeEngine> engines = decoder_->decode(items, stream ? native_stream(*stream) : nullptr);
  std::vector<bool> on_device(pending.size(), false);
  DecodeCounts counts;
  for (size_t k = 0; k < items.size(); ++k) {
    on_device[item_of[k]] = engines[k] != DecodeEngine::None;
    counts.add(engines[k]);
  }
  std::vector<std::string> one_by_one;  // names, for the warning

  // Per image on the device; what the decoder left goes through the CPU path.
  std::vector<torch::Tensor> images;
  for (size_t i = 0; i < pending.size(); ++i) {
    Pending& p = pending[i];
    const std::string name = source_->name(p.index);
    try {
      torch::Tensor pixels;
      if (on_device[i]) {
        pixels = buffer.narrow(0, p.offset, p.height * p.width * 3).view({p.height, p.width, 3});
      } else if (p.pixels) {
        counts.add_fallback();
        one_by_one.push_back(name);
        const DecodeRequest& r = p.plan.region;
        Image region = p.height == p.info.height && p.width == p.info.width
                           ? std::move(*p.pixels)
                           : crop_image(*p.pixels, r.top, r.left, r.height, r.width);
        pixels = image_to_tensor(std::move(region)).to(device_);
      } else {
        counts.add_fallback();
        one_by_one.push_back(name);
        DecodeRequest region = p.plan.region;  // full resolution: the device resizes
        pixels = image_to_tensor(decode_image_rgb(reinterpret_cast<const uint8_t*>(p.bytes.data()), p.bytes.size(),
                                                  name, region))
                     .to(device_);
      }
      images.push_back(recipe_.finish(pixels, p.plan, p.info.height, p.info.width));
    } catch (const DataError&) {
      throw;  // already names the image
    } catch (const std::exception& error) {
      throw DataError("[DeviceDecodeDataset] transform failed on '" + name + "': " + error_reason(error));
    }
  }
  Batch batch;
  batch.input = recipe_.normalize(images);
  if (device_.is_cuda()) batch.input = batch.input.contiguous(torch::MemoryFormat::ChannelsLast);
  batch.target = torch::tensor(labels, torch::kLong).to(device_);
  // Handed over finished: the consumer's stream needs no event.
  if (stream) stream->synchronize();
  if (stats_->record(epoch_, counts)) {
    std::string names;
    for (size_t k = 0; k < one_by_one.size() && k < 3; ++k) names += (k ? ", '" : "'") + one_by_one[k] + "'";
    if (one_by_one.size() > 3) names += ", ...";
    std::cerr << "fulgur: warning: decode on " + stats_->where() + ", epoch " + std::to_string(epoch_) + ": " +
                     std::to_string(counts.fallback) + " of " + std::to_string(indices.size()) +
                     " images of a batch decoded one by one on the CPU (not a JPEG the GPU decoders take: " + names +
                     "); the epoch's decode line counts them all\n";
  }
  return {std::move(batch), counts};
}

void DeviceDecodeDataset::finished_epoch(int64_t epoch) const {
  std::cerr << "fulgur: " + stats_->finish_epoch(epoch) + "\n";
}

std::shared_ptr<const Dataset> DeviceDecodeDataset::at_epoch(int64_t epoch) const {
  return std::make_shared<const DeviceDecodeDataset>(source_, recipe_, decoder_, device_, seed_, epoch, stats_);
}

}  // namespace fulgur
