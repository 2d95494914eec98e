#include <fulgur/ensemble/ensemble_server.hpp>

#include <fulgur/ensemble/accounting_file.hpp>
#include <fulgur/ensemble/ensemble_state_file.hpp>
#include <fulgur/ensemble/nonfinite_samples.hpp>
#include <fulgur/ensemble/rendezvous_file.hpp>
#include <fulgur/core/stop_signals.hpp>
#include <fulgur/online/stopped_error.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/resource.h>
#include <unistd.h>
#include <zmq.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <iostream>
#include <stdexcept>

namespace fulgur {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kLoggedPerReason = 5;  // refusals logged one line each; after that only counted
constexpr int64_t kLoggedJoins = 10;  // the first clients' first samples, one line each
constexpr rlim_t kSpareFiles = 64;     // the process's own files and sockets besides the clients' connections
// A client is acknowledged once per kAckEvery of its messages, and at most kAckWithin after the first unanswered
// one (or when nothing more comes): not after every read, where each acknowledgement woke four threads (both
// sides' I/O threads, the client's sender and the rank's own) for one or two messages. Within 1 ms, 8 clients
// at 1.4 GB/s into one rank (2,600 messages a second each) were answered every third message; 4 ms took a
// quarter of the context switches off (bench/RESULTS.md). The client's window (its queue_capacity, 64 by
// default) is four times kAckEvery, so it never waits for one; a smaller one asks for an answer (kAnswerNow).
constexpr int64_t kAckEvery = WireHeader::kAnswerEvery;
constexpr auto kAckWithin = std::chrono::milliseconds(4);

std::string host_name() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof name) != 0) return "localhost";
  return name;
}

// The frames of one message (the first kKept of them: a sample message has no more, so no allocation per
// message; the rest are only counted); closes them when it goes.
struct Frames {
  static constexpr size_t kKept = 4;  // the routing id, the header, inputs, targets
  zmq_msg_t parts[kKept];
  size_t kept = 0, count = 0;
  Frames() = default;
  Frames(const Frames&) = delete;
  Frames& operator=(const Frames&) = delete;
  ~Frames() {
    for (size_t i = 0; i < kept; ++i) zmq_msg_close(&parts[i]);
  }
};

}  // namespace

EnsembleServer::EnsembleServer(OnlineTrainer& trainer, EnsembleOptions options)
    : trainer_(trainer), options_(std::move(options)) {
  if (options_.expected_clients < 0 || options_.min_steps < 0 || options_.port < 0 || options_.port > 65535 ||
      options_.max_message_bytes < 1 || options_.time_limit_s < 0 || options_.drain_s < 0) {
    throw std::invalid_argument(fmt::format(
        "[EnsembleServer] expected_clients ({}), min_steps ({}), time_limit_s ({}) and drain_s ({}) must be >= 0, "
        "port ({}) in 0..65535, max_message_bytes ({}) >= 1",
        options_.expected_clients, options_.min_steps, options_.time_limit_s, options_.drain_s, options_.port,
        options_.max_message_bytes));
  }
  Strategy& strategy = trainer_.fabric().strategy();
  const bool is_zero = trainer_.fabric().is_global_zero();
  // A run stopped by a signal left every rank's state: this server resumes it
  // (the same key and ports, so the clients' connections find it again).
  const int64_t rank = trainer_.fabric().global_rank();
  const bool resumed = std::filesystem::exists(state_file(rank));
  const int64_t some_resume = strategy.max_over_ranks(resumed ? 1 : 0);
  const int64_t some_start = strategy.max_over_ranks(resumed ? 0 : 1);
  if (some_resume == 1 && some_start == 1) {
    throw std::invalid_argument(fmt::format("[EnsembleServer] some ranks find a stopped run's state in {} and some "
                                            "do not: remove the ensemble_state_rank*.txt files to start afresh",
                                            options_.run_dir.string()));
  }
  RendezvousFile file;
  if (resumed) {
    file = RendezvousFile::read(rendezvous());
    if (static_cast<int64_t>(file.endpoints.size()) != trainer_.fabric().world_size()) {
      throw std::invalid_argument(fmt::format("[EnsembleServer] {} names {} ranks; this run has {}: a stopped run "
                                              "resumes with as many ranks",
                                              rendezvous().string(), file.endpoints.size(),
                                              trainer_.fabric().world_size()));
    }
    endpoint_ = file.endpoints[static_cast<size_t>(rank)];
    key_ = file.key;
    EnsembleStateFile state = EnsembleStateFile::read(state_file(rank));
    accounts_ = state.accounts;
    carried_ = state.accounts;
    refusals_ = state.refusals;
    for (const auto& [client, a] : accounts_) {
      if (a.sent >= 0) goodbyes_[client] = true;
    }
    delivered_ = std::move(state.held);
  }
  bind(resumed ? endpoint_.substr(endpoint_.rfind(':') + 1) : std::string());
  // Every client holds a connection here: past the limit on open files they wait to connect (ZeroMQ retries).
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY &&
      static_cast<rlim_t>(options_.expected_clients) + kSpareFiles > files.rlim_cur) {
    std::cerr << fmt::format("fulgur: ensemble: rank {}: {} expected clients and {} open files at most (ulimit -n): "
                             "the clients past the limit wait to connect until others leave; raise the limit in the "
                             "job script for them all at once",
                             rank, options_.expected_clients, static_cast<uint64_t>(files.rlim_cur))
              << std::endl;
  }
  if (resumed) {
    if (trainer_.fabric().is_global_zero()) {
      std::cerr << fmt::format("fulgur: ensemble: resuming the stopped run in {} ({} clients so far)",
                               options_.run_dir.string(), accounts_.size())
                << std::endl;
    }
    return;
  }
  // Rank 0 draws the key and writes the file once every rank's endpoint is known.
  if (is_zero) file.key = RendezvousFile::new_key();
  const std::string key = strategy.broadcast_bytes(std::string(file.key.begin(), file.key.end()));
  std::memcpy(key_.data(), key.data(), key_.size());
  file.endpoints = strategy.all_gather_bytes(endpoint_);
  if (is_zero) {
    std::filesystem::create_directories(options_.run_dir);
    file.key = key_;
    file.write(rendezvous());
    std::cerr << fmt::format("fulgur: ensemble: {} rank(s) listening ({}); clients read {}", file.endpoints.size(),
                             fmt::join(file.endpoints, ", "), rendezvous().string())
              << std::endl;
  }
}

