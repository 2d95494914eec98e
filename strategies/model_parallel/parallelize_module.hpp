#pragma once

#include <fulgur/strategies/model_parallel/device_mesh.hpp>
#include <fulgur/strategies/model_parallel/parallel_style.hpp>

#include <torch/torch.h>

#include <cstdint>
#include <map>

namespace fulgur {

/// Applies `plan` over the mesh's tensor-parallel group, in order: each
/// named ShardableLinear / ShardableEmbedding keeps this rank's part of its
/// weight and does its collectives in forward and backward; a module under
/// SequenceParallel keeps its parameters whole and sums their gradients
/// over tp. With tp of size 1 it changes nothing. A name that matches no
/// submodule (but on a pipeline, where a stage holds only its own layers),
/// a style on a module it cannot split, or a size tp does not divide is one
/// error naming the module. Call it from
/// LightningModule::configure_model, before the optimizers exist.
void parallelize_module(torch::nn::Module& module, const DeviceMesh& mesh, const ParallelPlan& plan);

/// The parameters of `module` that hold a part split over tp, and the
/// dimension they are split along (key: the parameter's TensorImpl).
std::map<const void*, int64_t> split_parameter_dims(const torch::nn::Module& module);

}  // namespace fulgur
