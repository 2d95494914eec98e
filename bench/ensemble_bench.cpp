// Ensembles (docs/ensemble.md), each figure against a peer measured in the
// same run:
//   1. ingestion into one server rank from 8 clients over loopback (client
//      threads, each its own EnsembleClient), 64 KiB and 1 MiB samples,
//      training paused: GB/s against 8 raw TCP connections into one thread
//      that reads them with poll() (length-prefixed messages). Each client
//      sends many times what it keeps in flight (its queue and the
//      unacknowledged messages, 64 each), so the figure is the steady state.
//      Beside them, the transport alone: plain ZeroMQ PUSH/PULL, the same 8
//      senders (where the rest of the gap is);
//   2. training's step rate with 4 producers faster than it consumes (each
//      64 samples every 2 ms: 128,000 samples/s) as clients over the network,
//      against the same producers pushing in process;
//   3. a solver's step (a Jacobi heat step on 512 x 512) with its 1 MiB
//      field sent every 10th step, against the same steps without.
//
//   ensemble_bench [--messages 3200] [--seconds 4] [--sim_steps 2000] [--pairs 5] [--only ingestion|training|solver]
//   ensemble_bench --only ingestion_zmq [--kib 64] [--messages 3200] [--pairs 5]
//                  fulgur against plain ZeroMQ PUSH/PULL alone, alternating pairs: each ratio and the median
//                  (and, for information, against a ZeroMQ reader that copies each message into a ring)
//   ensemble_bench --only ingestion_fulgur [--kib 64] [--messages 3200]: fulgur's side alone, once (for perf)
#include "bench_support.hpp"

#include <fulgur/ensemble/ensemble_client.hpp>
#include <fulgur/ensemble/ensemble_server.hpp>
#include <fulgur/online/configured_model.hpp>
#include <fulgur/online/online_trainer.hpp>

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zmq.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

// One of the programs in a multi-call binary (started through bin/ensemble_bench).
namespace ensemble_bench {

namespace {

using Clock = std::chrono::steady_clock;
using fulgur::bench::flag;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// The process's CPU seconds so far (every thread, user and system): beside a wall time, how many cores it kept busy.
double cpu_seconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

// Cores kept busy by the last plain_zmq_gbps or fulgur_gbps (CPU seconds over wall seconds).
double g_cores = 0.0;

/// An MLP of `inputs` features, two tanh layers of `hidden`, one output (Adam, 1e-3): ingestion only needs its shapes.
std::function<std::shared_ptr<fulgur::LightningModule>()> mlp(int64_t inputs, int64_t hidden) {
  return [inputs, hidden] {
    fulgur::ModelSpec spec;
    spec.layers = {inputs, hidden, hidden, 1};
    return std::make_shared<fulgur::ConfiguredModel>(spec);
  };
}

fulgur::OnlineOptions options_for(int64_t capacity, int64_t batch) {
  fulgur::OnlineOptions o;
  o.trainer.accelerator(fulgur::AcceleratorKind::Cpu).logger(false).enable_checkpointing(false).enable_progress_bar(false)
      .enable_model_summary(false);
  o.stream = fulgur::SampleStreamOptions{.capacity = capacity, .when_full = fulgur::WhenFull::Replay,
                                         .batch_size = batch, .min_samples = batch};
  o.num_threads = 1;
  return o;
}

// 8 raw TCP connections into one reading thread: GB/s for `messages` messages of `bytes` from each.
double raw_gbps(int clients, int64_t messages, size_t bytes) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  ::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address);
  ::listen(listener, clients);
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length);
  std::vector<std::thread> senders;
  const auto start = Clock::now();
  for (int c = 0; c < clients; ++c) {
    senders.emplace_back([&] {
      const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address);
      std::vector<char> message(bytes + 8, 1);
      std::memcpy(message.data(), &bytes, 8);
      for (int64_t m = 0; m < messages; ++m) {
        for (size_t sent = 0; sent < message.size();) {
          const ssize_t n = ::send(fd, message.data() + sent, message.size() - sent, 0);
          if (n <= 0) break;
          sent += static_cast<size_t>(n);
        }
      }
      ::close(fd);
    });
  }
  std::vector<pollfd> fds;
  for (int c = 0; c < clients; ++c) fds.push_back({::accept(listener, nullptr, nullptr), POLLIN, 0});
  std::vector<char> buffer(bytes + 8);
  const size_t total = static_cast<size_t>(clients) * static_cast<size_t>(messages) * (bytes + 8);
  size_t received = 0;
  while (received < total) {
    ::poll(fds.data(), fds.size(), 100);
    for (auto& p : fds) {
      if ((p.revents & POLLIN) == 0) continue;
      const ssize_t n = ::recv(p.fd, buffer.data(), buffer.size(), 0);
      if (n > 0) received += static_cast<size_t>(n);
    }
  }
  const double seconds = seconds_since(start);
  for (auto& t : senders) t.join();
  for (auto& p : fds) ::close(p.fd);
  ::close(listener);
  return static_cast<double>(clients) * static_cast<double>(messages) * static_cast<double>(bytes) / seconds / 1e9;
}

