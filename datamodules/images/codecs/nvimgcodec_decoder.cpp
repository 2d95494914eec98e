#include <fulgur/datamodules/images/codecs/nvimgcodec_decoder.hpp>

#include <fulgur/datamodules/images/codecs/decode_cascade.hpp>

#include <nvimgcodec.h>

#include <c10/core/CPUAllocator.h>

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

namespace fulgur {

// The entry points fulgur uses, resolved from the library at run time.
struct NvImageCodecApi {
  decltype(&nvimgcodecInstanceCreate) instance_create = nullptr;
  decltype(&nvimgcodecInstanceDestroy) instance_destroy = nullptr;
  decltype(&nvimgcodecExtensionCreate) extension_create = nullptr;
  decltype(&nvimgcodecExtensionDestroy) extension_destroy = nullptr;
  decltype(&nvimgcodecDecoderCreate) decoder_create = nullptr;
  decltype(&nvimgcodecDecoderDestroy) decoder_destroy = nullptr;
  decltype(&nvimgcodecDecoderDecode) decoder_decode = nullptr;
  decltype(&nvimgcodecCodeStreamCreateFromHostMem) stream_from_host = nullptr;
  decltype(&nvimgcodecCodeStreamGetSubCodeStream) sub_stream = nullptr;
  decltype(&nvimgcodecCodeStreamGetImageInfo) stream_info = nullptr;
  decltype(&nvimgcodecCodeStreamDestroy) stream_destroy = nullptr;
  decltype(&nvimgcodecImageCreate) image_create = nullptr;
  decltype(&nvimgcodecImageDestroy) image_destroy = nullptr;
  decltype(&nvimgcodecFutureWaitForAll) future_wait = nullptr;
  decltype(&nvimgcodecFutureGetProcessingStatus) future_status = nullptr;
  decltype(&nvimgcodecFutureDestroy) future_destroy = nullptr;
  std::filesystem::path folder;  // holds libnvimgcodec.so.0 and extensions/
};

namespace {

namespace fs = std::filesystem;
using Api = NvImageCodecApi;

// The folders to look in: $FULGUR_NVIMGCODEC_DIR, then the wheel beside
// the torch wheel this process runs (site-packages/nvidia/nvimgcodec), then
// the loader's search path.
std::vector<fs::path> candidate_folders() {
  std::vector<fs::path> folders;
  if (const char* dir = std::getenv("FULGUR_NVIMGCODEC_DIR"); dir && *dir) folders.emplace_back(dir);
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&c10::GetCPUAllocator), &info) != 0 && info.dli_fname != nullptr) {
    // site-packages/torch/lib/libc10.so
    folders.push_back(fs::path(info.dli_fname).parent_path().parent_path().parent_path() / "nvidia" / "nvimgcodec");
  }
  return folders;
}

