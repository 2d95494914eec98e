#pragma once

#include <string>

namespace fulgur {

/// A TCP port that is free on `address` (a numeric IPv4/IPv6 address or a
/// host name), found by binding port 0 and asking the kernel which port it
/// chose. The port is released before returning, so another process could
/// take it before the ranks bind it — the same race torchrun accepts.
int pick_free_port(const std::string& address);

}  // namespace fulgur