// The transport alone: 8 PUSH sockets (each its own context and I/O thread, as separate clients have) into one
// PULL socket read in one thread; zmq_send copies the sender's buffer, as send() does. With `keep_rows` > 0 the
// reader also copies each message into a ring of that many rows, as any receiver that keeps the samples must
// (fulgur's reservoir holds 64): what storing costs, apart from the protocol.
double plain_zmq_gbps(int clients, int64_t messages, size_t bytes, int64_t keep_rows = 0) {
  void* context = zmq_ctx_new();
  void* pull = zmq_socket(context, ZMQ_PULL);
  zmq_bind(pull, "tcp://127.0.0.1:*");
  char endpoint[256] = {};
  size_t size = sizeof endpoint;
  zmq_getsockopt(pull, ZMQ_LAST_ENDPOINT, endpoint, &size);
  std::vector<std::thread> senders;
  const auto start = Clock::now();
  const double cpu_start = cpu_seconds();
  for (int c = 0; c < clients; ++c) {
    senders.emplace_back([&] {
      void* own = zmq_ctx_new();
      void* push = zmq_socket(own, ZMQ_PUSH);
      zmq_connect(push, endpoint);
      const std::vector<char> message(bytes, 1);
      for (int64_t m = 0; m < messages; ++m) zmq_send(push, message.data(), message.size(), 0);
      zmq_close(push);  // the default linger: what is queued still goes
      zmq_ctx_term(own);
    });
  }
  const int64_t total = clients * messages;
  std::vector<char> ring(static_cast<size_t>(keep_rows) * bytes);
  zmq_msg_t message;
  zmq_msg_init(&message);
  for (int64_t m = 0; m < total; ++m) {
    zmq_msg_recv(&message, pull, 0);
    if (keep_rows > 0) std::memcpy(ring.data() + static_cast<size_t>(m % keep_rows) * bytes, zmq_msg_data(&message), bytes);
  }
  zmq_msg_close(&message);
  const double seconds = seconds_since(start);
  g_cores = (cpu_seconds() - cpu_start) / seconds;
  for (auto& t : senders) t.join();
  zmq_close(pull);
  zmq_ctx_term(context);
  return static_cast<double>(total) * static_cast<double>(bytes) / seconds / 1e9;
}

// The same bytes through EnsembleClient -> EnsembleServer -> the reservoir, training paused.
double fulgur_gbps(int clients, int64_t messages, size_t bytes, const std::filesystem::path& dir) {
  const auto features = static_cast<int64_t>(bytes / 4);
  fulgur::OnlineTrainer trainer(mlp(features, 4), options_for(64, 8));
  fulgur::EnsembleOptions options;
  options.run_dir = dir;
  options.host = "127.0.0.1";
  options.expected_clients = clients;
  options.drain_s = 0;
  options.max_message_bytes = static_cast<int64_t>(bytes) + 1024;
  fulgur::EnsembleServer server(trainer, options);
  std::thread serving([&] {
    pthread_setname_np(pthread_self(), "server");
    server.serve();
  });
  while (!trainer.running()) std::this_thread::yield();
  trainer.pause();  // ingestion alone
  std::vector<std::thread> senders;
  const auto start = Clock::now();
  const double cpu_start = cpu_seconds();
  for (int c = 0; c < clients; ++c) {
    senders.emplace_back([&, c] {
      pthread_setname_np(pthread_self(), "solver");
      fulgur::EnsembleClient client(server.rendezvous(), static_cast<uint64_t>(c));
      std::vector<float> x(static_cast<size_t>(features), 0.5F), y(1, 1.0F);
      for (int64_t m = 0; m < messages; ++m) client.send(x.data(), {1, features}, y.data(), {1, 1});
      client.close();
    });
  }
  for (auto& t : senders) t.join();
  serving.join();  // ends at the last goodbye
  const double seconds = seconds_since(start);
  g_cores = (cpu_seconds() - cpu_start) / seconds;
  int64_t received = 0;
  for (const auto& [client, account] : server.accounts()) received += account.received;
  if (received != clients * messages) std::printf("ensemble_bench: received %ld of %ld\n", received, clients * messages);
  return static_cast<double>(received) * static_cast<double>(bytes) / seconds / 1e9;
}

