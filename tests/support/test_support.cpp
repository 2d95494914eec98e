#include "test_support.hpp"
#include "metrics_csv.hpp"

#include <fulgur/strategies/launchers/network.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace fulgur::testing {

TempDir::TempDir(const std::string& name)
    : path_(std::filesystem::path(FULGUR_BINARY_DIR) / "test-tmp" / (name + "-" + std::to_string(::getpid()))) {
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

void remove_temp_dirs_of_this_process() {
  const std::string suffix = "-" + std::to_string(::getpid());
  std::error_code ignored;
  std::vector<std::filesystem::path> ours;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(FULGUR_BINARY_DIR) / "test-tmp", ignored)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > suffix.size() && name.ends_with(suffix)) ours.push_back(entry.path());
  }
  for (const auto& path : ours) std::filesystem::remove_all(path, ignored);
}

CommandResult run_command(const std::string& command, int timeout_s) {
  const std::string wrapped = "timeout -k 5 " + std::to_string(timeout_s) + " sh -c '" + [&] {
    std::string escaped;
    for (char c : command) escaped += (c == '\'') ? std::string("'\\''") : std::string(1, c);
    return escaped;
  }() + "' 2>&1";
  FILE* pipe = ::popen(wrapped.c_str(), "r");
  if (!pipe) throw std::runtime_error("popen failed for: " + command);
  std::string output;
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) output.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return {code, output};
}

std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "<no exception>";
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::filesystem::path only_checkpoint(const std::filesystem::path& folder) {
  std::vector<std::filesystem::path> found;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(folder)) {
    if (entry.path().extension() == ".ckpt" && entry.path().filename() != "last.ckpt") found.push_back(entry.path());
  }
  if (found.size() != 1) {
    throw std::runtime_error(folder.string() + ": " + std::to_string(found.size()) + " checkpoint files besides last.ckpt, not one");
  }
  return found.front();
}

std::filesystem::path last_checkpoint(const std::filesystem::path& folder) {
  for (const auto& entry : std::filesystem::recursive_directory_iterator(folder)) {
    if (entry.path().filename() == "last.ckpt") return entry.path();
  }
  throw std::runtime_error(folder.string() + ": no last.ckpt");
}

int64_t stop_step(const std::string& output, const std::string& signal, int64_t ranks) {
  int64_t step = -1;
  for (int64_t r = 0; r < ranks; ++r) {
    const std::string said = "rank " + std::to_string(r) + ": " + signal + " received, stopping after step ";
    const size_t at = output.find(said);
    if (at == std::string::npos) throw std::runtime_error("rank " + std::to_string(r) + " did not say it stops on " + signal);
    const int64_t mine = std::stoll(output.substr(at + said.size()));
    if (r > 0 && mine != step) {
      throw std::runtime_error("rank " + std::to_string(r) + " stops after step " + std::to_string(mine) + ", rank 0 after " +
                               std::to_string(step));
    }
    step = mine;
  }
  return step;
}

std::filesystem::path copy_checkpoint(const std::filesystem::path& file, const std::filesystem::path& folder) {
  std::filesystem::create_directories(folder);
  const std::string stem = file.filename().string() + ".";
  for (const auto& entry : std::filesystem::directory_iterator(file.parent_path())) {
    if (entry.path().filename().string().rfind(stem, 0) == 0) {
      std::filesystem::copy_file(entry.path(), folder / entry.path().filename());
    }
  }
  std::filesystem::copy_file(file, folder / file.filename());
  return folder / file.filename();
}

int64_t checkpoint_parts(const std::filesystem::path& file) {
  int64_t parts = 0;
  const std::string stem = file.filename().string() + ".";
  for (const auto& entry : std::filesystem::directory_iterator(file.parent_path())) {
    const std::string name = entry.path().filename().string();
    parts += name.rfind(stem, 0) == 0 && name.find(".shard-") != std::string::npos;
  }
  return parts;
}

std::string joined_differs(const std::filesystem::path& sharded, const std::filesystem::path& whole) {
  const std::filesystem::path joined = sharded.string() + ".joined";
  const auto tool = run_command(std::string(FULGUR_BINARY_DIR) + "/bin/fulgur_consolidate " + sharded.string() + " " +
                                    joined.string(), 120);
  if (tool.exit_code != 0) return "fulgur_consolidate failed: " + tool.output;
  const auto same = run_command(std::string(FULGUR_PYTHON) + " " + FULGUR_SOURCE_DIR +
                                    "/tests/support/same_checkpoints.py " + joined.string() + " " + whole.string(),
                                120);
  if (same.exit_code != 0 || same.output.find("same ") == std::string::npos) return same.output;
  return "";
}

}  // namespace fulgur::testing

namespace fulgur::testing {

double last_csv_value(const std::string& csv, const std::string& column) {
  const auto values = csv_column(csv, column);
  return values.empty() ? -1 : std::stod(values.back().second);
}

bool can_bind(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("[can_bind] socket() failed");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool bound = ::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0;
  ::close(fd);
  return bound;
}

int free_port() {
  int ephemeral_low = 32768;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> ephemeral_low;
  constexpr int kLowest = 10000;
  if (ephemeral_low <= kLowest + 1000) return fulgur::pick_free_port("127.0.0.1");
  std::mt19937 draw(std::random_device{}());
  std::uniform_int_distribution<int> ports(kLowest, ephemeral_low - 1);
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int port = ports(draw);
    if (can_bind(port)) return port;
  }
  throw std::runtime_error("[free_port] no free TCP port below " + std::to_string(ephemeral_low) + " on 127.0.0.1");
}


}  // namespace fulgur::testing
