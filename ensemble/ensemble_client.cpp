#include <fulgur/ensemble/ensemble_client.hpp>

#include <fulgur/ensemble/ensemble_refused_error.hpp>
#include <fulgur/ensemble/ensemble_version_error.hpp>
#include <fulgur/ensemble/message_buffers.hpp>
#include <fulgur/ensemble/monitor_event.hpp>
#include <fulgur/ensemble/rendezvous_file.hpp>

#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <zmq.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>

namespace fulgur {

/// One send(): its header and the inputs' and targets' bytes, shared by
/// the ranks' list of unacknowledged messages and the frames ZeroMQ holds
/// (which reference the bytes without a copy).
struct EnsembleClient::Message {
  WireHeader fields;
  /// Encoded once the message has its rank and number.
  std::string header;
  void* inputs = nullptr;
  size_t input_bytes = 0;
  void* targets = nullptr;
  size_t target_bytes = 0;
  int64_t samples = 0;
  /// The rank it went to (-1: not sent yet), when, and whether it went again (its round trip is then unknown).
  int64_t rank = -1;
  std::chrono::steady_clock::time_point sent_at{};
  bool resent = false;
  std::shared_ptr<MessageBuffers> buffers;
  explicit Message(std::shared_ptr<MessageBuffers> from) : buffers(std::move(from)) {}
  Message(const Message&) = delete;
  Message& operator=(const Message&) = delete;
  ~Message() {
    buffers->give(inputs, input_bytes);
    buffers->give(targets, target_bytes);
  }
};

namespace {

using Clock = std::chrono::steady_clock;

// A frame's bytes belong to a message: ZeroMQ holds a reference to it until it sent them.
void release_message(void* /*data*/, void* hint) { delete static_cast<std::shared_ptr<const void>*>(hint); }

/// A poll's time-out until `when` (0 when past, -1: no end).
long poll_timeout_ms(std::optional<Clock::time_point> when) {
  if (!when) return -1;
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(*when - Clock::now()).count();
  return std::clamp<long>(left, 0, INT_MAX);
}

std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
}

// Per-sample extents of a shape whose first extent counts the samples.
std::vector<int64_t> per_sample(const std::vector<int64_t>& shape, const char* what) {
  if (shape.empty() || shape.size() > WireHeader::kMaxDims + 1) {
    throw std::invalid_argument(std::string("[EnsembleClient::send] the ") + what + " need 1 to " +
                                std::to_string(WireHeader::kMaxDims + 1) + " dimensions (the sample count first), got " +
                                std::to_string(shape.size()));
  }
  for (const int64_t extent : shape) {
    if (extent < 1) {
      throw std::invalid_argument(std::string("[EnsembleClient::send] the ") + what + " have an extent of " +
                                  std::to_string(extent));
    }
  }
  return {shape.begin() + 1, shape.end()};
}


}  // namespace

