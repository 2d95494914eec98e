#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace fulgur {

/// Horovod's tensor fusion: many small gradients are copied into one flat
/// buffer so that a single collective reduces them all, then copied back.
/// The buffer holds the wire type (float16 when compressing), is allocated
/// once and grows only when a larger group arrives.
class FusionBuffer {
 public:
  FusionBuffer(torch::ScalarType wire_type, torch::Device device);

  /// Copies `tensors` (flattened, cast to the wire type, multiplied by
  /// `scale`) one after another into the buffer; returns the filled part.
  torch::Tensor pack(const std::vector<torch::Tensor>& tensors, double scale = 1.0);
  /// Copies the filled part back into `outputs` (same shapes as packed),
  /// casting to each output's type.
  void unpack(const std::vector<torch::Tensor>& outputs) const;

  torch::ScalarType wire_type() const { return wire_type_; }

 private:
  torch::ScalarType wire_type_;
  torch::Device device_;
  torch::Tensor storage_;
  int64_t filled_ = 0;
};

}  // namespace fulgur
