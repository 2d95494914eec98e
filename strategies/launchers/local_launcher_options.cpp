#include <fulgur/strategies/launchers/local_launcher_options.hpp>

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace fulgur {

void LocalLauncherOptions::check(const std::string& where) const {
  if (nprocs() < 1) throw std::invalid_argument(fmt::format("{} nprocs must be >= 1, got {}", where, nprocs()));
  if (num_nodes() < 1) {
    throw std::invalid_argument(fmt::format("{} num_nodes must be >= 1, got {}", where, num_nodes()));
  }
  if (node_rank() < 0 || node_rank() >= num_nodes()) {
    throw std::invalid_argument(fmt::format("{} node_rank must be in [0, num_nodes) = [0, {}), got {}", where,
                                            num_nodes(), node_rank()));
  }
  if (main_address().empty()) throw std::invalid_argument(where + " main_address must not be empty");
  if (main_port() < 0 || main_port() > 65535) {
    throw std::invalid_argument(fmt::format("{} main_port must be in [0, 65535], got {}", where, main_port()));
  }
  if (main_port() == 0 && num_nodes() > 1) {
    throw std::invalid_argument(fmt::format(
        "{} main_port 0 (pick a free port) needs num_nodes == 1, got num_nodes {}; set main_port to a port every "
        "node agrees on",
        where, num_nodes()));
  }
  if (!std::isfinite(grace_period_s()) || grace_period_s() < 0) {
    throw std::invalid_argument(
        fmt::format("{} grace_period_s must be a finite number >= 0, got {}", where, grace_period_s()));
  }
}

std::vector<std::pair<std::string, std::string>> LocalLauncherOptions::rank_environment(int64_t local_rank,
                                                                                        int64_t port) const {
  std::vector<std::pair<std::string, std::string>> environment = {
      {"RANK", std::to_string(global_rank(local_rank))},
      {"WORLD_SIZE", std::to_string(nprocs() * num_nodes())},
      {"LOCAL_RANK", std::to_string(local_rank)},
      {"LOCAL_WORLD_SIZE", std::to_string(nprocs())},
      {"GROUP_RANK", std::to_string(node_rank())},
      {"MASTER_ADDR", main_address()},
      {"MASTER_PORT", std::to_string(port)},
      {"FULGUR_LAUNCHED", "1"},
      {"FULGUR_LAUNCHER_STORE", "1"}};
  if (passive_openmp() && std::getenv("OMP_WAIT_POLICY") == nullptr) {
    environment.emplace_back("OMP_WAIT_POLICY", "PASSIVE");
  }
  return environment;
}

}  // namespace fulgur
