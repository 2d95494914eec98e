#include <fulgur/strategies/collectives/fusion_buffer.hpp>

#include <fmt/format.h>

#include <stdexcept>

namespace fulgur {

FusionBuffer::FusionBuffer(torch::ScalarType wire_type, torch::Device device)
    : wire_type_(wire_type), device_(device) {}

torch::Tensor FusionBuffer::pack(const std::vector<torch::Tensor>& tensors, double scale) {
  int64_t total = 0;
  for (const auto& t : tensors) total += t.numel();
  if (!storage_.defined() || storage_.numel() < total) {
    storage_ = torch::empty({total}, torch::TensorOptions().dtype(wire_type_).device(device_));
  }
  int64_t offset = 0;
  for (const auto& t : tensors) {
    torch::Tensor slot = storage_.narrow(0, offset, t.numel());
    // Scaling before the cast keeps float16 sums of averaged values in range.
    slot.copy_(scale == 1.0 ? t.reshape({-1}) : t.reshape({-1}).mul(scale));
    offset += t.numel();
  }
  filled_ = total;
  return storage_.narrow(0, 0, total);
}

void FusionBuffer::unpack(const std::vector<torch::Tensor>& outputs) const {
  int64_t offset = 0;
  for (const auto& out : outputs) {
    if (offset + out.numel() > filled_) {
      throw std::logic_error(fmt::format("[FusionBuffer::unpack] outputs need more than the {} packed elements",
                                         filled_));
    }
    torch::Tensor(out).copy_(storage_.narrow(0, offset, out.numel()).view(out.sizes()));
    offset += out.numel();
  }
}

}  // namespace fulgur
