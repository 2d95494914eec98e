#include <fulgur/ensemble/connection_watch.hpp>

#include <fulgur/ensemble/monitor_event.hpp>

#include <zmq.h>

#include <stdexcept>

namespace fulgur {

namespace {

constexpr auto kCheckEvery = std::chrono::milliseconds(100);
constexpr auto kAliveAfter = std::chrono::seconds(5);  // the route of a closed connection goes within milliseconds

}  // namespace

ConnectionWatch::ConnectionWatch(void* context, void* router, const std::string& address) : router_(router) {
  if (zmq_socket_monitor(router_, address.c_str(), ZMQ_EVENT_DISCONNECTED) != 0) {
    throw std::runtime_error("[ConnectionWatch] cannot monitor the socket: " + std::string(zmq_strerror(zmq_errno())));
  }
  monitor_ = zmq_socket(context, ZMQ_PAIR);
  const int linger = 0;
  zmq_setsockopt(monitor_, ZMQ_LINGER, &linger, sizeof linger);
  if (zmq_connect(monitor_, address.c_str()) != 0) {
    const std::string error = zmq_strerror(zmq_errno());
    zmq_close(monitor_);
    zmq_socket_monitor(router_, nullptr, 0);
    throw std::runtime_error("[ConnectionWatch] cannot read the monitor: " + error);
  }
}

ConnectionWatch::~ConnectionWatch() {
  zmq_socket_monitor(router_, nullptr, 0);
  zmq_close(monitor_);
}

void ConnectionWatch::heard(uint64_t client, int fd) {
  if (fd >= 0) {
    const auto [at, fresh] = fd_of_.try_emplace(client, fd);
    if (!fresh && at->second != fd) {
      clients_on_[at->second].erase(client);
      at->second = fd;
    }
    if (fresh || clients_on_[fd].count(client) == 0) clients_on_[fd].insert(client);
  }
  suspects_.erase(client);
  gone_.erase(client);  // back (a new connection after a blip): its goodbye can come after all
}

void ConnectionWatch::finished(uint64_t client) {
  if (const auto at = fd_of_.find(client); at != fd_of_.end()) {
    clients_on_[at->second].erase(client);
    fd_of_.erase(at);
  }
  suspects_.erase(client);
  gone_.erase(client);
}

void ConnectionWatch::read_events() {
  while (const auto event = MonitorEvent::next(monitor_)) {
    if (event->kind != ZMQ_EVENT_DISCONNECTED) continue;
    const int32_t fd = event->value;
    ++closed_;
    const auto on = clients_on_.find(fd);
    if (on == clients_on_.end()) continue;
    const auto now = Clock::now();
    for (const uint64_t client : on->second) {
      suspects_.try_emplace(client, now);
      fd_of_.erase(client);
    }
    clients_on_.erase(on);
  }
}

std::vector<uint64_t> ConnectionWatch::check(const std::function<bool(uint64_t)>& unroutable) {
  std::vector<uint64_t> found;
  const auto now = Clock::now();
  if (suspects_.empty() || now < next_check_) return found;
  next_check_ = now + kCheckEvery;
  for (auto at = suspects_.begin(); at != suspects_.end();) {
    if (unroutable(at->first)) {
      gone_.insert(at->first);
      found.push_back(at->first);
      at = suspects_.erase(at);
    } else if (now - at->second > kAliveAfter) {
      at = suspects_.erase(at);  // its route stayed: a reused descriptor's other client, alive
    } else {
      ++at;
    }
  }
  return found;
}

}  // namespace fulgur
