#include <fulgur/strategies/environments/torchrun_environment.hpp>

#include <fmt/format.h>

#include <stdexcept>

namespace fulgur {

bool TorchrunEnvironment::detect(const EnvLookup& env) { return env("RANK").has_value() && env("WORLD_SIZE").has_value(); }

TorchrunEnvironment::TorchrunEnvironment(const EnvLookup& env) {
  const std::string where = "[TorchrunEnvironment::TorchrunEnvironment]";
  require_lookup(env, where);

  world_size_ = require_int(env, where, "WORLD_SIZE");
  check_positive(where, "WORLD_SIZE", world_size_);
  global_rank_ = require_int(env, where, "RANK");
  check_index(where, "RANK", global_rank_, world_size_, fmt::format("WORLD_SIZE={}", world_size_));

  local_world_size_ = require_int(env, where, "LOCAL_WORLD_SIZE");
  check_positive(where, "LOCAL_WORLD_SIZE", local_world_size_);
  if (local_world_size_ > world_size_) {
    throw std::invalid_argument(fmt::format("{} LOCAL_WORLD_SIZE='{}' is larger than WORLD_SIZE={}", where,
                                            local_world_size_, world_size_));
  }
  local_rank_ = require_int(env, where, "LOCAL_RANK");
  check_index(where, "LOCAL_RANK", local_rank_, local_world_size_, fmt::format("LOCAL_WORLD_SIZE={}", local_world_size_));

  // torchrun exports GROUP_WORLD_SIZE; trust it over the division, which is
  // only right when every node runs the same number of processes.
  std::string nodes_text;
  if (auto group_world_size = optional_int(env, where, "GROUP_WORLD_SIZE")) {
    check_positive(where, "GROUP_WORLD_SIZE", *group_world_size);
    num_nodes_ = *group_world_size;
    nodes_text = fmt::format("GROUP_WORLD_SIZE={}", num_nodes_);
  } else {
    if (world_size_ % local_world_size_ != 0) {
      throw std::invalid_argument(fmt::format(
          "{} WORLD_SIZE={} is not a multiple of LOCAL_WORLD_SIZE={}, so the number of nodes is unknown "
          "(set GROUP_WORLD_SIZE)",
          where, world_size_, local_world_size_));
    }
    num_nodes_ = world_size_ / local_world_size_;
    nodes_text = fmt::format("{} nodes (WORLD_SIZE={} / LOCAL_WORLD_SIZE={})", num_nodes_, world_size_,
                             local_world_size_);
  }
  if (auto group_rank = optional_int(env, where, "GROUP_RANK")) {
    check_index(where, "GROUP_RANK", *group_rank, num_nodes_, nodes_text);
    node_rank_ = *group_rank;
  } else {
    node_rank_ = global_rank_ / local_world_size_;
    if (node_rank_ >= num_nodes_) {
      throw std::invalid_argument(fmt::format(
          "{} GROUP_RANK is not set and RANK={} / LOCAL_WORLD_SIZE={} = {} is out of range: expected < {}", where,
          global_rank_, local_world_size_, node_rank_, nodes_text));
    }
  }

  main_address_ = "127.0.0.1";
  if (auto address = env("MASTER_ADDR")) main_address_ = require_nonempty(where, "MASTER_ADDR", *address);
  const auto port = env("MASTER_PORT");
  if (!port) throw std::invalid_argument(fmt::format("{} MASTER_PORT is not set", where));
  main_port_ = parse_port(where, "MASTER_PORT", *port, /*allow_zero=*/false);

  // torchrun --max-restarts restarts every worker against the same agent
  // store; without a key space per attempt they would meet the dead
  // workers' addresses (torch's env:// does the same).
  if (env("TORCHELASTIC_USE_AGENT_STORE") == std::optional<std::string>("True")) {
    hosted_store_prefix_ = fmt::format("fulgur/attempt_{}", env("TORCHELASTIC_RESTART_COUNT").value_or("0"));
  } else if (env("FULGUR_LAUNCHER_STORE") == std::optional<std::string>("1")) {
    hosted_store_prefix_ = "fulgur/launcher";
  }
}

std::string TorchrunEnvironment::world_size_source() const { return fmt::format("WORLD_SIZE={}", world_size_); }

}  // namespace fulgur
