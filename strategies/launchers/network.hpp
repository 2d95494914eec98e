#pragma once

#include <string>

namespace fulgur {

/// A TCP port that is free on `address` (a numeric IPv4/IPv6 address or a
/// host name), found by binding port 0 and asking the kernel which port it
/// chose. The port is released before returning, so another process could
/// take it before the ranks bind it — the same race torchrun accepts.
int pick_free_port(const std::string& address);

/// A socket listening on 127.0.0.1:`port` for a TCPStore server (c10d
/// stores have no authentication, so one that only local ranks use is not
/// reachable from other hosts); port 0 binds a free port (bound_port()).
/// `where` prefixes the error ("[Class::method]").
int listen_on_loopback(int port, const std::string& where);

/// The local port a socket is bound to.
int bound_port(int fd);

}  // namespace fulgur
