#include <fulgur/strategies/launchers/launcher_store.hpp>

#include <fulgur/strategies/launchers/network.hpp>

#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <stdexcept>

namespace fulgur {

LauncherStore::LauncherStore(const std::string& address, int port, bool all_local) {
  const std::string where = "[LauncherStore::LauncherStore]";
  c10d::TCPStoreOptions t;
  t.isServer = true;
  t.waitWorkers = false;  // the ranks join and leave; every group waits for its own
  if (all_local) {
    t.masterListenFd = listen_on_loopback(port, where);
    t.useLibUV = false;  // the classic server accepts a pre-bound socket everywhere
    port = bound_port(*t.masterListenFd);
  } else if (port == 0) {
    port = pick_free_port(address);
  }
  t.port = static_cast<uint16_t>(port);
  try {
    store_ = c10::make_intrusive<c10d::TCPStore>(all_local ? "127.0.0.1" : address, t);
  } catch (const c10::Error& e) {
    throw std::runtime_error(
        fmt::format("{} cannot serve the ranks' store on {}:{}: {}", where, address, port, e.what_without_backtrace()));
  }
  port_ = port;
}

LauncherStore::~LauncherStore() = default;

}  // namespace fulgur