void EnsembleServer::bind(const std::string& port) {
  context_ = zmq_ctx_new();
  socket_ = zmq_socket(context_, ZMQ_ROUTER);  // a ROUTER: acknowledgements go back to each client
  // Larger messages end the sender's connection before ZeroMQ allocates them.
  const int64_t largest = options_.max_message_bytes + (int64_t{1} << 12);
  zmq_setsockopt(socket_, ZMQ_MAXMSGSIZE, &largest, sizeof largest);
  // A reply to a client whose connection closed fails (EHOSTUNREACH) instead of vanishing: how a gone
  // client is told from a quiet one (ConnectionWatch).
  const int mandatory = 1;
  zmq_setsockopt(socket_, ZMQ_ROUTER_MANDATORY, &mandatory, sizeof mandatory);
  // Clients that connect at once wait in the listen queue, not in SYN retries (ZeroMQ's default holds 100;
  // the kernel caps it at net.core.somaxconn).
  const int backlog = static_cast<int>(std::clamp<int64_t>(options_.expected_clients + kSpareFiles, 100, INT_MAX));
  zmq_setsockopt(socket_, ZMQ_BACKLOG, &backlog, sizeof backlog);
  if (options_.client_timeout_s > 0) {  // a connection silent past the time-out (a vanished host) is closed
    const int timeout_ms = static_cast<int>(std::clamp(options_.client_timeout_s * 1000, 10.0, 1e9));
    const int interval_ms = std::max(1, timeout_ms / 5);
    zmq_setsockopt(socket_, ZMQ_HEARTBEAT_IVL, &interval_ms, sizeof interval_ms);
    zmq_setsockopt(socket_, ZMQ_HEARTBEAT_TIMEOUT, &timeout_ms, sizeof timeout_ms);
  }
  const std::string address =
      fmt::format("tcp://*:{}", !port.empty() ? port : options_.port == 0 ? std::string("*") : std::to_string(options_.port));
  if (zmq_bind(socket_, address.c_str()) != 0) {
    const std::string error = zmq_strerror(zmq_errno());
    zmq_close(socket_);
    zmq_ctx_term(context_);
    socket_ = context_ = nullptr;
    throw std::invalid_argument(fmt::format("[EnsembleServer] cannot bind {}: {}", address, error));
  }
  watch_ = std::make_unique<ConnectionWatch>(context_, socket_,
                                             fmt::format("inproc://fulgur-ensemble-monitor-{}", static_cast<void*>(this)));
  if (!port.empty()) return;  // resumed: the endpoint is the one the clients know
  char bound[256] = {};
  size_t size = sizeof bound;
  zmq_getsockopt(socket_, ZMQ_LAST_ENDPOINT, bound, &size);
  endpoint_ = fmt::format("tcp://{}:{}", options_.host.empty() ? host_name() : options_.host,
                          std::string(bound).substr(std::string(bound).rfind(':') + 1));
}

