#include <fulgur/core/first_line.hpp>
#include <fulgur/modules/state_dict.hpp>
#include <fulgur/modules/weights_file.hpp>

#include <caffe2/serialize/inline_container.h>
#include <fmt/format.h>
#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickler.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace fulgur {

c10::Dict<std::string, torch::Tensor> read_state_dict(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument(fmt::format("[read_state_dict] cannot open weights file '{}'", path));
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  torch::IValue value;
  try {
    value = torch::pickle_load(bytes);
  } catch (const std::exception& e) {
    const std::string what = e.what();
    if (what.find("Expected GenericDict but got None") != std::string::npos) {
      // LibTorch's unpickler cannot rebuild collections.OrderedDict (pytorch#100741).
      throw std::invalid_argument(fmt::format(
          "[read_state_dict] '{}' holds an OrderedDict, which LibTorch cannot read; save it from Python as "
          "torch.save(dict(model.state_dict()), path)",
          path));
    }
    throw std::invalid_argument(fmt::format("[read_state_dict] '{}' is not a file written by torch.save: {}", path,
                                            detail::first_line(what)));
  }
  if (!value.isGenericDict()) {
    throw std::invalid_argument(fmt::format("[read_state_dict] '{}' holds a {}, expected a dict of name -> tensor",
                                         path, value.tagKind()));
  }
  if (value.toGenericDict().contains("state_dict")) {
    throw std::invalid_argument(fmt::format(
        "[read_state_dict] '{}' is a training checkpoint (weights under 'state_dict', with optimizer and loop "
        "state), not a weights file: load it with fulgur::load_from_checkpoint<Model>(path), or its weights into "
        "a module with fulgur::load_checkpoint_weights(module, path)",
        path));
  }
  c10::Dict<std::string, torch::Tensor> state;
  for (const auto& entry : value.toGenericDict()) {
    if (!entry.key().isString() || !entry.value().isTensor()) {
      throw std::invalid_argument(fmt::format("[read_state_dict] '{}' has an entry {} -> {}, expected name -> tensor",
                                           path, entry.key().tagKind(), entry.value().tagKind()));
    }
    state.insert(entry.key().toStringRef(), entry.value().toTensor());
  }
  return state;
}

void write_state_dict(const c10::Dict<std::string, torch::Tensor>& state, const std::string& path) {
  // Saved tensors must own compact CPU storage to be read back as such.
  c10::impl::GenericDict compact(c10::StringType::get(), c10::AnyType::get());
  for (const auto& entry : state) compact.insert(entry.key(), entry.value().detach().cpu().contiguous().clone());
  // Pickled as CheckpointIO::save does, not with torch::pickle_save: that
  // one wraps every dict, typed or not, in a torch.jit._pickle.restore_type_tag
  // call, a global Python's torch.load(weights_only=True) refuses.
  std::vector<char> pickled;
  torch::jit::Pickler pickler([&](const char* data, size_t size) { pickled.insert(pickled.end(), data, data + size); },
                              /*tensor_table=*/nullptr, /*type_renamer=*/nullptr, /*memoized_class_types=*/nullptr,
                              /*get_tensor_id=*/nullptr, /*tag_aggregates=*/false);
  pickler.protocol();
  pickler.pushIValue(compact);
  pickler.stop();
  std::vector<char> bytes;
  {
    caffe2::serialize::PyTorchStreamWriter writer([&](const void* data, size_t size) -> size_t {
      const auto* begin = static_cast<const char*>(data);
      bytes.insert(bytes.end(), begin, begin + size);
      return size;
    });
    torch::jit::writeArchiveAndTensors("data", pickled.data(), pickled.size(), pickler.tensorData(), writer);
    writer.writeEndOfFile();
  }
  const std::string temp = path + ".tmp";
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      std::remove(temp.c_str());
      throw std::runtime_error(fmt::format("[write_state_dict] cannot write '{}'", temp));
    }
  }
  std::error_code error;
  std::filesystem::rename(temp, path, error);
  if (error) {
    std::remove(temp.c_str());
    throw std::runtime_error(fmt::format("[write_state_dict] cannot rename '{}' to '{}': {}", temp, path,
                                         error.message()));
  }
}

std::vector<std::string> load_pretrained(torch::nn::Module& module, const std::string& path,
                                         const std::string& head_prefix) {
  c10::Dict<std::string, torch::Tensor> state = read_state_dict(path);
  const c10::Dict<std::string, torch::Tensor> own = fulgur::state_dict(module);
  std::vector<std::string> skipped;
  for (const auto& entry : own) {
    const auto found = state.find(entry.key());
    if (found == state.end() || entry.key().rfind(head_prefix, 0) != 0) continue;
    if (found->value().sizes() != entry.value().sizes()) skipped.push_back(entry.key());
  }
  for (const auto& key : skipped) state.insert_or_assign(key, own.at(key));  // keep the fresh head
  try {
    load_state_dict(module, state, /*strict=*/true);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(fmt::format("{} (weights file '{}')", e.what(), path));
  }
  return skipped;
}

}  // namespace fulgur
