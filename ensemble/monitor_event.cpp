#include <fulgur/ensemble/monitor_event.hpp>

#include <zmq.h>

#include <cstring>

namespace fulgur {

std::optional<MonitorEvent> MonitorEvent::next(void* monitor) {
  // An event is two frames: 2 bytes of event and 4 of value, then the endpoint.
  zmq_msg_t frame;
  zmq_msg_init(&frame);
  if (zmq_msg_recv(&frame, monitor, ZMQ_DONTWAIT) < 0) {
    zmq_msg_close(&frame);
    return std::nullopt;
  }
  MonitorEvent event;
  if (zmq_msg_size(&frame) >= sizeof event.kind + sizeof event.value) {
    const auto* bytes = static_cast<const char*>(zmq_msg_data(&frame));
    std::memcpy(&event.kind, bytes, sizeof event.kind);
    std::memcpy(&event.value, bytes + sizeof event.kind, sizeof event.value);
  }
  int more = zmq_msg_more(&frame);
  zmq_msg_close(&frame);
  while (more != 0) {  // the endpoint
    zmq_msg_t rest;
    zmq_msg_init(&rest);
    more = zmq_msg_recv(&rest, monitor, 0) < 0 ? 0 : zmq_msg_more(&rest);
    zmq_msg_close(&rest);
  }
  return event;
}

}  // namespace fulgur