EnsembleServer::~EnsembleServer() {
  if (socket_ == nullptr) return;
  watch_.reset();
  const int linger = 1000;  // the last acknowledgements (a goodbye's: its client waits for it) still go out
  zmq_setsockopt(socket_, ZMQ_LINGER, &linger, sizeof linger);
  zmq_close(socket_);
  zmq_ctx_term(context_);
}

void EnsembleServer::serve() {
  trainer_.start();
  const auto started = Clock::now();
  const auto out_of_time = [&] {
    return options_.time_limit_s > 0 &&
           Clock::now() - started > std::chrono::duration<double>(options_.time_limit_s);
  };
  const auto done = [&] { return all_finished() && trainer_.global_step() >= options_.min_steps; };
  while (trainer_.running() && !done() && !out_of_time()) receive_for(100);
  std::exception_ptr training_error;
  try {
    trainer_.stop();  // every rank's training ends at the same step
  } catch (...) {
    training_error = std::current_exception();
  }
  // The run is over: what is in flight still counts (received, untrained), until every goodbye came or drain_s
  // passed. Stopped by a signal, it is left to the clients, which send it again to the next server.
  const double drain_s = trainer_.stop_signal() != 0 ? 0.0 : options_.drain_s;
  const auto drain_end = Clock::now() + std::chrono::duration<double>(drain_s);
  while (Clock::now() < drain_end && !all_finished()) receive_for(50);
  acknowledge(true);  // what was read last is answered before the socket goes
  reconcile();
  const int64_t rank = trainer_.fabric().global_rank();
  if (trainer_.stop_signal() != 0) {
    // Stopped by a signal (the trainer saved its checkpoint): keep what was counted and held for the next server.
    EnsembleStateFile{accounts_, refusals_, delivered_}.write(state_file(rank));
    if (trainer_.fabric().is_global_zero()) {
      std::cerr << fmt::format("fulgur: ensemble: stopped on {}; a server started again with {} resumes the run",
                               StopSignals::name(trainer_.stop_signal()), options_.run_dir.string())
                << std::endl;
    }
    // Every rank's state is on disk before any rank returns: a launcher such as mpirun stops the others
    // once one exits with 128 + the signal.
    trainer_.fabric().barrier("ensemble_state");
  } else {
    std::filesystem::remove(state_file(rank));  // the run is over
  }
  if (training_error) std::rethrow_exception(training_error);
}

void EnsembleServer::receive_for(int milliseconds) {
  zmq_pollitem_t items[2] = {{socket_, 0, ZMQ_POLLIN, 0}, {watch_->monitor(), 0, ZMQ_POLLIN, 0}};
  // Someone owed an acknowledgement gets it within kAckWithin: wait no longer for more.
  const int wait = owing_.empty() ? milliseconds : std::min(milliseconds, static_cast<int>(kAckWithin.count()));
  if (zmq_poll(items, 2, wait) > 0 && (items[0].revents & ZMQ_POLLIN) != 0) {
    while (receive_one()) {  // what is queued, without a poll per message
    }
    acknowledge(false);
  } else {
    acknowledge(true);  // nothing more came: everyone owed is answered
  }
  watch_connections();
}

void EnsembleServer::watch_connections() {
  watch_->read_events();
  const auto unroutable = [&](uint64_t client) {
    const auto route = routes_.find(client);
    return route != routes_.end() && !reply(route->second, acknowledgement(client));
  };
  for (const uint64_t client : watch_->check(unroutable)) {
    if (++gone_logged_ <= kLoggedJoins) {
      std::cerr << fmt::format("fulgur: ensemble: rank {}: client {} gone (its connection closed without a "
                               "goodbye){}",
                               trainer_.fabric().global_rank(), client,
                               gone_logged_ == kLoggedJoins ? " (further ones: the accounting)" : "")
                << std::endl;
    }
  }
}