EnsembleClient::EnsembleClient(const std::filesystem::path& rendezvous, uint64_t client_id,
                               EnsembleClientOptions options)
    : client_id_(client_id), options_(options), buffers_(std::make_shared<MessageBuffers>()) {
  if (options_.queue_capacity < 1 || options_.ranks < 0) {
    throw std::invalid_argument("[EnsembleClient] queue_capacity must be >= 1 and ranks >= 0, got " +
                                std::to_string(options_.queue_capacity) + " and " + std::to_string(options_.ranks));
  }
  const auto deadline = Clock::now() + seconds(options_.connect_timeout_s);
  while (!std::filesystem::exists(rendezvous)) {
    if (Clock::now() > deadline) {
      throw std::runtime_error("[EnsembleClient] no rendezvous file '" + rendezvous.string() + "' after " +
                               std::to_string(options_.connect_timeout_s) + " s: is the server running?");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const RendezvousFile file = RendezvousFile::read(rendezvous);
  key_ = file.key;
  context_ = zmq_ctx_new();
  if (context_ == nullptr) throw std::runtime_error("[EnsembleClient] zmq_ctx_new failed");
  // Its ranks: all, or `ranks` of them from client_id mod M on.
  const auto world = static_cast<uint64_t>(file.endpoints.size());
  const uint64_t used = options_.ranks == 0 ? world : std::min(world, static_cast<uint64_t>(options_.ranks));
  for (uint64_t j = 0; j < used; ++j) {
    const std::string& endpoint = file.endpoints[static_cast<size_t>((client_id_ % world + j) % world)];
    void* socket = zmq_socket(context_, ZMQ_DEALER);
    // ZeroMQ holds messages only for a rank it is connected to (immediate), so that "sent" means handed to a
    // live connection and a server that is away leaves them queued here. It holds at most a window's worth
    // (the unacknowledged messages, which the window bounds anyway): a pipe of a few messages ran dry at
    // every one, and each message then woke ZeroMQ's I/O thread (a system call each side).
    const int high_water = static_cast<int>(std::clamp<int64_t>(options_.queue_capacity, 4, 1 << 20));
    const int timeout_ms = 100, immediate = 1;
    zmq_setsockopt(socket, ZMQ_SNDHWM, &high_water, sizeof high_water);
    zmq_setsockopt(socket, ZMQ_IMMEDIATE, &immediate, sizeof immediate);
    zmq_setsockopt(socket, ZMQ_SNDTIMEO, &timeout_ms, sizeof timeout_ms);
    Rank& rank = ranks_.emplace_back();
    rank.socket = socket;
    // The end of the rank's connection is what makes its unacknowledged messages go again (read_acks).
    const std::string events = "inproc://rank-" + std::to_string(j);
    const bool watched = zmq_socket_monitor(socket, events.c_str(),
                                            ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_DISCONNECTED) == 0 &&
                         (rank.monitor = zmq_socket(context_, ZMQ_PAIR)) != nullptr &&
                         zmq_connect(rank.monitor, events.c_str()) == 0;
    if (!watched || zmq_connect(socket, endpoint.c_str()) != 0) {
      const std::string error = zmq_strerror(zmq_errno());
      release_sockets();
      throw std::invalid_argument("[EnsembleClient] cannot " + std::string(watched ? "connect to" : "watch") + " '" +
                                  endpoint + "' (from " + rendezvous.string() + "): " + error);
    }
  }
  wake_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_ < 0) {
    const std::string error = std::strerror(errno);
    release_sockets();
    throw std::runtime_error("[EnsembleClient] eventfd failed: " + error);
  }
  thread_ = std::thread([this] { run(); });
}

EnsembleClient::~EnsembleClient() {
  try {
    close();
  } catch (...) {  // a destructor: close() said what it could
  }
}

void EnsembleClient::send(const float* inputs, const std::vector<int64_t>& input_shape, const float* targets,
                          const std::vector<int64_t>& target_shape) {
  queue(inputs, input_shape, targets, target_shape, WireHeader::DType::Float32);
}

void EnsembleClient::send(const double* inputs, const std::vector<int64_t>& input_shape, const double* targets,
                          const std::vector<int64_t>& target_shape) {
  queue(inputs, input_shape, targets, target_shape, WireHeader::DType::Float64);
}

void EnsembleClient::throw_if_refused(const char* call) const {
  if (server_version_ != 0) {
    throw EnsembleVersionError(std::string("[EnsembleClient::") + call + "] client " + std::to_string(client_id_) +
                               ": the server speaks protocol version " + std::to_string(server_version_) +
                               " and this client version " + std::to_string(WireHeader::kVersion) +
                               ": use the client library of the server's fulgur release");
  }
  if (refused_) {
    throw EnsembleRefusedError(std::string("[EnsembleClient::") + call + "] client " + std::to_string(client_id_) +
                               ": a server rank refused the rendezvous file's key (a file of another run?)");
  }
}

void EnsembleClient::queue(const void* inputs, const std::vector<int64_t>& input_shape, const void* targets,
                           const std::vector<int64_t>& target_shape, WireHeader::DType dtype) {
  if (inputs == nullptr || targets == nullptr) throw std::invalid_argument("[EnsembleClient::send] null data");
  auto message = std::make_shared<Message>(buffers_);
  WireHeader& header = message->fields;
  header.kind = WireHeader::Kind::Samples;
  header.key = key_;
  header.client_id = client_id_;
  header.dtype = dtype;
  header.input_shape = per_sample(input_shape, "inputs");
  header.target_shape = per_sample(target_shape, "targets");
  if (input_shape[0] != target_shape[0] || input_shape[0] > UINT32_MAX) {
    throw std::invalid_argument("[EnsembleClient::send] inputs hold " + std::to_string(input_shape[0]) +
                                " samples and targets " + std::to_string(target_shape[0]));
  }
  header.count = static_cast<uint32_t>(input_shape[0]);
  const size_t limit = size_t{1} << 40;
  message->input_bytes = header.input_bytes(limit);
  message->target_bytes = header.target_bytes(limit);
  message->samples = input_shape[0];
  message->inputs = buffers_->take(message->input_bytes);
  std::memcpy(message->inputs, inputs, message->input_bytes);
  message->targets = buffers_->take(message->target_bytes);
  std::memcpy(message->targets, targets, message->target_bytes);
  WireHeader::little_endian(message->inputs, message->input_bytes, header.element_size());
  WireHeader::little_endian(message->targets, message->target_bytes, header.element_size());

  std::unique_lock lock(mutex_);
  if (closing_) throw std::logic_error("[EnsembleClient::send] the client is closed");
  throw_if_refused("send");
  header.sequence = next_sequence_;
  next_sequence_ += static_cast<uint64_t>(message->samples);
  if (static_cast<int64_t>(queue_.size()) >= options_.queue_capacity) {
    if (options_.when_full == WhenQueueFull::DropOldest) {
      counts_.dropped += queue_.front()->samples;
      counts_.queued -= queue_.front()->samples;
      queue_.pop_front();
    } else {
      // Woken once the queue is down to half (not at each message the sender thread takes): one wake-up per
      // half a queue, as ZeroMQ's own low-water mark, instead of a context switch per message.
      room_.wait(lock, [&] {
        return static_cast<int64_t>(queue_.size()) <= options_.queue_capacity / 2 || refused_ || give_up_;
      });
      throw_if_refused("send");
    }
  }
  counts_.queued += message->samples;
  queue_.push_back(std::move(message));
  // Only into an empty queue: with messages waiting, the sender is sending, or asleep on a full window that
  // only an acknowledgement opens (waking it per message cost 7 % of the ingestion rate).
  if (queue_.size() == 1) wake_sender();
}

bool EnsembleClient::transmit(void* socket, const std::shared_ptr<Message>& message) {
  // The header first: once ZeroMQ took it, the other frames of the message go too.
  while (zmq_send(socket, message->header.data(), message->header.size(), ZMQ_SNDMORE) < 0) {
    if (zmq_errno() != EAGAIN) return false;
    const std::lock_guard lock(mutex_);
    if (give_up_ || refused_) return false;
  }
  for (auto [data, bytes, more] : {std::tuple{message->inputs, message->input_bytes, ZMQ_SNDMORE},
                                   std::tuple{message->targets, message->target_bytes, 0}}) {
    zmq_msg_t frame;
    zmq_msg_init_data(&frame, data, bytes, release_message, new std::shared_ptr<const void>(message));
    if (zmq_msg_send(&frame, socket, more) < 0) {
      zmq_msg_close(&frame);
      return false;
    }
  }
  return true;
}

bool EnsembleClient::connection_ended(Rank& rank) {
  bool ended = false;
  while (const auto event = MonitorEvent::next(rank.monitor)) {
    if (event->kind == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
      rank.up = true;
    } else if (event->kind == ZMQ_EVENT_DISCONNECTED) {
      ended = ended || rank.up;
      rank.up = false;
    }
  }
  return ended;
}

bool EnsembleClient::read_acks() {
  bool any = false;
  for (Rank& rank : ranks_) {
    if (connection_ended(rank)) {
      // The oldest goes again once the rank is back, the rest as it acknowledges; in close(), the goodbye.
      rank.lost = true;
      rank.resend_at = rank.goodbye_at = Clock::now();
    }
    unsigned char buffer[WireHeader::kFixedBytes];
    for (;;) {
      const int size = zmq_recv(rank.socket, buffer, sizeof buffer, ZMQ_DONTWAIT);
      if (size < 0) break;
      // A server of another protocol version answers in its own: nothing we send can be taken.
      if (const uint16_t version = WireHeader::foreign_version(buffer, static_cast<size_t>(size)); version != 0) {
        const std::lock_guard lock(mutex_);
        server_version_ = version;
        refused_ = true;
        any = true;
        continue;
      }
      WireHeader ack;
      try {
        if (static_cast<size_t>(size) > sizeof buffer) continue;  // an ack has no extents
        ack = WireHeader::decode(buffer, static_cast<size_t>(size));
      } catch (const std::invalid_argument&) {
        continue;
      }
      if (ack.kind != WireHeader::Kind::Ack || ack.client_id != client_id_ || ack.key != key_) continue;
      any = true;
      rank.lost = false;
      if ((ack.count & WireHeader::kGoodbyeHeld) != 0) rank.goodbye_held = true;
      int64_t held = 0;
      std::shared_ptr<Message> newest;
      bool copies = false;
      while (!rank.unacked.empty() && rank.unacked.front()->fields.message < ack.message) {
        newest = std::move(rank.unacked.front());
        copies = copies || newest->resent;
        rank.unacked.pop_front();
        ++held;
      }
      const auto now = Clock::now();
      // Karn: an acknowledgement that a copy may have drawn says nothing of the round trip.
      if (newest && !copies) rank.timer.measured(std::chrono::duration<double>(now - newest->sent_at).count());
      if (held > 0) {
        rank.resend_at = now + seconds(silence_s(rank));
        if (rank.recover_next < rank.recover_end) rank.budget += 2 * held;  // recovering: the next ones follow
      }
      const std::lock_guard lock(mutex_);
      if ((ack.count & WireHeader::kKeyRefused) != 0) refused_ = true;
      unacked_ -= held;
    }
  }
  return any;
}

double EnsembleClient::silence_s(const Rank& rank) {
  return rank.lost ? rank.timer.timeout_s() : std::max(rank.timer.timeout_s(), kLiveSilenceS);
}

bool EnsembleClient::resend(Rank& rank, const std::shared_ptr<Message>& message) {
  if (!transmit(rank.socket, message)) return false;
  message->resent = true;
  const std::lock_guard lock(mutex_);
  ++counts_.resent;
  return true;
}

void EnsembleClient::resend_overdue() {
  const auto now = Clock::now();
  for (Rank& rank : ranks_) {
    if (rank.unacked.empty()) continue;
    if (now >= rank.resend_at) {
      // Silent a whole time-out: the oldest again. A rank whose acknowledgement was lost (or that was busy)
      // answers for all it holds at once; a restarted one lacks it, and the rest sent before now follow as
      // it acknowledges (recover_next .. recover_end), never the whole window in one go.
      if (!resend(rank, rank.unacked.front())) {
        rank.resend_at = now + std::chrono::milliseconds(100);  // not taken: again shortly, not in a spin
        continue;
      }
      rank.recover_next = rank.unacked.front()->fields.message + 1;
      rank.recover_end = rank.unacked.back()->fields.message + 1;
      rank.budget = 0;
      rank.timer.timed_out();
      rank.resend_at = now + seconds(silence_s(rank));
    }
    for (const auto& message : rank.unacked) {
      if (rank.budget <= 0 || rank.recover_next >= rank.recover_end) break;
      const uint64_t number = message->fields.message;
      if (number < rank.recover_next) continue;
      if (number >= rank.recover_end || !resend(rank, message)) break;
      rank.recover_next = number + 1;
      --rank.budget;
    }
    if (rank.recover_next >= rank.recover_end) rank.budget = 0;
  }
}

void EnsembleClient::run() {
  pthread_setname_np(pthread_self(), "fulgur_client");  // what top and gdb show for it
  size_t next = 0;
  auto next_look = Clock::now();
  for (;;) {
    // The ranks' acknowledgements once a millisecond, not at every message: a look is a call per rank.
    bool acknowledged = false;
    if (Clock::now() >= next_look) {
      acknowledged = read_acks();
      resend_overdue();
      next_look = Clock::now() + std::chrono::milliseconds(1);
    }
    std::shared_ptr<Message> message;
    bool closing_last = false;  // the message taken is the last before close(), which waits for its answer
    {
      std::unique_lock lock(mutex_);
      if (acknowledged) changed_.notify_all();
      if (give_up_ || refused_) {
        room_.notify_all();  // a send() waiting for room learns why there is none
        break;
      }
      // A rank holds at most queue_capacity unacknowledged messages of ours.
      const bool room = static_cast<int64_t>(ranks_[next].unacked.size()) < options_.queue_capacity;
      if (queue_.empty() || !room) {
        // Nothing to send, or the rank's window is full (only its acknowledgements make room): woken by the
        // first acknowledgement, not after a fixed wait, the next message goes as soon as the rank took one.
        await_event(lock);
        next_look = Clock::now();
        continue;
      }
      message = std::move(queue_.front());
      queue_.pop_front();
      sending_ = true;
      closing_last = closing_ && queue_.empty();
      if (static_cast<int64_t>(queue_.size()) <= options_.queue_capacity / 2) room_.notify_all();
    }
    Rank& rank = ranks_[next];
    if (message->rank < 0) {
      message->rank = static_cast<int64_t>(next);
      message->fields.message = rank.next_message++;
      // close() waits for the answer, or a window smaller than the rank's batch is full (nothing more goes until
      // it answers): the rank answers at once instead of within 4 ms (a window of one message waited that long
      // for each). A larger window is answered every kAnswerEvery messages before it fills: flagging it too only
      // added answers (bench/RESULTS.md).
      if (closing_last || (options_.queue_capacity < WireHeader::kAnswerEvery &&
                           static_cast<int64_t>(rank.unacked.size()) + 1 >= options_.queue_capacity)) {
        message->fields.flags = WireHeader::kAnswerNow;
      }
      message->header = message->fields.encode();
    }
    const bool sent = transmit(rank.socket, message);
    const std::lock_guard lock(mutex_);
    sending_ = false;
    if (sent) {
      counts_.queued -= message->samples;
      counts_.sent += message->samples;
      rank.sent_samples += static_cast<uint64_t>(message->samples);
      message->sent_at = Clock::now();
      if (rank.unacked.empty()) rank.resend_at = message->sent_at + seconds(silence_s(rank));
      rank.unacked.push_back(std::move(message));
      ++unacked_;
      next = (next + 1) % ranks_.size();
    } else {
      queue_.push_front(std::move(message));  // still ours: counted as queued
    }
    changed_.notify_all();
  }
}

EnsembleClientCounts EnsembleClient::close() {
  std::unique_lock lock(mutex_);
  if (closed_) {
    throw_if_refused("close");
    return counts_;
  }
  closing_ = true;
  const auto deadline = Clock::now() + seconds(options_.close_timeout_s);
  changed_.wait_until(lock, deadline, [&] { return refused_ || (queue_.empty() && unacked_ == 0 && !sending_); });
  give_up_ = true;  // what is still queued stays unsent
  wake_sender();
  room_.notify_all();
  lock.unlock();
  if (thread_.joinable()) thread_.join();
  // Each rank learns how many samples it was sent (the server reconciles with that), again until it
  // acknowledges: after the rank's time-out, doubled each time it stays silent.
  for (Rank& rank : ranks_) rank.goodbye_at = Clock::now();
  while (!refused_ && Clock::now() < deadline &&
         !std::all_of(ranks_.begin(), ranks_.end(), [](const Rank& r) { return r.goodbye_held; })) {
    for (Rank& rank : ranks_) {
      const auto now = Clock::now();
      if (rank.goodbye_held || now < rank.goodbye_at) continue;
      WireHeader bye;
      bye.kind = WireHeader::Kind::Goodbye;
      bye.key = key_;
      bye.client_id = client_id_;
      bye.sequence = rank.sent_samples;
      bye.count = static_cast<uint32_t>(ranks_.size());  // the server sums this many goodbyes
      const std::string frame = bye.encode();
      if (zmq_send(rank.socket, frame.data(), frame.size(), ZMQ_DONTWAIT) < 0) {
        rank.goodbye_at = now + std::chrono::milliseconds(100);  // a rank away: once it is back
      } else {
        rank.goodbye_at = now + seconds(silence_s(rank));
        rank.timer.timed_out();
      }
    }
    // Until an acknowledgement, the end of a connection, or the next goodbye is due.
    std::vector<zmq_pollitem_t> items;
    Clock::time_point wake = deadline;
    for (Rank& rank : ranks_) {
      items.push_back({rank.socket, 0, ZMQ_POLLIN, 0});
      items.push_back({rank.monitor, 0, ZMQ_POLLIN, 0});
      if (!rank.goodbye_held) wake = std::min(wake, rank.goodbye_at);
    }
    zmq_poll(items.data(), static_cast<int>(items.size()), poll_timeout_ms(wake));
    read_acks();
  }
  const auto unacknowledged = std::count_if(ranks_.begin(), ranks_.end(), [](const Rank& r) {
    return !r.goodbye_held || !r.unacked.empty();
  });
  for (Rank& rank : ranks_) rank.unacked.clear();
  release_sockets();  // what mattered was acknowledged, or the time is up
  lock.lock();
  counts_.unacknowledged_ranks = unacknowledged;
  closed_ = true;
  throw_if_refused("close");
  return counts_;
}

void EnsembleClient::release_sockets() {
  const int linger = 0;
  for (Rank& rank : ranks_) {
    zmq_socket_monitor(rank.socket, nullptr, 0);
    zmq_setsockopt(rank.socket, ZMQ_LINGER, &linger, sizeof linger);
    zmq_close(rank.socket);
    if (rank.monitor == nullptr) continue;
    zmq_setsockopt(rank.monitor, ZMQ_LINGER, &linger, sizeof linger);
    zmq_close(rank.monitor);
  }
  zmq_ctx_term(context_);
  context_ = nullptr;
  if (wake_ >= 0) ::close(wake_);
  wake_ = -1;
}

void EnsembleClient::wake_sender() {
  if (!sender_asleep_) return;
  sender_asleep_ = false;
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t written = ::write(wake_, &one, sizeof one);  // full only if written already
}

void EnsembleClient::await_event(std::unique_lock<std::mutex>& lock) {
  // The next resend due (a rank silent too long), if any rank holds unacknowledged messages.
  std::optional<Clock::time_point> due;
  std::vector<zmq_pollitem_t> items{{nullptr, wake_, ZMQ_POLLIN, 0}};
  for (Rank& rank : ranks_) {
    items.push_back({rank.socket, 0, ZMQ_POLLIN, 0});
    items.push_back({rank.monitor, 0, ZMQ_POLLIN, 0});
    if (!rank.unacked.empty()) due = due ? std::min(*due, rank.resend_at) : rank.resend_at;
  }
  sender_asleep_ = true;
  lock.unlock();
  zmq_poll(items.data(), static_cast<int>(items.size()), poll_timeout_ms(due));
  if ((items[0].revents & ZMQ_POLLIN) != 0) {
    uint64_t count = 0;
    [[maybe_unused]] const ssize_t read = ::read(wake_, &count, sizeof count);
  }
  lock.lock();
  sender_asleep_ = false;
}

EnsembleClientCounts EnsembleClient::counts() const {
  const std::lock_guard lock(mutex_);
  return counts_;
}

}  // namespace fulgur
