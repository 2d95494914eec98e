#pragma once

#include <fulgur/strategies/strategy.hpp>

namespace fulgur {

/// One process, one device: collectives are the identity.
class SingleDeviceStrategy : public Strategy {
 public:
  SingleDeviceStrategy(Accelerator accelerator, PrecisionMode precision, torch::Device device);

  std::string name() const override { return "single_device"; }
  torch::Tensor all_reduce(const torch::Tensor& tensor, ReduceOp op) override;
  torch::Tensor broadcast(const torch::Tensor& tensor, int64_t source_rank) override;
  torch::Tensor all_gather(const torch::Tensor& tensor) override;
  void barrier(const std::string& name) override;
};

}  // namespace fulgur
