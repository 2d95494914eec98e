#include <fulgur/strategies/environments/cluster_environment.hpp>

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>
#include <stdexcept>

namespace fulgur {

EnvLookup process_environment() {
  return [](const std::string& var) -> std::optional<std::string> {
    const char* value = std::getenv(var.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

std::string ClusterEnvironment::summary() const {
  std::string text = fmt::format("{}: rank {}/{} (local {}/{}, node {}/{}), ", name(), global_rank(), world_size(),
                                 local_rank(), local_world_size(), node_rank(), num_nodes());
  if (auto path = file_store_path()) return text + "file store " + *path;
  return text + fmt::format("main {}:{}", main_address(), main_port());
}

void ClusterEnvironment::require_lookup(const EnvLookup& env, const std::string& where) {
  if (!env) throw std::invalid_argument(where + " the environment lookup is empty (pass process_environment())");
}

int64_t ClusterEnvironment::parse_int(const std::string& where, const std::string& var, const std::string& text) {
  int64_t value = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec == std::errc::result_out_of_range) {
    throw std::invalid_argument(fmt::format("{} {}='{}' is too large for a 64-bit integer", where, var, text));
  }
  if (ec != std::errc() || ptr != end || text.empty()) {
    throw std::invalid_argument(fmt::format("{} {}='{}' is not an integer", where, var, text));
  }
  return value;
}

int64_t ClusterEnvironment::require_int(const EnvLookup& env, const std::string& where, const std::string& var) {
  const auto text = env(var);
  if (!text) throw std::invalid_argument(fmt::format("{} {} is not set", where, var));
  return parse_int(where, var, *text);
}

std::optional<int64_t> ClusterEnvironment::optional_int(const EnvLookup& env, const std::string& where,
                                                        const std::string& var) {
  const auto text = env(var);
  if (!text) return std::nullopt;
  return parse_int(where, var, *text);
}

void ClusterEnvironment::check_positive(const std::string& where, const std::string& var, int64_t value) {
  if (value < 1) throw std::invalid_argument(fmt::format("{} {}='{}' must be at least 1", where, var, value));
}

void ClusterEnvironment::check_index(const std::string& where, const std::string& var, int64_t value, int64_t bound,
                                     const std::string& bound_text) {
  if (value < 0 || value >= bound) {
    throw std::invalid_argument(
        fmt::format("{} {}='{}' is out of range: expected 0 <= {} < {}", where, var, value, var, bound_text));
  }
}

int ClusterEnvironment::parse_port(const std::string& where, const std::string& var, const std::string& text,
                                   bool allow_zero) {
  const int64_t port = parse_int(where, var, text);
  const int64_t lowest = allow_zero ? 0 : 1;
  if (port < lowest || port > 65535) {
    throw std::invalid_argument(
        fmt::format("{} {}='{}' is not a TCP port: expected {}..65535", where, var, text, lowest));
  }
  return static_cast<int>(port);
}

std::string ClusterEnvironment::require_nonempty(const std::string& where, const std::string& var,
                                                 const std::string& text) {
  if (text.empty()) throw std::invalid_argument(fmt::format("{} {} is set but empty", where, var));
  return text;
}

}  // namespace fulgur
