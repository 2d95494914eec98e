#pragma once

#include <torch/torch.h>

#include <string>

namespace fulgur {

/// Parameters then buffers of `module`, keyed by their dotted names
/// (torchvision style: "layer1.0.conv1.weight", "bn1.running_mean",
/// "bn1.num_batches_tracked"), in registration order, then the persistent
/// states of its metrics ("val_f1.confmat"; none unless a metric asks). The tensors share
/// storage with the module (detached); clone them to keep a snapshot.
c10::Dict<std::string, torch::Tensor> state_dict(const torch::nn::Module& module);

/// Copies `state` into the module's parameters, buffers and persistent
/// metric states (a Cat state takes any number of rows) (no_grad, keeps
/// the module's device/dtype). strict: every key must match both ways and
/// shapes must agree, else std::invalid_argument naming the first
/// missing/unexpected key or the key and both shapes. Not strict: keys
/// present on one side only are skipped, but a shape mismatch still throws.
/// Everything is checked before the first copy, so an error leaves the
/// module unchanged.
void load_state_dict(torch::nn::Module& module, const c10::Dict<std::string, torch::Tensor>& state,
                     bool strict = true);

}  // namespace fulgur
