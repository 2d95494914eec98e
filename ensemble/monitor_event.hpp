#pragma once
#include <cstdint>
#include <optional>

namespace fulgur {

/// One event of a ZeroMQ socket monitor (zmq_socket_monitor): what happened
/// (ZMQ_EVENT_DISCONNECTED, ...) and its value (for a connection's events,
/// its file descriptor). Both sides of the ensemble read their monitors with
/// it: the server to learn which clients are gone (ConnectionWatch), a
/// client to learn that a rank's connection ended (EnsembleClient).
///
///   while (const auto event = MonitorEvent::next(monitor)) {
///     if (event->kind == ZMQ_EVENT_DISCONNECTED) ...;
///   }
struct MonitorEvent {
  uint16_t kind = 0;
  int32_t value = -1;

  /// The next event `monitor` (the PAIR socket connected to the monitor's
  /// address) holds, without waiting; nullopt when it holds none.
  static std::optional<MonitorEvent> next(void* monitor);
};

}  // namespace fulgur