WireHeader EnsembleServer::acknowledgement(uint64_t client) {
  WireHeader ack;
  ack.kind = WireHeader::Kind::Ack;
  ack.key = key_;
  ack.client_id = client;
  ack.message = delivered_[client].below;
  ack.count = goodbyes_.count(client) != 0 ? WireHeader::kGoodbyeHeld : 0;
  return ack;
}

void EnsembleServer::owe(uint64_t client, bool now) {
  Owed& owed = owed_[client];
  if (owed.messages == 0 && !owed.now) {
    owed.since = Clock::now();
    owing_.push_back(client);
  }
  ++owed.messages;
  owed.now = owed.now || now;
}

void EnsembleServer::acknowledge(bool all) {
  const auto now = Clock::now();
  for (size_t i = 0; i < owing_.size();) {
    const uint64_t client = owing_[i];
    Owed& owed = owed_[client];
    if (!all && !owed.now && owed.messages < kAckEvery && now - owed.since < kAckWithin) {
      ++i;
      continue;
    }
    reply(routes_[client], acknowledgement(client));
    owed = Owed{};
    owing_[i] = owing_.back();
    owing_.pop_back();
  }
}

bool EnsembleServer::reply(const std::string& route, const WireHeader& header) {
  const std::string frame = header.encode();
  // Never blocks: a full connection (EAGAIN) drops the reply (the client asks again), and a route that is gone
  // (ZMQ_ROUTER_MANDATORY: EHOSTUNREACH) takes nothing, the rest of the message not sent either.
  if (zmq_send(socket_, route.data(), route.size(), ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) return zmq_errno() != EHOSTUNREACH;
  zmq_send(socket_, frame.data(), frame.size(), ZMQ_DONTWAIT);
  return true;
}

bool EnsembleServer::all_finished() const {
  if (options_.expected_clients <= 0) return false;
  const auto goodbyes = static_cast<int64_t>(goodbyes_.size());
  if (goodbyes >= options_.expected_clients) return true;
  if (watch_->gone_count() == 0) return false;
  int64_t gone = 0;
  for (const auto& [client, account] : accounts_) {
    if (goodbyes_.count(client) != 0) continue;
    if (!watch_->gone(client)) return false;  // heard of, neither said goodbye nor gone: it may still send
    ++gone;
  }
  return goodbyes + gone >= options_.expected_clients;
}

bool EnsembleServer::receive_one() {
  Frames frames;  // the sender's routing id (the ROUTER's), then the message's own frames
  int more = 1;
  while (more != 0) {
    zmq_msg_t spare;
    zmq_msg_t& part = frames.kept < Frames::kKept ? frames.parts[frames.kept] : spare;
    zmq_msg_init(&part);
    if (zmq_msg_recv(&part, socket_, ZMQ_DONTWAIT) < 0) {
      zmq_msg_close(&part);
      return false;  // nothing queued (the rest of a message always follows its first frame)
    }
    more = zmq_msg_more(&part);
    ++frames.count;
    if (&part == &spare) {
      zmq_msg_close(&spare);
    } else {
      ++frames.kept;
    }
  }
  const size_t parts = frames.count - 1;
  if (parts == 0) {
    refuse("malformed", "an empty message");
    return true;
  }
  const std::string route(static_cast<const char*>(zmq_msg_data(&frames.parts[0])), zmq_msg_size(&frames.parts[0]));
  if (const uint16_t version = WireHeader::foreign_version(zmq_msg_data(&frames.parts[1]), zmq_msg_size(&frames.parts[1]));
      version != 0) {
    // Answered in this server's version (its first bytes are every version's): the client stops, not waits.
    refuse("version", fmt::format("a client of protocol version {} (this server's: {}); told so", version,
                                  WireHeader::kVersion));
    WireHeader answer;
    answer.kind = WireHeader::Kind::Ack;
    reply(route, answer);
    return true;
  }
  WireHeader header;
  try {
    header = WireHeader::decode(zmq_msg_data(&frames.parts[1]), zmq_msg_size(&frames.parts[1]));
  } catch (const std::invalid_argument& e) {
    refuse("malformed", e.what());
    return true;
  }
  if (header.key != key_) {
    refuse("key", fmt::format("client {} does not have the run's key", header.client_id));
    // Told so, with its own key back: it stops sending (its rendezvous file is another run's).
    WireHeader refusal;
    refusal.kind = WireHeader::Kind::Ack;
    refusal.key = header.key;
    refusal.client_id = header.client_id;
    refusal.count = WireHeader::kKeyRefused;
    reply(route, refusal);
    return true;
  }
  if (header.kind == WireHeader::Kind::Ack) {
    refuse("malformed", fmt::format("client {}: an acknowledgement", header.client_id));
    return true;
  }
  routes_[header.client_id] = route;
  owe(header.client_id,
      header.kind == WireHeader::Kind::Goodbye || (header.flags & WireHeader::kAnswerNow) != 0);
  if (header.kind == WireHeader::Kind::Goodbye) {
    if (parts != 1) {
      refuse("frames", fmt::format("client {}: a goodbye of {} frames", header.client_id, parts));
      return true;
    }
    accounts_[header.client_id].sent = static_cast<int64_t>(header.sequence);
    accounts_[header.client_id].ranks = header.count;
    goodbyes_[header.client_id] = true;
    watch_->finished(header.client_id);
    return true;
  }
  if (goodbyes_.count(header.client_id) == 0) watch_->heard(header.client_id, zmq_msg_get(&frames.parts[1], ZMQ_SRCFD));
  HeldMessages& delivered = delivered_[header.client_id];
  if (delivered.holds(header.message)) {  // sent again after a lost acknowledgement, or to a restarted server
    refuse("duplicate", fmt::format("client {}: message {} again", header.client_id, header.message));
    return true;
  }
  // From here the message is held, whatever becomes of it: a refused one sent again is not counted twice.
  EnsembleAccount& account = accounts_[header.client_id];
  account.numbered = std::max(account.numbered, static_cast<int64_t>(header.sequence + header.count));
  const auto limit = static_cast<size_t>(options_.max_message_bytes);
  bool taken = true;
  size_t input_bytes = 0, target_bytes = 0;
  std::string too_large;
  try {
    input_bytes = header.input_bytes(limit);
    target_bytes = header.target_bytes(limit);
  } catch (const std::invalid_argument& e) {
    too_large = e.what();
  }
  if (!too_large.empty()) {
    account.refused += header.count;
    refuse("size", fmt::format("client {}: {}", header.client_id, too_large));
  } else if (parts != 3) {
    account.refused += header.count;
    refuse("frames", fmt::format("client {}: a sample message of {} frames (3: header, inputs, targets)",
                                 header.client_id, parts));
  } else if (zmq_msg_size(&frames.parts[2]) != input_bytes || zmq_msg_size(&frames.parts[3]) != target_bytes) {
    account.refused += header.count;
    refuse("size", fmt::format("client {}: frames of {} and {} bytes where the header says {} and {}",
                               header.client_id, zmq_msg_size(&frames.parts[2]), zmq_msg_size(&frames.parts[3]),
                               input_bytes, target_bytes));
  } else {
    WireHeader::little_endian(zmq_msg_data(&frames.parts[2]), input_bytes, header.element_size());
    WireHeader::little_endian(zmq_msg_data(&frames.parts[3]), target_bytes, header.element_size());
    taken = accept(header, zmq_msg_data(&frames.parts[2]), zmq_msg_data(&frames.parts[3]));
  }
  if (taken) delivered.add(header.message);
  return true;
}

bool EnsembleServer::accept(const WireHeader& header, void* inputs, void* targets) {
  EnsembleAccount& account = accounts_[header.client_id];
  // float32 and float64 both become the model's float32: only the shapes must agree.
  if (first_ && (header.input_shape != first_->input_shape || header.target_shape != first_->target_shape)) {
    account.refused += header.count;
    refuse("shape", fmt::format("client {}: samples of [{}] -> [{}] where the stream holds [{}] -> [{}]",
                                header.client_id, fmt::join(header.input_shape, ","),
                                fmt::join(header.target_shape, ","), fmt::join(first_->input_shape, ","),
                                fmt::join(first_->target_shape, ",")));
    return true;
  }
  auto shape = [&](const std::vector<int64_t>& sample) {
    std::vector<int64_t> full{static_cast<int64_t>(header.count)};
    full.insert(full.end(), sample.begin(), sample.end());
    return full;
  };
  const auto dtype = header.dtype == WireHeader::DType::Float64 ? torch::kFloat64 : torch::kFloat32;
  // Views of ZeroMQ's buffers: push() copies them into the reservoir (float64 as the model's float32).
  torch::Tensor x = torch::from_blob(inputs, shape(header.input_shape), dtype).to(torch::kFloat32);
  torch::Tensor y = torch::from_blob(targets, shape(header.target_shape), dtype).to(torch::kFloat32);
  // One client's NaN or Inf never reaches the reservoir (where a replay draws it again and again) or a step:
  // those samples are refused here, the message's others taken.
  const std::vector<int64_t> nonfinite = nonfinite_samples(x, y);
  const auto bad = static_cast<int64_t>(nonfinite.size());
  const int64_t taken = header.count - bad;
  // Counted once the message is held (not when a stopped server leaves it to the next one).
  const auto refuse_nonfinite = [&] {
    if (bad == 0) return;
    account.refused += bad;
    refuse("nonfinite", fmt::format("client {}: {} of the {} samples numbered from {} hold NaN or Inf (the first: "
                                    "number {})",
                                    header.client_id, bad, header.count, header.sequence,
                                    header.sequence + static_cast<uint64_t>(nonfinite.front())));
  };
  if (taken == 0) {
    refuse_nonfinite();
    return true;
  }
  if (bad > 0) {
    torch::Tensor keep = torch::ones({static_cast<int64_t>(header.count)}, torch::kBool);
    keep.index_put_({torch::tensor(nonfinite)}, false);
    x = x.index({keep});
    y = y.index({keep});
  }
  try {
    trainer_.push(x, y, static_cast<int64_t>(header.client_id));
  } catch (const StoppedError&) {  // training stopped on a signal: not taken, the next server gets it
    return false;
  } catch (const std::invalid_argument& e) {  // targets the model cannot take
    refuse_nonfinite();
    account.refused += taken;
    refuse("model", fmt::format("client {}: {}", header.client_id, e.what()));
    return true;
  } catch (const std::logic_error&) {  // the stream ended (training stopped)
    if (trainer_.stop_signal() != 0) return false;
    refuse_nonfinite();
    account.received += taken;  // the run is over: received, never trained
    return true;
  }
  refuse_nonfinite();
  if (!first_) first_ = header;
  if (account.received == 0 && ++joined_ <= kLoggedJoins) {
    std::cerr << fmt::format("fulgur: ensemble: rank {}: client {} joined{}", trainer_.fabric().global_rank(),
                             header.client_id, joined_ == kLoggedJoins ? " (further joins: the accounting)" : "")
              << std::endl;
  }
  account.received += taken;
  return true;
}

void EnsembleServer::refuse(const std::string& reason, const std::string& detail) {
  const int64_t count = ++refusals_[reason];
  if (count <= kLoggedPerReason) {
    std::cerr << fmt::format("fulgur: ensemble: rank {} refused a message ({}): {}{}",
                             trainer_.fabric().global_rank(), reason, detail,
                             count == kLoggedPerReason ? " (further ones are only counted)" : "")
              << std::endl;
  }
}

void EnsembleServer::reconcile() {
  for (const auto& [source, counts] : trainer_.stream().counts_by_source()) {
    if (source < 0) continue;
    EnsembleAccount& account = accounts_[static_cast<uint64_t>(source)];
    const EnsembleAccount& before = carried_[static_cast<uint64_t>(source)];  // a stopped run's, resumed
    account.trained = before.trained + counts.trained;
    account.evicted_untrained = before.evicted_untrained + counts.evicted_untrained;
  }
  totals_.clear();
  refusal_totals_.clear();
  std::map<uint64_t, int64_t> goodbye_ranks, sent_sum;
  const int64_t ranks = trainer_.fabric().world_size();
  const std::vector<std::string> tables =
      trainer_.fabric().strategy().all_gather_bytes(EnsembleStateFile{accounts_, refusals_, {}}.table());
  for (size_t r = 0; r < tables.size(); ++r) {
    const EnsembleStateFile table = EnsembleStateFile::parse(tables[r], fmt::format("rank {}'s counts", r));
    for (const auto& [client, a] : table.accounts) {
      EnsembleAccount& total = totals_[client];
      // The client said goodbye to each of its ranks with what it sent there; one it did not reach leaves the
      // sum unknown.
      if (a.sent >= 0) {
        ++goodbye_ranks[client];
        sent_sum[client] += a.sent;
      }
      total.add_counts(a);
    }
    for (const auto& [reason, count] : table.refusals) refusal_totals_[reason] += count;
  }
  for (auto& [client, total] : totals_) {
    const int64_t its_ranks = total.ranks > 0 ? std::min(total.ranks, ranks) : ranks;
    total.sent = goodbye_ranks[client] == its_ranks ? sent_sum[client] : -1;
  }
  if (!trainer_.fabric().is_global_zero()) return;
  std::cerr << AccountingFile::write(accounting_file(), totals_, refusal_totals_) << std::endl;
}

}  // namespace fulgur
