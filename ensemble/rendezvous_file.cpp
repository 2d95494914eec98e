#include <fulgur/ensemble/rendezvous_file.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

namespace fulgur {

namespace {

std::string hex(const WireHeader::Key& key) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (const uint8_t byte : key) {
    out += digits[byte >> 4];
    out += digits[byte & 15];
  }
  return out;
}

bool unhex(const std::string& text, WireHeader::Key& key) {
  if (text.size() != 2 * key.size()) return false;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  for (size_t i = 0; i < key.size(); ++i) {
    const int high = nibble(text[2 * i]);
    const int low = nibble(text[2 * i + 1]);
    if (high < 0 || low < 0) return false;
    key[i] = static_cast<uint8_t>(high * 16 + low);
  }
  return true;
}

}  // namespace

WireHeader::Key RendezvousFile::new_key() {
  std::random_device source;  // the system's entropy (getrandom)
  WireHeader::Key key{};
  for (auto& byte : key) byte = static_cast<uint8_t>(source());
  return key;
}

RendezvousFile RendezvousFile::read(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("[RendezvousFile::read] cannot open '" + path.string() + "'");
  RendezvousFile file;
  bool has_key = false;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string word, value;
    words >> word;
    const auto bad = [&](const std::string& why) {
      return std::invalid_argument("[RendezvousFile::read] " + path.string() + ":" + std::to_string(number) + ": " +
                                   why + " ('" + line + "')");
    };
    if (word == "key") {
      if (!(words >> value) || !unhex(value, file.key)) throw bad("the key must be 32 lowercase hex digits");
      has_key = true;
    } else if (word == "rank") {
      size_t rank = 0;
      if (!(words >> rank >> value) || rank != file.endpoints.size() || value.rfind("tcp://", 0) != 0) {
        throw bad("expected 'rank " + std::to_string(file.endpoints.size()) + " tcp://HOST:PORT'");
      }
      file.endpoints.push_back(value);
    } else {
      throw bad("unknown entry '" + word + "'");
    }
  }
  if (!has_key || file.endpoints.empty()) {
    throw std::invalid_argument("[RendezvousFile::read] " + path.string() + " holds no key or no rank");
  }
  return file;
}

void RendezvousFile::write(const std::filesystem::path& path) const {
  std::ostringstream text;
  text << "# fulgur ensemble rendezvous: the run's key and each server rank's endpoint\n";
  text << "key " << hex(key) << "\n";
  for (size_t rank = 0; rank < endpoints.size(); ++rank) text << "rank " << rank << " " << endpoints[rank] << "\n";
  const std::string body = text.str();
  const std::filesystem::path temporary = path.string() + ".tmp";
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error("[RendezvousFile::write] cannot create '" + temporary.string() + "'");
  const bool written = ::fchmod(fd, 0600) == 0 &&
                       ::write(fd, body.data(), body.size()) == static_cast<ssize_t>(body.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!written || std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    throw std::runtime_error("[RendezvousFile::write] cannot write '" + path.string() + "'");
  }
}

}  // namespace fulgur
