#include <fulgur/ensemble/ensemble_state_file.hpp>

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace fulgur {

namespace {

const std::string kFirstLine = "# fulgur ensemble state ";
const std::string kChecksum = "crc32 ";

// CRC-32 (the zlib / PNG polynomial), bit by bit: a state file is a few kilobytes, read once.
uint32_t crc32(const std::string& bytes) {
  uint32_t crc = 0xffffffffu;
  for (const char c : bytes) {
    crc ^= static_cast<uint8_t>(c);
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

std::string system_error(const std::filesystem::path& path, const char* doing) {
  return fmt::format("[EnsembleStateFile::write] cannot {} {}: {}", doing, path.string(), std::strerror(errno));
}

}  // namespace

std::string EnsembleStateFile::table() const {
  std::ostringstream out;
  for (const auto& [client, a] : accounts) {
    out << "a " << client << ' ' << a.sent << ' ' << a.received << ' ' << a.refused << ' ' << a.trained << ' '
        << a.evicted_untrained << ' ' << a.numbered << ' ' << a.ranks << '\n';
  }
  for (const auto& [reason, count] : refusals) out << "r " << reason << ' ' << count << '\n';
  for (const auto& [client, messages] : held) {
    out << "d " << client << ' ' << messages.below << ' ' << messages.ahead.size();
    for (const uint64_t m : messages.ahead) out << ' ' << m;
    out << '\n';
  }
  return out.str();
}

EnsembleStateFile EnsembleStateFile::parse(const std::string& text, const std::string& where) {
  EnsembleStateFile state;
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    if (!line.empty() && line[0] == '#') continue;
    std::istringstream words(line);
    std::string kind;
    words >> kind;
    bool ok = false;
    if (kind == "a") {
      uint64_t client = 0;
      EnsembleAccount a;
      ok = static_cast<bool>(words >> client >> a.sent >> a.received >> a.refused >> a.trained >>
                             a.evicted_untrained >> a.numbered >> a.ranks);
      state.accounts[client] = a;
    } else if (kind == "r") {
      std::string reason;
      int64_t count = 0;
      ok = static_cast<bool>(words >> reason >> count);
      state.refusals[reason] = count;
    } else if (kind == "d") {
      uint64_t client = 0;
      size_t ahead = 0;
      HeldMessages held;
      ok = static_cast<bool>(words >> client >> held.below >> ahead);
      for (size_t i = 0; ok && i < ahead; ++i) {
        uint64_t message = 0;
        ok = static_cast<bool>(words >> message);
        held.ahead.insert(message);
      }
      state.held[client] = std::move(held);
    }
    std::string rest;
    if (!ok || words >> rest) {
      throw std::invalid_argument(fmt::format("[EnsembleStateFile::parse] {}: line {} is not an 'a', 'r' or 'd' "
                                              "line of this format ('{}')",
                                              where, number, line));
    }
  }
  return state;
}

void EnsembleStateFile::write(const std::filesystem::path& path) const {
  std::string body = kFirstLine + std::to_string(kVersion) + "\n" + table();
  body += fmt::format("{}{:08x}\n", kChecksum, crc32(body));
  const std::filesystem::path temporary = path.string() + ".tmp";
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error(system_error(temporary, "create"));
  size_t done = 0;
  while (done < body.size()) {
    const ssize_t n = ::write(fd, body.data() + done, body.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  std::string error;
  if (done != body.size()) error = system_error(temporary, "write");
  if (error.empty() && ::fsync(fd) != 0) error = system_error(temporary, "flush");
  if (::close(fd) != 0 && error.empty()) error = system_error(temporary, "close");
  if (error.empty() && std::rename(temporary.c_str(), path.c_str()) != 0) error = system_error(path, "rename onto");
  if (!error.empty()) {
    std::remove(temporary.c_str());
    throw std::runtime_error(error);
  }
  // The rename itself survives a crash once the directory is on disk.
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : ".";
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

EnsembleStateFile EnsembleStateFile::read(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument(fmt::format("[EnsembleStateFile::read] cannot open {}", path.string()));
  std::stringstream whole;
  whole << in.rdbuf();
  const std::string text = whole.str();
  const auto refuse = [&](const std::string& why) {
    return std::invalid_argument(fmt::format("[EnsembleStateFile::read] {}: {}; remove the ensemble_state_rank*.txt "
                                             "files to start the run afresh",
                                             path.string(), why));
  };
  const size_t first_end = text.find('\n');
  if (text.rfind(kFirstLine, 0) != 0 || first_end == std::string::npos) {
    throw refuse("not a fulgur ensemble state file (no '" + kFirstLine + "N' line first)");
  }
  const std::string version = text.substr(kFirstLine.size(), first_end - kFirstLine.size());
  if (version != std::to_string(kVersion)) {
    throw refuse(fmt::format("version '{}' of the format; this server reads version {}", version, kVersion));
  }
  const size_t checksum_at = text.rfind("\n" + kChecksum);
  uint32_t stored = 0;
  if (checksum_at == std::string::npos ||
      std::sscanf(text.c_str() + checksum_at + 1 + kChecksum.size(), "%8x", &stored) != 1 ||
      text.size() != checksum_at + 1 + kChecksum.size() + 9 || text.back() != '\n') {
    throw refuse("no checksum line at its end (a file cut short?)");
  }
  const std::string body = text.substr(0, checksum_at + 1);
  if (crc32(body) != stored) throw refuse("its checksum does not match its contents (a damaged or edited file)");
  try {
    return parse(body, path.string());
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string(e.what()) + "; remove the ensemble_state_rank*.txt files to start the "
                                                        "run afresh");
  }
}

}  // namespace fulgur
