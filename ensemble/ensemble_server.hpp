#pragma once
#include <fulgur/ensemble/connection_watch.hpp>
#include <fulgur/ensemble/ensemble_account.hpp>
#include <fulgur/ensemble/ensemble_options.hpp>
#include <fulgur/ensemble/held_messages.hpp>
#include <fulgur/ensemble/wire_header.hpp>
#include <fulgur/online/online_trainer.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace fulgur {

/// The training side of an ensemble: independent simulations
/// (EnsembleClient, fulgur_client.h) stream samples over ZeroMQ into an
/// OnlineTrainer's stream on every rank, and the ranks train one model.
///
///   fulgur::OnlineTrainer trainer(make_model, online_options);      // one per rank
///   fulgur::EnsembleServer server(trainer, {.run_dir = "run", .expected_clients = 32});
///   server.serve();   // until 32 clients said goodbye (or max_steps, the time limit, a signal)
///
/// Each rank binds its own socket; rank 0 writes `run_dir/ensemble.rendezvous`
/// (the run's key and every rank's endpoint, mode 0600), which clients read.
/// A message is checked (key, header, sizes against max_message_bytes,
/// shapes against the stream's first and the model's output) before any
/// tensor is made from it; a refused one is counted and logged, and
/// training goes on. Samples holding NaN or Inf are refused (`nonfinite`)
/// and the message's others taken: one client's NaN never reaches the
/// reservoir. Each rank acknowledges what it holds to each client
/// (which sends the rest again) and drops a message it already holds (a
/// "duplicate"): no sample is counted twice. A client with another run's key,
/// or of another protocol version, is told so. At the end rank 0 writes
/// `run_dir/ensemble_accounting.csv`.
///
/// A run stopped by a signal (SIGTERM, SIGINT, SIGUSR1, with the trainer's
/// checkpoint_dir set: the trainer saves its checkpoint) leaves every rank's
/// counts in `run_dir/ensemble_state_rank<r>.txt` (EnsembleStateFile); a server started again
/// with the same run_dir and rank count resumes it: the same key and ports
/// (the clients' connections find it again; what they queued meanwhile,
/// and what the stopped server had not taken, follows), the counts going on.
class EnsembleServer {
 public:
  /// Binds this rank's socket and, with every rank (collective), writes the
  /// rendezvous file. std::invalid_argument names a bad option.
  EnsembleServer(OnlineTrainer& trainer, EnsembleOptions options);
  ~EnsembleServer();
  EnsembleServer(const EnsembleServer&) = delete;
  EnsembleServer& operator=(const EnsembleServer&) = delete;

  /// Starts background training, receives until the stop rule holds, stops
  /// training (every rank together), drains what is still in flight, and
  /// writes the accounting (collective). Rethrows a training error after
  /// the accounting is written.
  void serve();

  std::filesystem::path rendezvous() const { return options_.run_dir / "ensemble.rendezvous"; }
  std::filesystem::path accounting_file() const { return options_.run_dir / "ensemble_accounting.csv"; }
  /// This rank's endpoint, as the rendezvous file names it.
  const std::string& endpoint() const { return endpoint_; }
  /// After serve(): every client's account summed over the ranks (on every rank).
  const std::map<uint64_t, EnsembleAccount>& accounts() const { return totals_; }
  /// Messages refused on every rank, by reason (key, version, malformed, frames, size, shape, model, nonfinite,
  /// duplicate).
  const std::map<std::string, int64_t>& refusals() const { return refusal_totals_; }

 private:
  /// Receives one message (all its frames) and accounts for it; false when none was queued.
  bool receive_one();
  void refuse(const std::string& reason, const std::string& detail);
  /// A sample message with the run's key, its frames' sizes checked: into the trainer's stream, or refused.
  /// False when not taken (training stopped on a signal): the client sends it again to the next server.
  bool accept(const WireHeader& header, void* inputs, void* targets);
  /// Tells the clients owed an acknowledgement what this rank holds: all of them, or (`all` false) those owed
  /// kAckEvery messages, a goodbye or a reply, or owed for kAckWithin.
  void acknowledge(bool all);
  /// A client whose message was read is owed an acknowledgement (at once: `now`).
  void owe(uint64_t client, bool now);
  /// A header-only message back to the client with ZeroMQ routing id `route`; false when the route is gone
  /// (its connection closed).
  bool reply(const std::string& route, const WireHeader& header);
  /// The acknowledgement of what this rank holds of `client`.
  WireHeader acknowledgement(uint64_t client);
  /// Reads the monitor's events and asks about the clients whose connection closed (ConnectionWatch).
  void watch_connections();
  /// Waits up to `milliseconds` for a message, then takes every one queued.
  void receive_for(int milliseconds);
  /// Sums every rank's accounts and refusals into totals_ (collective) and writes the CSV on rank 0.
  void reconcile();
  /// expected_clients said goodbye; or, counting those gone (their connection closed without a goodbye), as many
  /// finished and no client heard of is still neither.
  bool all_finished() const;
  /// Creates the socket and binds it: `port` (a resumed run's), else options.port or any free one.
  void bind(const std::string& port);
  std::filesystem::path state_file(int64_t rank) const {
    return options_.run_dir / ("ensemble_state_rank" + std::to_string(rank) + ".txt");
  }

  OnlineTrainer& trainer_;
  EnsembleOptions options_;
  WireHeader::Key key_{};
  void* context_ = nullptr;
  void* socket_ = nullptr;
  std::unique_ptr<ConnectionWatch> watch_;
  std::string endpoint_;
  std::map<uint64_t, EnsembleAccount> accounts_, totals_;
  /// A resumed run's accounts as the stopped server left them (its trained counts go on from there).
  std::map<uint64_t, EnsembleAccount> carried_;
  std::map<uint64_t, bool> goodbyes_;
  std::map<uint64_t, HeldMessages> delivered_;
  /// Each client's latest ZeroMQ routing id (where its acknowledgements go).
  std::map<uint64_t, std::string> routes_;
  /// What a client is owed: messages read since its last acknowledgement, since when, and whether one is a
  /// goodbye (answered at once). Kept per client (no allocation per message); `owing_` lists those owed.
  struct Owed {
    int64_t messages = 0;
    std::chrono::steady_clock::time_point since{};
    bool now = false;
  };
  std::map<uint64_t, Owed> owed_;
  std::vector<uint64_t> owing_;
  std::map<std::string, int64_t> refusals_, refusal_totals_;
  /// Clients whose first samples this rank accepted (the first few are logged).
  int64_t joined_ = 0;
  /// Clients found gone (the first few are logged).
  int64_t gone_logged_ = 0;
  /// The first accepted message's per-sample shapes: later ones must match.
  std::optional<WireHeader> first_;
};

}  // namespace fulgur
