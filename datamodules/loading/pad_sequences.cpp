#include <fulgur/datamodules/loading/pad_sequences.hpp>

#include <fmt/format.h>

#include <sstream>
#include <stdexcept>

namespace fulgur {

PaddedSequences pad_sequences(const std::vector<torch::Tensor>& sequences, double padding_value) {
  if (sequences.empty()) throw std::invalid_argument("[pad_sequences] no sequences to pad");
  const torch::Tensor& first = sequences.front();
  if (first.dim() < 1) throw std::invalid_argument("[pad_sequences] sequence 0 is a scalar; expected [length, ...]");
  int64_t longest = 0;
  for (size_t i = 0; i < sequences.size(); ++i) {
    const torch::Tensor& s = sequences[i];
    if (s.dim() != first.dim() || s.sizes().slice(1) != first.sizes().slice(1) || s.dtype() != first.dtype()) {
      std::ostringstream message;
      message << "[pad_sequences] sequence " << i << " has shape " << s.sizes() << " and type " << s.dtype()
              << " but sequence 0 has " << first.sizes() << " and " << first.dtype()
              << "; only the first dimension (the length) may differ";
      throw std::invalid_argument(message.str());
    }
    longest = std::max(longest, s.size(0));
  }
  std::vector<int64_t> shape{static_cast<int64_t>(sequences.size()), longest};
  for (int64_t d = 1; d < first.dim(); ++d) shape.push_back(first.size(d));
  PaddedSequences out{torch::full(shape, padding_value, first.options()),
                      torch::zeros({static_cast<int64_t>(sequences.size()), longest}, torch::kBool)};
  for (size_t i = 0; i < sequences.size(); ++i) {
    const int64_t length = sequences[i].size(0);
    out.padded[static_cast<int64_t>(i)].narrow(0, 0, length).copy_(sequences[i]);
    out.mask[static_cast<int64_t>(i)].narrow(0, 0, length).fill_(true);
  }
  return out;
}

}  // namespace fulgur