// Loads the library once per process; `error` says why not.
const Api* load_api(std::string& error) {
  static std::once_flag once;
  static Api api;
  static std::string why;
  static bool loaded = false;
  std::call_once(once, [] {
    void* handle = nullptr;
    std::string tried;
    for (const fs::path& folder : candidate_folders()) {
      const fs::path file = folder / "libnvimgcodec.so.0";
      tried += " '" + file.string() + "'";
      if ((handle = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL)) != nullptr) {
        api.folder = folder;
        break;
      }
    }
    if (handle == nullptr) {
      tried += " 'libnvimgcodec.so.0' (the loader's path)";
      if ((handle = ::dlopen("libnvimgcodec.so.0", RTLD_NOW | RTLD_LOCAL)) != nullptr) {
        Dl_info info{};
        if (::dladdr(::dlsym(handle, "nvimgcodecInstanceCreate"), &info) != 0 && info.dli_fname != nullptr) {
          api.folder = fs::path(info.dli_fname).parent_path();
        }
      }
    }
    if (handle == nullptr) {
      why = "libnvimgcodec.so.0 not found (tried" + tried +
            "); install the nvidia-nvimgcodec-cu13 wheel or set FULGUR_NVIMGCODEC_DIR to its folder";
      return;
    }
    bool complete = true;
    auto resolve = [&](auto& slot, const char* name) {
      slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(::dlsym(handle, name));
      if (slot == nullptr) {
        why += std::string(why.empty() ? "" : ", ") + name;
        complete = false;
      }
    };
    resolve(api.instance_create, "nvimgcodecInstanceCreate");
    resolve(api.instance_destroy, "nvimgcodecInstanceDestroy");
    resolve(api.extension_create, "nvimgcodecExtensionCreate");
    resolve(api.extension_destroy, "nvimgcodecExtensionDestroy");
    resolve(api.decoder_create, "nvimgcodecDecoderCreate");
    resolve(api.decoder_destroy, "nvimgcodecDecoderDestroy");
    resolve(api.decoder_decode, "nvimgcodecDecoderDecode");
    resolve(api.stream_from_host, "nvimgcodecCodeStreamCreateFromHostMem");
    resolve(api.sub_stream, "nvimgcodecCodeStreamGetSubCodeStream");
    resolve(api.stream_info, "nvimgcodecCodeStreamGetImageInfo");
    resolve(api.stream_destroy, "nvimgcodecCodeStreamDestroy");
    resolve(api.image_create, "nvimgcodecImageCreate");
    resolve(api.image_destroy, "nvimgcodecImageDestroy");
    resolve(api.future_wait, "nvimgcodecFutureWaitForAll");
    resolve(api.future_status, "nvimgcodecFutureGetProcessingStatus");
    resolve(api.future_destroy, "nvimgcodecFutureDestroy");
    if (!complete) {
      why = "libnvimgcodec.so.0 in '" + api.folder.string() + "' lacks " + why + " (fulgur needs nvImageCodec 0.9)";
      return;
    }
    loaded = true;
  });
  error = why;
  return loaded ? &api : nullptr;
}

// extensions/<stem>.so* beside the library (the wheel versions the names).
fs::path find_extension(const fs::path& folder, const std::string& stem) {
  std::error_code ignored;
  for (const auto& entry : fs::directory_iterator(folder / "extensions", ignored)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(stem + ".so", 0) == 0) return entry.path();
  }
  return {};
}

// nvJPEG (the nvidia-nvjpeg wheel) for the GPU extension, made global so the
// extension's own dlopen by soname finds it.
void preload_nvjpeg(const fs::path& folder) {
  for (const fs::path& file : {folder / "libnvjpeg.so.13", folder / ".." / "cu13" / "lib" / "libnvjpeg.so.13"}) {
    if (::dlopen(file.c_str(), RTLD_NOW | RTLD_GLOBAL) != nullptr) return;
  }
}

// libjpeg decoders fill a stream that ends early with grey and only warn;
// the CPU path refuses it. A JPEG whose last bytes hold no EOI marker
// (FF D9) goes back to the caller, whose decoder decides.
bool ends_with_eoi(const uint8_t* data, size_t size) {
  const size_t tail = size < 64 ? size : 64;
  for (size_t i = size - tail; i + 1 < size; ++i) {
    if (data[i] == 0xFF && data[i + 1] == 0xD9) return true;
  }
  return false;
}

std::string status_text(nvimgcodecStatus_t status) { return "nvImageCodec status " + std::to_string(status); }

template <class T>
T described(nvimgcodecStructureType_t type) {
  T value{};
  value.struct_type = type;
  value.struct_size = sizeof(T);
  value.struct_next = nullptr;
  return value;
}

}  // namespace

struct NvImageCodecDecoder::State {
  const Api* api = nullptr;
  nvimgcodecInstance_t instance = nullptr;
  std::vector<nvimgcodecExtension_t> extensions;
  std::vector<void*> extension_handles;
  // Tried in order; each names the engine it stands for.
  std::vector<std::pair<DecodeEngine, nvimgcodecDecoder_t>> decoders;
  int device = 0;
  std::mutex mutex;

  ~State() {
    if (api == nullptr) return;
    for (auto& entry : decoders) api->decoder_destroy(entry.second);
    for (auto extension : extensions) api->extension_destroy(extension);
    if (instance != nullptr) api->instance_destroy(instance);
  }

