#include <fulgur/strategies/launchers/network.hpp>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace fulgur {

int pick_free_port(const std::string& address) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(address.c_str(), "0", &hints, &found); rc != 0) {
    throw std::runtime_error(
        fmt::format("[pick_free_port] cannot resolve address '{}': {}", address, ::gai_strerror(rc)));
  }
  int last_errno = 0;
  for (addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last_errno = errno;
      continue;
    }
    sockaddr_storage bound{};
    socklen_t length = sizeof(bound);
    int port = -1;
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) == 0) {
      if (bound.ss_family == AF_INET) port = ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
      if (bound.ss_family == AF_INET6) port = ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
    } else {
      last_errno = errno;
    }
    ::close(fd);
    if (port > 0) {
      ::freeaddrinfo(found);
      return port;
    }
  }
  ::freeaddrinfo(found);
  throw std::runtime_error(fmt::format("[pick_free_port] cannot bind a TCP port on '{}': {}", address,
                                       last_errno != 0 ? std::strerror(last_errno) : "no usable address"));
}

int listen_on_loopback(int port, const std::string& where) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(fmt::format("{} cannot create a socket for the TCPStore", where));
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 128) != 0) {
    ::close(fd);
    throw std::runtime_error(fmt::format("{} cannot listen on 127.0.0.1:{} for the TCPStore (port in use?)", where, port));
  }
  return fd;
}

int bound_port(int fd) {
  sockaddr_in bound{};
  socklen_t length = sizeof(bound);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) != 0) return -1;
  return ntohs(bound.sin_port);
}

}  // namespace fulgur
