#pragma once
#include <fulgur/ensemble/ensemble_client_counts.hpp>
#include <fulgur/ensemble/ensemble_client_options.hpp>
#include <fulgur/ensemble/resend_timer.hpp>
#include <fulgur/ensemble/wire_header.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace fulgur {

class MessageBuffers;

/// A simulation's connection to an ensemble's training job (the server,
/// EnsembleServer): send() queues samples and returns; a thread of its own
/// hands them to ZeroMQ, one message to each server rank in turn, and keeps
/// each until that rank acknowledges it: a rank that went away (stopped by
/// a signal, restarted) gets the unacknowledged ones again, and drops what
/// it already holds. Needs no LibTorch (libfulgur_client).
///
///   fulgur::EnsembleClient client("run/ensemble.rendezvous", /*client_id=*/task_id);
///   for (int step = 0; step < steps; ++step) {
///     solve(field);
///     client.send(x.data(), {1, 64}, y.data(), {1, 64});  // shapes: the sample count first
///   }
///   fulgur::EnsembleClientCounts counts = client.close();
///
/// One thread at a time may call send() and close().
class EnsembleClient {
 public:
  /// Waits up to options.connect_timeout_s for the rendezvous file, then
  /// connects to every server rank it names (ZeroMQ connects in the
  /// background: a server that starts later is reached then).
  /// std::invalid_argument names a bad file or option; std::runtime_error a
  /// file that never came.
  EnsembleClient(const std::filesystem::path& rendezvous, uint64_t client_id, EnsembleClientOptions options = {});
  /// close() if not closed yet (errors are dropped).
  ~EnsembleClient();
  EnsembleClient(const EnsembleClient&) = delete;
  EnsembleClient& operator=(const EnsembleClient&) = delete;

  /// Queues `input_shape[0]` samples (C order; targets the same count
  /// first), copied before it returns. A full queue waits (until half of it
  /// went out) or drops its oldest message, as options.when_full says. std::invalid_argument for
  /// shapes that are empty, hold an extent < 1, disagree on the count or
  /// have more than 8 dimensions per sample; std::logic_error after close();
  /// EnsembleRefusedError once a server rank refused the key;
  /// EnsembleVersionError (an EnsembleRefusedError) once a server rank
  /// answered in another protocol version.
  void send(const float* inputs, const std::vector<int64_t>& input_shape, const float* targets,
            const std::vector<int64_t>& target_shape);
  void send(const double* inputs, const std::vector<int64_t>& input_shape, const double* targets,
            const std::vector<int64_t>& target_shape);
  /// Waits (up to options.close_timeout_s) for the queue to go out and be
  /// acknowledged, tells every server rank how many samples it was sent (the
  /// server reconciles with that; it acknowledges that too) and disconnects.
  /// Returns the final counts; later calls return them again. A close that
  /// gave up says so in them: `queued` samples never sent, and
  /// `unacknowledged_ranks` ranks that did not acknowledge all they were
  /// sent or the goodbye (EnsembleClientCounts::acknowledged() is false).
  /// EnsembleRefusedError (after disconnecting) when a rank refused the key,
  /// EnsembleVersionError when one speaks another protocol version.
  EnsembleClientCounts close();
  EnsembleClientCounts counts() const;
  uint64_t client_id() const { return client_id_; }
  /// The server ranks this client sends to (all, or options.ranks of them).
  int64_t ranks() const { return static_cast<int64_t>(ranks_.size()); }

