#include <fulgur/ensemble/ensemble_client.hpp>

#include <fulgur/ensemble/rendezvous_file.hpp>

#include <zmq.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <tuple>

namespace fulgur {

/// One send(): the header frame, and the inputs' and targets' bytes, which
/// ZeroMQ takes over without a copy (freed by it once sent).
struct EnsembleClient::Message {
  std::string header;
  void* inputs = nullptr;
  size_t input_bytes = 0;
  void* targets = nullptr;
  size_t target_bytes = 0;
  int64_t samples = 0;
  Message() = default;
  Message(const Message&) = delete;
  Message& operator=(const Message&) = delete;
  ~Message() {
    std::free(inputs);
    std::free(targets);
  }
};

namespace {

using Clock = std::chrono::steady_clock;

void free_buffer(void* data, void* /*hint*/) { std::free(data); }

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

void* copy_of(const void* data, size_t bytes) {
  void* copy = std::malloc(bytes == 0 ? 1 : bytes);
  if (copy == nullptr) throw std::bad_alloc();
  std::memcpy(copy, data, bytes);
  return copy;
}

}  // namespace

EnsembleClient::EnsembleClient(const std::filesystem::path& rendezvous, uint64_t client_id,
                               EnsembleClientOptions options)
    : client_id_(client_id), options_(options) {
  if (options_.queue_capacity < 1) {
    throw std::invalid_argument("[EnsembleClient] queue_capacity must be >= 1, got " +
                                std::to_string(options_.queue_capacity));
  }
  const auto deadline = Clock::now() + std::chrono::duration<double>(options_.connect_timeout_s);
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
  for (const std::string& endpoint : file.endpoints) {
    void* socket = zmq_socket(context_, ZMQ_PUSH);
    // Our queue is the bound: ZeroMQ holds a few messages per rank beyond it,
    // and only for a rank it is connected to (immediate), so that "sent" means
    // handed to a live connection and a server that is away leaves them queued here.
    const int high_water = 4, timeout_ms = 100, immediate = 1;
    zmq_setsockopt(socket, ZMQ_SNDHWM, &high_water, sizeof high_water);
    zmq_setsockopt(socket, ZMQ_IMMEDIATE, &immediate, sizeof immediate);
    zmq_setsockopt(socket, ZMQ_SNDTIMEO, &timeout_ms, sizeof timeout_ms);
    if (zmq_connect(socket, endpoint.c_str()) != 0) {
      const std::string error = zmq_strerror(zmq_errno());
      zmq_close(socket);
      for (void* s : sockets_) zmq_close(s);
      zmq_ctx_term(context_);
      throw std::invalid_argument("[EnsembleClient] cannot connect to '" + endpoint + "' (from " +
                                  rendezvous.string() + "): " + error);
    }
    sockets_.push_back(socket);
  }
  sent_to_rank_.assign(sockets_.size(), 0);
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

void EnsembleClient::queue(const void* inputs, const std::vector<int64_t>& input_shape, const void* targets,
                           const std::vector<int64_t>& target_shape, WireHeader::DType dtype) {
  if (inputs == nullptr || targets == nullptr) throw std::invalid_argument("[EnsembleClient::send] null data");
  auto message = std::make_unique<Message>();
  WireHeader header;
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
  message->inputs = copy_of(inputs, message->input_bytes);
  message->targets = copy_of(targets, message->target_bytes);

  std::unique_lock lock(mutex_);
  if (closing_) throw std::logic_error("[EnsembleClient::send] the client is closed");
  header.sequence = next_sequence_;
  next_sequence_ += static_cast<uint64_t>(message->samples);
  message->header = header.encode();
  if (static_cast<int64_t>(queue_.size()) >= options_.queue_capacity) {
    if (options_.when_full == WhenQueueFull::DropOldest) {
      counts_.dropped += queue_.front()->samples;
      counts_.queued -= queue_.front()->samples;
      queue_.pop_front();
    } else {
      changed_.wait(lock, [&] { return static_cast<int64_t>(queue_.size()) < options_.queue_capacity; });
    }
  }
  counts_.queued += message->samples;
  queue_.push_back(std::move(message));
  changed_.notify_all();
}

bool EnsembleClient::transmit(void* socket, Message& message) {
  // The header first: once ZeroMQ took it, the other frames of the message go too.
  while (zmq_send(socket, message.header.data(), message.header.size(), ZMQ_SNDMORE) < 0) {
    if (zmq_errno() != EAGAIN) return false;
    const std::lock_guard lock(mutex_);
    if (give_up_) return false;
  }
  for (auto [data, bytes, more] : {std::tuple{&message.inputs, message.input_bytes, ZMQ_SNDMORE},
                                   std::tuple{&message.targets, message.target_bytes, 0}}) {
    zmq_msg_t frame;
    zmq_msg_init_data(&frame, *data, bytes, free_buffer, nullptr);
    *data = nullptr;  // ZeroMQ's now
    if (zmq_msg_send(&frame, socket, more) < 0) {
      zmq_msg_close(&frame);
      return false;
    }
  }
  return true;
}

void EnsembleClient::run() {
  size_t rank = 0;
  for (;;) {
    std::unique_ptr<Message> message;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return !queue_.empty() || closing_; });
      if (queue_.empty() || give_up_) break;
      message = std::move(queue_.front());
      queue_.pop_front();
      sending_ = true;
      changed_.notify_all();  // room for a blocked send()
    }
    const bool sent = transmit(sockets_[rank], *message);
    const std::lock_guard lock(mutex_);
    sending_ = false;
    if (sent) {
      counts_.queued -= message->samples;
      counts_.sent += message->samples;
      sent_to_rank_[rank] += static_cast<uint64_t>(message->samples);
      rank = (rank + 1) % sockets_.size();
    } else {
      queue_.push_front(std::move(message));  // still ours: counted as queued
    }
    changed_.notify_all();
    if (give_up_) break;
  }
}

EnsembleClientCounts EnsembleClient::close() {
  std::unique_lock lock(mutex_);
  if (closed_) return counts_;
  closing_ = true;
  changed_.notify_all();
  const auto deadline = Clock::now() + std::chrono::duration<double>(options_.close_timeout_s);
  changed_.wait_until(lock, deadline, [&] { return queue_.empty() && !sending_; });
  give_up_ = true;  // what is still queued stays unsent
  changed_.notify_all();
  lock.unlock();
  if (thread_.joinable()) thread_.join();
  lock.lock();
  // Each rank learns how many samples it was sent: the server reconciles with that.
  for (size_t rank = 0; rank < sockets_.size(); ++rank) {
    WireHeader bye;
    bye.kind = WireHeader::Kind::Goodbye;
    bye.key = key_;
    bye.client_id = client_id_;
    bye.sequence = sent_to_rank_[rank];
    const std::string frame = bye.encode();
    while (zmq_send(sockets_[rank], frame.data(), frame.size(), 0) < 0 && zmq_errno() == EAGAIN &&
           Clock::now() < deadline) {
    }
  }
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  const int linger = static_cast<int>(std::max<int64_t>(0, left));
  for (void* socket : sockets_) {
    zmq_setsockopt(socket, ZMQ_LINGER, &linger, sizeof linger);  // what ZeroMQ holds still goes out
    zmq_close(socket);
  }
  sockets_.clear();
  zmq_ctx_term(context_);
  context_ = nullptr;
  closed_ = true;
  return counts_;
}

EnsembleClientCounts EnsembleClient::counts() const {
  const std::lock_guard lock(mutex_);
  return counts_;
}

}  // namespace fulgur