  void add_extension(const std::string& stem) {
    const fs::path file = find_extension(api->folder, stem);
    void* handle = file.empty() ? nullptr : ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      throw std::runtime_error("[NvImageCodecDecoder] extension " + stem + " not found or not loadable in '" +
                               (api->folder / "extensions").string() + "'" +
                               (file.empty() ? std::string() : std::string(": ") + ::dlerror()));
    }
    extension_handles.push_back(handle);
    const auto entry = reinterpret_cast<nvimgcodecExtensionModuleEntryFunc_t>(::dlsym(handle, "nvimgcodecExtensionModuleEntry"));
    auto desc = described<nvimgcodecExtensionDesc_t>(NVIMGCODEC_STRUCTURE_TYPE_EXTENSION_DESC);
    nvimgcodecExtension_t extension = nullptr;
    nvimgcodecStatus_t status = entry == nullptr ? NVIMGCODEC_STATUS_EXTENSION_INVALID_PARAMETER : entry(&desc);
    if (status == NVIMGCODEC_STATUS_SUCCESS) status = api->extension_create(instance, &extension, &desc);
    if (status != NVIMGCODEC_STATUS_SUCCESS) {
      throw std::runtime_error("[NvImageCodecDecoder] extension '" + file.string() + "' failed: " + status_text(status));
    }
    extensions.push_back(extension);
  }
};

std::optional<std::string> NvImageCodecDecoder::unavailable_reason() {
  std::string error;
  if (load_api(error) == nullptr) return error;
  return std::nullopt;
}