 private:
  struct Message;
  /// What the sender thread keeps per server rank.
  struct Rank {
    void* socket = nullptr;
    /// ZeroMQ's events of `socket`: each end of its connection (the rank's process stopped or restarted).
    void* monitor = nullptr;
    /// The connection ended since the rank last acknowledged: what it did not acknowledge may be lost.
    bool lost = false;
    /// The connection finished its handshake (only then does ZeroMQ hand it messages: ZMQ_IMMEDIATE).
    bool up = false;
    /// Sent, not yet acknowledged, oldest first.
    std::deque<std::shared_ptr<Message>> unacked;
    uint64_t next_message = 0;
    /// Samples handed over for this rank (its goodbye says so).
    uint64_t sent_samples = 0;
    /// When the oldest unacknowledged message goes again, unless the rank answers first.
    std::chrono::steady_clock::time_point resend_at{};
    ResendTimer timer;
    /// After a time-out, the messages numbered from recover_next to below recover_end were sent before it:
    /// each acknowledgement sends `budget` more of them (2 per message it acknowledged), not all at once.
    uint64_t recover_next = 0, recover_end = 0;
    int64_t budget = 0;
    std::chrono::steady_clock::time_point goodbye_at{};
    bool goodbye_held = false;
  };
  void queue(const void* inputs, const std::vector<int64_t>& input_shape, const void* targets,
             const std::vector<int64_t>& target_shape, WireHeader::DType dtype);
  /// The sender thread: the queue's messages to the ranks in turn, the
  /// acknowledgements, and what a rank did not acknowledge in time again.
  void run();
  /// Hands one message to `socket`, retrying every 100 ms until it goes or give_up_.
  bool transmit(void* socket, const std::shared_ptr<Message>& message);
  /// Reads the rank's monitor: true when a connection that carried messages (its handshake done) ended. One
  /// that ended before its handshake (a busy server that did not take it in time) carried none: an event read
  /// late from such an attempt must not send again what went on the connection after it.
  static bool connection_ended(Rank& rank);
  /// Reads every rank's acknowledgements and the ends of its connection; true when any acknowledgement arrived.
  bool read_acks();
  /// Sends a rank's oldest unacknowledged message again once its connection ended or it stayed silent
  /// silence_s(), and after that the rest it was sent before, as acknowledgements come.
  void resend_overdue();
  /// The sender thread has nothing to send now: it sleeps (no timer) until an acknowledgement or the end of a
  /// connection arrives, send() or close() wakes it (wake_sender), or a rank's oldest message is due again.
  /// Thousands of clients on a busy node then cost no CPU while they wait for their ranks.
  void await_event(std::unique_lock<std::mutex>& lock);
  /// Under mutex_: wakes the sender thread if it sleeps in await_event.
  void wake_sender();
  /// Closes every rank's socket and monitor (dropping what they hold), the context and wake_.
  void release_sockets();
  /// Sends `message` again (counted in counts_.resent).
  bool resend(Rank& rank, const std::shared_ptr<Message>& message);
  /// How long the rank may stay silent before its oldest message goes again: its time-out once its connection
  /// ended, and at least kLiveSilenceS while it lives (TCP loses nothing on a live connection; a rank slowed
  /// by a loaded machine answers late, and copies would only load it more).
  static double silence_s(const Rank& rank);
  static constexpr double kLiveSilenceS = 20.0;
  void throw_if_refused(const char* call) const;

  uint64_t client_id_;
  EnsembleClientOptions options_;
  WireHeader::Key key_{};
  std::shared_ptr<MessageBuffers> buffers_;
  void* context_ = nullptr;
  std::vector<Rank> ranks_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  /// A blocked send() waits here for room in the queue (apart from changed_: not woken at every message sent).
  std::condition_variable room_;
  std::deque<std::shared_ptr<Message>> queue_;
  bool closing_ = false, closed_ = false, give_up_ = false, sending_ = false, refused_ = false;
  /// An eventfd in the sender thread's poll: written once per sleep when there is work (sender_asleep_).
  int wake_ = -1;
  bool sender_asleep_ = false;
  /// A server rank's protocol version when it is not ours (refused_ is then set too); 0: ours.
  uint16_t server_version_ = 0;
  /// Messages sent and not yet acknowledged, all ranks (what close() waits for).
  int64_t unacked_ = 0;
  uint64_t next_sequence_ = 0;
  EnsembleClientCounts counts_;
  std::thread thread_;
};

}  // namespace fulgur
