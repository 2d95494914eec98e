#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

namespace fulgur {

/// Reads a state dict saved by Python's `torch.save(dict(model.state_dict()), path)`
/// or by write_state_dict(). (A bare `model.state_dict()` is an OrderedDict,
/// which LibTorch's unpickler cannot rebuild; the error says so.) Throws std::invalid_argument naming the file when
/// it is missing, unreadable, or not a dict of string -> tensor.
c10::Dict<std::string, torch::Tensor> read_state_dict(const std::string& path);

/// Writes `state` so that Python's `torch.load(path, weights_only=True)`
/// returns it. The file is written to a temporary name and renamed, so a
/// failure leaves no partial file.
void write_state_dict(const c10::Dict<std::string, torch::Tensor>& state, const std::string& path);

/// Loads weights for fine-tuning: every key must match (as strict
/// load_state_dict) except those under `head_prefix` (the classifier, "fc."
/// for ResNets) whose shape differs from the module's, which keep their
/// fresh initialisation. Returns the skipped keys.
std::vector<std::string> load_pretrained(torch::nn::Module& module, const std::string& path,
                                         const std::string& head_prefix = "fc.");

}  // namespace fulgur
