#include <fulgur/engine/checkpoint/checkpoint_error.hpp>

#include <fulgur/strategies/strategy.hpp>

namespace fulgur {

void agree_on_failure(Strategy& strategy, std::string& error, const std::string& otherwise) {
  if (strategy.world_size() > 1) {
    const torch::Tensor failed = torch::tensor({error.empty() ? 0.0 : 1.0}).to(strategy.root_device());
    if (strategy.all_reduce(failed, ReduceOp::Max).item<double>() > 0 && error.empty()) error = otherwise;
  }
  if (!error.empty()) throw CheckpointError(error);
}

}  // namespace fulgur