NvImageCodecDecoder::NvImageCodecDecoder(Backend backend, int device, int cpu_threads, int batch_size)
    : backend_(backend), state_(std::make_unique<State>()) {
  std::string error;
  state_->api = load_api(error);
  if (state_->api == nullptr) throw std::runtime_error("[NvImageCodecDecoder] " + error);
  const Api& api = *state_->api;
  state_->device = device;

  auto create_info = described<nvimgcodecInstanceCreateInfo_t>(NVIMGCODEC_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
  create_info.load_builtin_modules = 1;  // the JPEG parser
  create_info.load_extension_modules = 0;  // only the decoders below, no JPEG 2000 / TIFF noise
  if (const auto status = api.instance_create(&state_->instance, &create_info); status != NVIMGCODEC_STATUS_SUCCESS) {
    throw std::runtime_error("[NvImageCodecDecoder] creating the instance failed: " + status_text(status));
  }
  if (backend == Backend::Gpu) {
    preload_nvjpeg(api.folder);
    state_->add_extension("libnvjpeg_ext");
  }
  state_->add_extension("libjpeg_turbo_ext");

  // One decoder per engine, so each image's engine is known (DecodeCascade).
  auto make_decoder = [&](std::vector<nvimgcodecBackendKind_t> kinds, const std::string& options) {
    std::vector<nvimgcodecBackend_t> backends;
    for (const auto kind : kinds) {
      auto entry = described<nvimgcodecBackend_t>(NVIMGCODEC_STRUCTURE_TYPE_BACKEND);
      entry.kind = kind;
      entry.params = described<nvimgcodecBackendParams_t>(NVIMGCODEC_STRUCTURE_TYPE_BACKEND_PARAMS);
      // The whole batch to this backend, decided here once: the default
      // policy sizes the share from the first call's batch for good.
      entry.params.load_hint = 1.0f;
      entry.params.load_hint_policy = NVIMGCODEC_LOAD_HINT_POLICY_FIXED;
      backends.push_back(entry);
    }
    auto params = described<nvimgcodecExecutionParams_t>(NVIMGCODEC_STRUCTURE_TYPE_EXECUTION_PARAMS);
    params.device_id = backend == Backend::Gpu ? device : NVIMGCODEC_DEVICE_CPU_ONLY;
    params.max_num_cpu_threads = cpu_threads;
    params.num_backends = static_cast<int>(backends.size());
    params.backends = backends.data();
    nvimgcodecDecoder_t decoder = nullptr;
    const auto status = api.decoder_create(state_->instance, &decoder, &params, options.empty() ? nullptr : options.c_str());
    return std::make_pair(status, decoder);
  };
  if (backend == Backend::Gpu) {
    // The hardware engine first; what it refuses (progressive, odd
    // subsampling, huge) goes to nvJPEG's CUDA and hybrid decoders. A GPU
    // without JPEG engines has no hardware decoder: the CUDA one does all.
    const std::string hw_options =
        batch_size > 0 ? "nvjpeg_hw_decoder:preallocate_batch_size=" + std::to_string(batch_size) : std::string();
    if (auto [status, decoder] = make_decoder({NVIMGCODEC_BACKEND_KIND_HW_GPU_ONLY}, hw_options);
        status == NVIMGCODEC_STATUS_SUCCESS && decoder != nullptr) {
      state_->decoders.emplace_back(DecodeEngine::Hardware, decoder);
    }
    auto [status, decoder] =
        make_decoder({NVIMGCODEC_BACKEND_KIND_GPU_ONLY, NVIMGCODEC_BACKEND_KIND_HYBRID_CPU_GPU}, std::string());
    if (status != NVIMGCODEC_STATUS_SUCCESS) {
      throw std::runtime_error("[NvImageCodecDecoder] creating the CUDA decoder failed: " + status_text(status));
    }
    state_->decoders.emplace_back(DecodeEngine::Cuda, decoder);
  } else {
    auto [status, decoder] = make_decoder({NVIMGCODEC_BACKEND_KIND_CPU_ONLY}, std::string());
    if (status != NVIMGCODEC_STATUS_SUCCESS) {
      throw std::runtime_error("[NvImageCodecDecoder] creating the decoder failed: " + status_text(status));
    }
    state_->decoders.emplace_back(DecodeEngine::Cpu, decoder);
  }
}

NvImageCodecDecoder::~NvImageCodecDecoder() = default;

bool NvImageCodecDecoder::has_hardware_decoder() const {
  return !state_->decoders.empty() && state_->decoders.front().first == DecodeEngine::Hardware;
}

std::vector<DecodeEngine> NvImageCodecDecoder::decode(const std::vector<BatchDecodeItem>& items, void* cuda_stream) {
  const Api& api = *state_->api;
  std::vector<DecodeEngine> engines(items.size(), DecodeEngine::None);
  std::vector<nvimgcodecCodeStream_t> streams;  // every stream made, destroyed at the end
  std::vector<nvimgcodecCodeStream_t> batch_streams;
  std::vector<nvimgcodecImage_t> batch_images;
  std::vector<size_t> batch_items;
  const auto buffer_kind = backend_ == Backend::Gpu ? NVIMGCODEC_IMAGE_BUFFER_KIND_STRIDED_DEVICE
                                                    : NVIMGCODEC_IMAGE_BUFFER_KIND_STRIDED_HOST;
  std::lock_guard<std::mutex> lock(state_->mutex);
  for (size_t i = 0; i < items.size(); ++i) {
    const BatchDecodeItem& item = items[i];
    if (!ends_with_eoi(item.data, item.size)) continue;
    nvimgcodecCodeStream_t stream = nullptr;
    if (api.stream_from_host(state_->instance, &stream, item.data, item.size, nullptr) != NVIMGCODEC_STATUS_SUCCESS) {
      continue;
    }
    streams.push_back(stream);
    auto info = described<nvimgcodecImageInfo_t>(NVIMGCODEC_STRUCTURE_TYPE_IMAGE_INFO);
    if (api.stream_info(stream, &info) != NVIMGCODEC_STATUS_SUCCESS || std::string(info.codec_name) != "jpeg" ||
        info.color_spec == NVIMGCODEC_COLORSPEC_CMYK || info.color_spec == NVIMGCODEC_COLORSPEC_YCCK) {
      continue;  // CMYK/YCCK: the caller converts as Pillow does
    }
    int64_t height = info.plane_info[0].height;
    int64_t width = info.plane_info[0].width;
    if (item.region.height > 0 && item.region.width > 0) {
      auto view = described<nvimgcodecCodeStreamView_t>(NVIMGCODEC_STRUCTURE_TYPE_CODE_STREAM_VIEW);
      view.region = described<nvimgcodecRegion_t>(NVIMGCODEC_STRUCTURE_TYPE_REGION);
      view.region.ndim = 2;
      view.region.start[0] = static_cast<int>(item.region.top);
      view.region.start[1] = static_cast<int>(item.region.left);
      view.region.end[0] = static_cast<int>(item.region.top + item.region.height);
      view.region.end[1] = static_cast<int>(item.region.left + item.region.width);
      nvimgcodecCodeStream_t sub = nullptr;
      if (api.sub_stream(stream, &sub, &view) != NVIMGCODEC_STATUS_SUCCESS) continue;
      streams.push_back(sub);
      stream = sub;
      height = item.region.height;
      width = item.region.width;
    }
    auto out = described<nvimgcodecImageInfo_t>(NVIMGCODEC_STRUCTURE_TYPE_IMAGE_INFO);
    out.color_spec = NVIMGCODEC_COLORSPEC_SRGB;
    out.chroma_subsampling = NVIMGCODEC_SAMPLING_NONE;
    out.sample_format = NVIMGCODEC_SAMPLEFORMAT_I_RGB;
    out.num_planes = 1;
    out.plane_info[0] = described<nvimgcodecImagePlaneInfo_t>(NVIMGCODEC_STRUCTURE_TYPE_IMAGE_PLANE_INFO);
    out.plane_info[0].height = static_cast<uint32_t>(height);
    out.plane_info[0].width = static_cast<uint32_t>(width);
    out.plane_info[0].row_stride = static_cast<size_t>(width) * 3;
    out.plane_info[0].num_channels = 3;
    out.plane_info[0].sample_type = NVIMGCODEC_SAMPLE_DATA_TYPE_UINT8;
    out.plane_info[0].precision = 8;
    out.buffer = item.out;
    out.buffer_kind = buffer_kind;
    out.cuda_stream = static_cast<cudaStream_t>(cuda_stream);
    nvimgcodecImage_t image = nullptr;
    if (api.image_create(state_->instance, &image, &out) != NVIMGCODEC_STATUS_SUCCESS) continue;
    batch_streams.push_back(stream);
    batch_images.push_back(image);
    batch_items.push_back(i);
  }
  // Each decoder in turn on what the earlier ones left.
  DecodeCascade cascade;
  for (const auto& [engine, decoder] : state_->decoders) {
    cascade.add(engine, [&, decoder = decoder](const std::vector<size_t>& which) {
      std::vector<nvimgcodecCodeStream_t> stage_streams;
      std::vector<nvimgcodecImage_t> stage_images;
      for (const size_t k : which) {
        stage_streams.push_back(batch_streams[k]);
        stage_images.push_back(batch_images[k]);
      }
      std::vector<bool> decoded(which.size(), false);
      auto params = described<nvimgcodecDecodeParams_t>(NVIMGCODEC_STRUCTURE_TYPE_DECODE_PARAMS);
      params.apply_exif_orientation = 0;  // as torchvision and the CPU path
      nvimgcodecFuture_t future = nullptr;
      if (api.decoder_decode(decoder, stage_streams.data(), stage_images.data(), static_cast<int>(stage_images.size()),
                             &params, &future) != NVIMGCODEC_STATUS_SUCCESS) {
        return decoded;
      }
      api.future_wait(future);
      std::vector<nvimgcodecProcessingStatus_t> statuses(stage_images.size(), NVIMGCODEC_PROCESSING_STATUS_FAIL);
      size_t count = statuses.size();
      if (api.future_status(future, statuses.data(), &count) == NVIMGCODEC_STATUS_SUCCESS) {
        for (size_t k = 0; k < count && k < decoded.size(); ++k) {
          decoded[k] = statuses[k] == NVIMGCODEC_PROCESSING_STATUS_SUCCESS;
        }
      }
      api.future_destroy(future);
      return decoded;
    });
  }
  const std::vector<DecodeEngine> batch_engines = cascade.run(batch_images.size());
  for (size_t k = 0; k < batch_items.size(); ++k) engines[batch_items[k]] = batch_engines[k];
  for (auto image : batch_images) api.image_destroy(image);
  for (auto it = streams.rbegin(); it != streams.rend(); ++it) api.stream_destroy(*it);
  return engines;
}

}  // namespace fulgur