// Training steps per second over `seconds`: fed from memory, or by 4 clients sending as fast as they can.
double steps_per_second(bool network, double seconds, const std::filesystem::path& dir) {
  fulgur::OnlineOptions o = options_for(4096, 64);
  fulgur::OnlineTrainer trainer(mlp(64, 256), o);
  const std::vector<float> x(64 * 64, 0.25F), y(64, 0.5F);
  std::atomic<bool> done{false};
  std::vector<std::thread> producers;
  std::unique_ptr<fulgur::EnsembleServer> server;
  std::thread serving;
  if (network) {
    fulgur::EnsembleOptions options;
    options.run_dir = dir;
    options.host = "127.0.0.1";
    options.time_limit_s = seconds + 1;
    options.drain_s = 0;
    server = std::make_unique<fulgur::EnsembleServer>(trainer, options);
    serving = std::thread([&] { server->serve(); });
    for (int c = 0; c < 4; ++c) {
      producers.emplace_back([&, c] {
        fulgur::EnsembleClientOptions co;
        co.when_full = fulgur::WhenQueueFull::DropOldest;
        fulgur::EnsembleClient client(server->rendezvous(), static_cast<uint64_t>(c), co);
        while (!done) {
          client.send(x.data(), {64, 64}, y.data(), {64, 1});
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
        client.close();
      });
    }
  } else {
    trainer.start();
    for (int c = 0; c < 4; ++c) {
      producers.emplace_back([&] {
        const torch::Tensor xs = torch::from_blob(const_cast<float*>(x.data()), {64, 64});
        const torch::Tensor ys = torch::from_blob(const_cast<float*>(y.data()), {64, 1});
        while (!done) {
          trainer.push(xs, ys);
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
      });
    }
  }
  while (trainer.global_step() < 20) std::this_thread::sleep_for(std::chrono::milliseconds(5));  // warm
  const int64_t first = trainer.global_step();
  const auto start = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  const double rate = static_cast<double>(trainer.global_step() - first) / seconds_since(start);
  done = true;
  for (auto& t : producers) t.join();
  if (network) {
    serving.join();
  } else {
    trainer.stop();
  }
  return rate;
}

// A Jacobi heat step on n x n, its field sent every 10th step (or not): seconds per step.
double solver_step(bool send, int64_t steps, const std::filesystem::path& dir) {
  const int64_t n = 512;
  std::vector<float> u(n * n, 0.0F), next(n * n, 0.0F);
  for (int64_t i = n / 4; i < n / 2; ++i) {
    for (int64_t j = n / 4; j < n / 2; ++j) u[i * n + j] = 1.0F;
  }
  fulgur::OnlineTrainer trainer(mlp(n * n, 4), options_for(64, 8));
  fulgur::EnsembleOptions options;
  options.run_dir = dir;
  options.host = "127.0.0.1";
  options.expected_clients = 1;
  options.drain_s = 0;
  fulgur::EnsembleServer server(trainer, options);
  std::thread serving([&] { server.serve(); });
  while (!trainer.running()) std::this_thread::yield();
  trainer.pause();
  fulgur::EnsembleClientOptions co;
  co.when_full = fulgur::WhenQueueFull::DropOldest;
  fulgur::EnsembleClient client(server.rendezvous(), 0, co);
  const float target = 0.0F;
  const auto start = Clock::now();
  for (int64_t s = 0; s < steps; ++s) {
    for (int64_t i = 1; i + 1 < n; ++i) {
      for (int64_t j = 1; j + 1 < n; ++j) {
        const int64_t k = i * n + j;
        next[k] = u[k] + 0.2F * (u[k - 1] + u[k + 1] + u[k - n] + u[k + n] - 4 * u[k]);
      }
    }
    std::swap(u, next);
    if (send && s % 10 == 0) client.send(u.data(), {1, n * n}, &target, {1, 1});
  }
  const double per_step = seconds_since(start) / static_cast<double>(steps);
  client.close();
  serving.join();
  return per_step;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t messages = flag(argc, argv, "--messages", int64_t{3200});
  const double seconds = static_cast<double>(flag(argc, argv, "--seconds", int64_t{4}));
  const int64_t sim_steps = flag(argc, argv, "--sim_steps", int64_t{2000});
  const int64_t solver_pairs = flag(argc, argv, "--pairs", int64_t{5});
  const std::string only = flag(argc, argv, "--only", std::string());
  const auto runs = [&](const char* part) { return only.empty() || only == part; };
  const auto dir = std::filesystem::temp_directory_path() / ("ensemble-bench-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (const size_t bytes : {size_t{64} << 10, size_t{1} << 20}) {
    if (!runs("ingestion")) break;
    const int64_t count = bytes > (size_t{256} << 10) ? messages / 8 : messages;
    const double raw = raw_gbps(8, count, bytes);
    const double ours = fulgur_gbps(8, count, bytes, dir / std::to_string(bytes));
    const double zmq = plain_zmq_gbps(8, count, bytes);
    std::printf("ensemble_bench[ingestion %zu KiB, 8 clients x %ld]: fulgur %.2f GB/s, raw TCP %.2f GB/s: %.2fx (goal >= 0.7); "
                "plain ZeroMQ PUSH/PULL %.2f GB/s: %.2fx raw, fulgur %.2fx of it\n",
                bytes >> 10, count, ours, raw, ours / raw, zmq, zmq / raw, ours / zmq);
  }
  if (only == "ingestion_zmq") {
    // fulgur against plain ZeroMQ PUSH/PULL alone (no raw TCP), alternating, `--pairs` times: the median ratio.
    const auto bytes = static_cast<size_t>(flag(argc, argv, "--kib", int64_t{64})) << 10;
    std::vector<std::array<double, 3>> pairs;  // ratio, fulgur, zmq
    std::vector<double> against_keeping;           // fulgur / ZeroMQ that keeps each message (information)
    for (int64_t p = 0; p < solver_pairs; ++p) {
      // The VM's speed drifts within seconds: fulgur runs last in even pairs and first in odd ones, so that
      // neither side always gets the later (or earlier) half of a drift.
      double ours = 0.0, fulgur_cores = 0.0;
      const auto run_fulgur = [&] {
        ours = fulgur_gbps(8, messages, bytes, dir / fmt::format("zmq{}", p));
        fulgur_cores = g_cores;
      };
      if (p % 2 == 1) run_fulgur();
      const double zmq = plain_zmq_gbps(8, messages, bytes);
      const double zmq_cores = g_cores;
      const double keeping = plain_zmq_gbps(8, messages, bytes, 64);
      if (p % 2 == 0) run_fulgur();
      pairs.push_back({ours / zmq, ours, zmq});
      against_keeping.push_back(ours / keeping);
      // The cores each kept busy: below 2 on the 2-core VM, the rest waited (or went to other work).
      std::printf("ensemble_bench[ingestion %zu KiB, 8 clients x %ld, pair %ld]: fulgur %.2f GB/s (%.2f cores busy), "
                  "plain ZeroMQ PUSH/PULL %.2f GB/s (%.2f cores): %.2fx; ZeroMQ keeping each message %.2f GB/s: "
                  "%.2fx\n",
                  bytes >> 10, messages, p, ours, fulgur_cores, zmq, zmq_cores, ours / zmq, keeping, ours / keeping);
    }
    std::sort(pairs.begin(), pairs.end());
    std::sort(against_keeping.begin(), against_keeping.end());
    const auto& [ratio, ours, zmq] = pairs[pairs.size() / 2];
    std::printf("ensemble_bench[ingestion %zu KiB against plain ZeroMQ]: median of %ld pairs %.2fx (fulgur %.2f GB/s, "
                "ZeroMQ %.2f GB/s; goal >= 0.9); against ZeroMQ keeping each message %.2fx\n",
                bytes >> 10, solver_pairs, ratio, ours, zmq, against_keeping[against_keeping.size() / 2]);
  }
  if (only == "ingestion_fulgur") {  // fulgur's side alone, once (for a profiler: perf record -g)
    const auto bytes = static_cast<size_t>(flag(argc, argv, "--kib", int64_t{64})) << 10;
    const double ours = fulgur_gbps(8, messages, bytes, dir / "fulgur");
    std::printf("ensemble_bench[ingestion %zu KiB, 8 clients x %ld]: fulgur %.2f GB/s (%.2f cores busy)\n", bytes >> 10,
                messages, ours, g_cores);
  }
  if (runs("training")) {
    const double memory = steps_per_second(false, seconds, dir / "memory");
    const double network = steps_per_second(true, seconds, dir / "network");
    std::printf("ensemble_bench[training rate]: %.1f steps/s fed by 4 clients, %.1f fed from memory: %.2fx (goal >= 0.95)\n",
                network, memory, network / memory);
  }
  if (runs("solver")) {
    // The 2 cores are shared with the client's and the server's threads: the median of alternating pairs.
    std::vector<std::array<double, 3>> pairs;  // ratio, with, without
    for (int64_t p = 0; p < solver_pairs; ++p) {
      const double alone = solver_step(false, sim_steps, dir / fmt::format("alone{}", p));
      const double sending = solver_step(true, sim_steps, dir / fmt::format("sending{}", p));
      pairs.push_back({sending / alone, sending, alone});
    }
    std::sort(pairs.begin(), pairs.end());
    const auto& [ratio, sending, alone] = pairs[pairs.size() / 2];
    std::printf("ensemble_bench[solver step]: %.1f us with a 1 MiB send every 10th step, %.1f us without: %.3fx "
                "(median of %ld alternating pairs; goal <= 1.05)\n",
                sending * 1e6, alone * 1e6, ratio, solver_pairs);
  }

  std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace ensemble_bench
