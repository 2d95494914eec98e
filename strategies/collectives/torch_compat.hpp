#pragma once

// The LibTorch calls whose names differ across the supported versions
// (2.11 to 2.15, docs/development.md), each behind one version check.

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/version.h>

#define FULGUR_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace fulgur::torch_compat {

/// The flat all-gather: `output` holds every rank's `input`, rank after rank.
/// LibTorch 2.14 renamed `_allgather_base` to `all_gather_single`.
inline c10::intrusive_ptr<c10d::Work> all_gather_single(c10d::Backend& backend, at::Tensor& output,
                                                        at::Tensor& input) {
#if FULGUR_TORCH_AT_LEAST(2, 14)
  return backend.all_gather_single(output, input);
#else
  return backend._allgather_base(output, input);
#endif
}

/// The flat reduce-scatter: `output` gets this rank's slice of the reduced
/// `input`. LibTorch 2.14 renamed `_reduce_scatter_base` to `reduce_scatter_single`.
inline c10::intrusive_ptr<c10d::Work> reduce_scatter_single(c10d::Backend& backend, at::Tensor& output,
                                                            at::Tensor& input, const c10d::ReduceScatterOptions& options) {
#if FULGUR_TORCH_AT_LEAST(2, 14)
  return backend.reduce_scatter_single(output, input, options);
#else
  return backend._reduce_scatter_base(output, input, options);
#endif
}

}  // namespace fulgur::torch_compat
