#pragma once

#include <fulgur/strategies/collectives/process_group.hpp>

#include <torch/torch.h>

#include <cstdint>

namespace fulgur {

// Spatial parallelism for convolutions (the context-parallel idea for
// images and fields): each rank of `group` (the mesh's cp) holds an equal
// band of rows of every image, rank r the r-th band along `dim`, and a
// convolution needs `halo` rows of each neighbour's band beyond its own.

/// Forward: this rank's band with the previous rank's last `halo` rows
/// before it and the next rank's first `halo` rows after it, along `dim`
/// (zeros beyond the first and the last band, as a convolution's zero
/// padding); point to point with the two neighbours only. Backward: the
/// halos' gradients go back to the ranks whose rows they were and are added
/// to those rows' own. `halo` must not exceed the band.
torch::Tensor halo_exchange(const torch::Tensor& input, int64_t dim, int64_t halo, ProcessGroup& group);

/// `conv` applied to bands of rows (dimension 2 of [batch, channels,
/// height, width]) split over `group`: equals the band of the convolution
/// of the whole images. The convolution must keep the height ("same"
/// padding along it: stride 1, padding = dilation (kernel - 1) / 2, zero
/// padding); its weights stay whole on every rank. Without a group (or a
/// group of one), conv->forward.
torch::Tensor halo_conv2d(const torch::Tensor& input, torch::nn::Conv2dImpl& conv, ProcessGroup* group);

}  // namespace fulgur
