// Many simulations, one trainer: client processes (a C solver against
// libfulgur_client) stream samples over ZeroMQ into an EnsembleServer, in
// this process and as the fulgur_serve tool; the accounting reconciles
// exactly, refused messages are counted while training goes on, and the
// surrogate learns.
#include "support/test_support.hpp"

#include <fulgur/ensemble/ensemble_config.hpp>
#include <fulgur/ensemble/ensemble_server.hpp>
#include <fulgur/ensemble/rendezvous_file.hpp>
#include <fulgur/online/online_config.hpp>
#include <fulgur/online/online_trainer.hpp>

#include <torch/torch.h>

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <chrono>
#include <future>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace ensemble_test {

using fulgur::testing::read_file;
using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {

const std::string kProbe = std::string(FULGUR_BINARY_DIR) + "/bin/ensemble_client_probe";

// An online trainer for y = sin(3 x0) x1 on a replay reservoir.
std::string config_text(int64_t max_steps, const std::string& trainer = "") {
  return fmt::format(
      "model: {{type: mlp, layers: [2, 32, 32, 1], activation: tanh}}\n"
      "optimizer: {{type: adam, lr: 0.01}}\n"
      "online: {{publish_every_n_steps: 10, num_threads: 1, max_steps: {}}}\n"
      "stream: {{capacity: 4096, when_full: replay, batch_size: 32, seed: 3, min_samples: 256}}\n"
      "trainer: {{accelerator: cpu, logger: false, enable_checkpointing: false{}}}\n",
      max_steps, trainer);
}

// fulgur_serve's file for a run a signal may stop and a restart resume (a checkpoint_dir), in `dir`.
std::string resumable_config(const std::filesystem::path& dir, int64_t capacity, int64_t expected_clients,
                             const std::string& trainer = "") {
  return fmt::format(
      "model: {{type: mlp, layers: [2, 32, 32, 1], activation: tanh}}\n"
      "optimizer: {{type: adam, lr: 0.01}}\n"
      "online: {{publish_every_n_steps: 10, num_threads: 1, checkpoint_dir: {0}/ckpt}}\n"
      "stream: {{capacity: {1}, when_full: replay, batch_size: 32, seed: 3, min_samples: 64}}\n"
      "trainer: {{accelerator: cpu, logger: false, enable_checkpointing: false{3}}}\n"
      "ensemble: {{run_dir: {0}/run, expected_clients: {2}, host: 127.0.0.1, drain_s: 1}}\n",
      dir.string(), capacity, expected_clients, trainer);
}

// Starts a client process; its result later.
std::future<fulgur::testing::CommandResult> client(const std::string& arguments) {
  return std::async(std::launch::async, [arguments] { return run_command(kProbe + " " + arguments, 120); });
}

// The mean squared error of the published model on a fixed held-out grid.
double held_out_error(fulgur::OnlineTrainer& trainer) {
  const torch::Tensor axis = torch::linspace(-0.9, 0.9, 15);
  const auto grid = torch::meshgrid({axis, axis}, "ij");
  const torch::Tensor x = torch::stack({grid[0].flatten(), grid[1].flatten()}, 1);
  const torch::Tensor y = (3 * x.select(1, 0)).sin() * x.select(1, 1);
  return (trainer.predict(x).squeeze(1) - y).pow(2).mean().item<double>();
}

}  // namespace

TEST_CASE("three clients (C and Fortran) stream into a server: every sample accounted for, a wrong key and garbage refused, the "
          "surrogate learns") {
  TempDir dir("ensemble");
  const fulgur::OnlineConfig config = fulgur::OnlineConfig::from_yaml(config_text(-1), "test");
  auto trainer = config.make_trainer();
  const double untrained = held_out_error(*trainer);
  fulgur::EnsembleOptions options;
  options.run_dir = dir / "run";
  options.host = "127.0.0.1";
  options.expected_clients = 4;  // 1, 2, 4 and 5 (the stranger never says goodbye)
  options.min_steps = 400;
  options.drain_s = 1.0;
  fulgur::EnsembleServer server(*trainer, options);

  // The rendezvous file: only its owner reads it (the key admits a client).
  struct stat status {};
  REQUIRE(::stat(server.rendezvous().c_str(), &status) == 0);
  CHECK((status.st_mode & 0777) == 0600);
  const fulgur::RendezvousFile file = fulgur::RendezvousFile::read(server.rendezvous());
  REQUIRE(file.endpoints.size() == 1);
  CHECK(file.endpoints[0] == server.endpoint());
  // A client holding another key: every message refused.
  fulgur::RendezvousFile stranger = file;
  stranger.key[0] ^= 0xff;
  stranger.write(dir / "stranger.rendezvous");

  // The stranger and the garbage first, done before the others start: what they sent is queued at the
  // server before any sample that training (which ends after the 4 goodbyes and 400 steps) can take.
  std::thread serving([&] { server.serve(); });
  {
    // The stranger is told its key is refused: it stops sending and says so.
    const auto stranger = client((dir / "stranger.rendezvous").string() + " 3 50 10").get();
    INFO(stranger.output);
    CHECK(stranger.exit_code == 1);
    CHECK(stranger.output.find("refused the rendezvous file's key") != std::string::npos);
    const auto garbage = client(server.rendezvous().string() + " garbage").get();
    INFO(garbage.output);
    CHECK(garbage.exit_code == 0);
    // Its message of protocol version 2 is answered in the server's: a client of another version stops.
    CHECK(garbage.output.find("the server answered in protocol version 3") != std::string::npos);
  }
  auto one = client(server.rendezvous().string() + " 1 1000 10");
  auto two = client(server.rendezvous().string() + " 2 700 7");
  auto fortran = std::async(std::launch::async, [&] {
    return run_command(std::string(FULGUR_BINARY_DIR) + "/bin/ensemble_fortran_client " +
                           server.rendezvous().string() + " 4 300",
                       120);
  });
  auto wide = client(server.rendezvous().string() + " 5 100 10 wide_after 5");  // a shape that changes mid-stream
  for (auto* c : {&one, &two, &fortran, &wide}) {
    const auto result = c->get();
    INFO(result.output);
    CHECK(result.exit_code == 0);
  }
  serving.join();

  const auto& accounts = server.accounts();
  REQUIRE(accounts.count(1) == 1);
  REQUIRE(accounts.count(2) == 1);
  CHECK(accounts.count(3) == 0);  // no key: no account
  for (const auto& client_sent : {std::pair{uint64_t{1}, int64_t{1000}}, std::pair{uint64_t{2}, int64_t{700}},
                                     std::pair{uint64_t{4}, int64_t{300}}}) {
    const auto& client = client_sent.first;  // not bound: clang 14 cannot capture a binding
    const auto& sent = client_sent.second;
    const fulgur::EnsembleAccount& a = accounts.at(client);
    CAPTURE(client);
    CHECK(a.sent == sent);
    CHECK(a.received == sent);
    CHECK(a.refused == 0);
    CHECK(a.lost() == 0);
    CHECK(a.trained > 0);
    CHECK(a.trained <= a.received);
    CHECK(a.evicted_untrained == 0);  // the reservoir holds all 2,050
  }
  // The stranger's sample messages until it heard of the refusal (1 to 5; no goodbye), and the garbage probe's
  // keyless one; its bad-magic and no-header messages are malformed.
  CHECK(server.refusals().at("key") >= 2);
  CHECK(server.refusals().at("key") <= 6);
  CHECK(server.refusals().at("malformed") == 2);
  CHECK(server.refusals().at("version") == 1);
  // Its first 50 samples trained; the 50 of 3 inputs refused; with its goodbye all 100 are accounted for.
  const fulgur::EnsembleAccount& wide_account = accounts.at(5);
  CHECK(wide_account.sent == 100);
  CHECK(wide_account.received == 50);
  CHECK(wide_account.refused == 50);
  CHECK(wide_account.lost() == 0);
  CHECK(server.refusals().at("shape") == 5);
  CHECK(trainer->global_step() >= 400);
  CHECK(trainer->stream().trained() ==
        accounts.at(1).trained + accounts.at(2).trained + accounts.at(4).trained + accounts.at(5).trained);

  const std::string csv = read_file(server.accounting_file());
  INFO(csv);
  CHECK(csv.find("client,sent,received,refused,lost,trained,untrained,evicted_untrained,goodbye,numbered\n") == 0);
  CHECK(csv.find("\n1,1000,1000,0,0,") != std::string::npos);
  CHECK(csv.find("\n2,700,700,0,0,") != std::string::npos);
  CHECK(csv.find("\n4,300,300,0,0,") != std::string::npos);  // the Fortran solver's
  CHECK(csv.find("\n5,100,50,50,0,") != std::string::npos);
  CHECK(csv.find("\ntotal,2100,2050,50,0,") != std::string::npos);
  const double trained = held_out_error(*trainer);
  MESSAGE("held-out mse: " << untrained << " untrained, " << trained << " after " << trainer->global_step()
                            << " steps");
  CHECK(trained < untrained / 4);
}

TEST_CASE("fulgur_serve: the tool ends once the expected clients said goodbye, with the accounting and the weights") {
  TempDir dir("ensemble-serve");
  std::ofstream(dir / "ensemble.yaml")
      << config_text(-1)
      << fmt::format("ensemble: {{run_dir: {}, expected_clients: 2, host: 127.0.0.1, drain_s: 1}}\n",
                     (dir / "run").string());
  auto serve = std::async(std::launch::async, [&] {
    return run_command(std::string(FULGUR_BINARY_DIR) + "/bin/fulgur_serve --config " + (dir / "ensemble.yaml").string(),
                       120);
  });
  const std::string rendezvous = (dir / "run" / "ensemble.rendezvous").string();
  auto one = client(rendezvous + " 11 600 20");
  auto two = client(rendezvous + " 12 300 30 drop_oldest 4");  // may drop from its queue of 4: counted
  const auto first = one.get(), second = two.get();
  INFO(first.output << second.output);
  CHECK(first.exit_code == 0);
  CHECK(second.exit_code == 0);
  long long sent = -1, dropped = -1, queued = -1;
  REQUIRE(std::sscanf(second.output.substr(second.output.find("client 12:")).c_str(),
                      "client 12: sent %lld dropped %lld queued %lld", &sent, &dropped, &queued) == 3);
  CHECK(sent + dropped == 300);
  CHECK(queued == 0);
  const auto served = serve.get();
  INFO(served.output);
  REQUIRE(served.exit_code == 0);
  CHECK(served.output.find(fmt::format("fulgur: ensemble: 2 clients (0 without a goodbye): {} samples sent, {} "
                                       "received, 0 refused, 0 lost",
                                       600 + sent, 600 + sent)) != std::string::npos);
  CHECK(std::filesystem::exists(dir / "run" / "model.ckpt"));
  const std::string csv = read_file(dir / "run" / "ensemble_accounting.csv");
  CHECK(csv.find("\n11,600,600,0,0,") != std::string::npos);
  CHECK(csv.find(fmt::format("\n12,{},{},0,0,", sent, sent)) != std::string::npos);
  CHECK(csv.find(fmt::format("\ntotal,{},{},0,0,", 600 + sent, 600 + sent)) != std::string::npos);

  // A bad key in the file: one line naming it, exit 1.
  std::ofstream(dir / "bad.yaml") << config_text(-1) << "ensemble: {expected_clientz: 2}\n";
  const auto bad = run_command(std::string(FULGUR_BINARY_DIR) + "/bin/fulgur_serve --config " +
                               (dir / "bad.yaml").string());
  CHECK(bad.exit_code == 1);
  CHECK(bad.output.find("bad.yaml: ensemble.expected_clientz: unknown key") != std::string::npos);
}

TEST_CASE("64 clients at once against a rank that may hold 48 open files: one line says so, the clients past the "
          "limit wait to connect, every sample arrives") {
  TempDir dir("ensemble-files");
  std::ofstream(dir / "ensemble.yaml")
      << config_text(-1)
      << fmt::format("ensemble: {{run_dir: {}, expected_clients: 64, host: 127.0.0.1, drain_s: 1}}\n",
                     (dir / "run").string());
  // ulimit -n sets the hard limit too: the tool cannot raise it. Each client stays at least 0.6 s (3 sends 0.2 s
  // apart), so more of them want a connection at once than the rank can hold.
  auto serve = std::async(std::launch::async, [&] {
    return run_command("bash -c 'ulimit -n 48 && exec " + std::string(FULGUR_BINARY_DIR) +
                           "/bin/fulgur_serve --config " + (dir / "ensemble.yaml").string() + "'",
                       120);
  });
  const std::string rendezvous = (dir / "run" / "ensemble.rendezvous").string();
  const auto clients = run_command(
      "bash -c 'failed=0; for id in $(seq 100 163); do " + kProbe + " " + rendezvous +
          " $id 30 10 paced 200 > /dev/null & done; for pid in $(jobs -p); do wait $pid || failed=$((failed + 1)); done; "
          "echo failed: $failed'",
      120);
  INFO(clients.output);
  CHECK(clients.output.find("failed: 0") != std::string::npos);
  const auto served = serve.get();
  INFO(served.output);
  REQUIRE(served.exit_code == 0);
  CHECK(served.output.find("fulgur: ensemble: rank 0: 64 expected clients and 48 open files at most (ulimit -n)") !=
        std::string::npos);
  CHECK(served.output.find("fulgur: ensemble: 64 clients (0 without a goodbye): 1920 samples sent, 1920 received, 0 "
                           "refused, 0 lost") != std::string::npos);
}

TEST_CASE("fulgur_serve on 2 ranks under mpirun (process_group_backend mpi): 2 clients killed, one server rank "
          "stopped by SIGTERM and the job started again, a client on one rank only; the accounting reconciles "
          "exactly") {
  TempDir dir("ensemble-ranks");
  const std::string yaml = (dir / "ensemble.yaml").string();
  std::ofstream(yaml) << resumable_config(dir.path(), 4096, 3, ", process_group_backend: mpi, strategy: ddp");
  // Each rank leaves its pid (to stop rank 1 alone); the job's log goes to a file the test watches.
  const auto serve = [&](const std::filesystem::path& log) {
    return std::async(std::launch::async, [&, log] {
      return run_command("env -u MASTER_ADDR -u MASTER_PORT -u FULGUR_FILE_STORE mpirun --allow-run-as-root "
                         "--oversubscribe -np 2 sh -c 'echo $$ > " + (dir / "rank").string() +
                             "$OMPI_COMM_WORLD_RANK.pid; exec " + std::string(FULGUR_BINARY_DIR) +
                             "/bin/fulgur_serve --config " + yaml + "' 2> " + log.string(),
                         180);
    });
  };
  const auto logged = [&](const std::filesystem::path& log, const std::string& line) {
    for (int i = 0; i < 1200; ++i) {
      if (std::filesystem::exists(log) && read_file(log).find(line) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  };
  const std::string rendezvous = (dir / "run" / "ensemble.rendezvous").string();
  // A client that sends 5 messages and waits, SIGKILLed once the job logged its first samples.
  const auto killed_client = [&](int id, const std::filesystem::path& log) {
    const std::string pid = (dir / fmt::format("client{}.pid", id)).string();
    auto held = std::async(std::launch::async, [&, id, pid] {
      return run_command("sh -c 'echo $$ > " + pid + "; exec " + kProbe + " " + rendezvous + " " +
                             std::to_string(id) + " 500 10 held_after 5'",
                         120);
    });
    REQUIRE(logged(log, fmt::format("client {} joined", id)));
    REQUIRE(run_command("kill -KILL $(cat " + pid + ")").exit_code == 0);
    const auto result = held.get();
    INFO(result.output);
    CHECK(result.exit_code != 0);
    CHECK(result.exit_code != 3);  // killed, not timed out
  };

  const auto first_log = dir / "first.log";
  auto first = serve(first_log);
  killed_client(23, first_log);
  // Client 21 streams 3,000 samples, 10 per send, 5 ms apart: it spans the stop and the restart.
  auto paced = client(rendezvous + " 21 3000 10 paced 5");
  REQUIRE(logged(first_log, "client 21 joined"));
  REQUIRE(run_command("kill -TERM $(cat " + (dir / "rank1.pid").string() + ")").exit_code == 0);
  const auto stopped = first.get();
  INFO(stopped.output << read_file(first_log));
  REQUIRE(stopped.exit_code == 143);  // 128 + SIGTERM: the scheduler sees an unfinished run
  CHECK(read_file(first_log).find("fulgur: ensemble: stopped on SIGTERM") != std::string::npos);
  CHECK(std::filesystem::exists(dir / "run" / "ensemble_state_rank0.txt"));
  CHECK(std::filesystem::exists(dir / "run" / "ensemble_state_rank1.txt"));

  const auto second_log = dir / "second.log";
  auto second = serve(second_log);
  killed_client(24, second_log);
  auto other = client(rendezvous + " 22 400 20");
  auto subset = client(rendezvous + " 25 200 10 ranks 1");  // rank 25 mod 2 = 1 alone
  for (auto* c : {&paced, &other, &subset}) {
    const auto result = c->get();
    INFO(result.output);
    CHECK(result.exit_code == 0);
  }
  const auto served = second.get();
  const std::string served_log = read_file(second_log);
  INFO(served.output << served_log);
  REQUIRE(served.exit_code == 0);
  CHECK(served_log.find("fulgur: ensemble: resuming the stopped run") != std::string::npos);
  CHECK(fulgur::RendezvousFile::read(rendezvous).endpoints.size() == 2);
  // Nothing lost in the stop: what the stopped job had not taken came again, and nothing counted twice.
  CHECK(served_log.find("fulgur: ensemble: 5 clients (2 without a goodbye): 3600 samples sent, ") !=
        std::string::npos);
  CHECK(served_log.find("rank 1: client 25 joined") != std::string::npos);
  CHECK(served_log.find("rank 0: client 25 joined") == std::string::npos);
  const std::string csv = read_file(dir / "run" / "ensemble_accounting.csv");
  INFO(csv);
  CHECK(csv.find("\n21,3000,3000,0,0,") != std::string::npos);
  CHECK(csv.find("\n22,400,400,0,0,") != std::string::npos);
  CHECK(csv.find("\n25,200,200,0,0,") != std::string::npos);  // one goodbye, from its one rank, is all
  // The killed clients: no goodbye, so what they sent is unknown; what arrived is counted, numbered up to their
  // 5 sends of 10.
  for (const int id : {23, 24}) {
    const size_t row = csv.find(fmt::format("\n{},,", id));
    REQUIRE(row != std::string::npos);
    long long received = -1, numbered = -1;
    REQUIRE(std::sscanf(csv.c_str() + row + 1, fmt::format("{},,%lld,0,0,%*d,%*d,%*d,no,%lld", id).c_str(),
                        &received, &numbered) == 2);
    CAPTURE(id);
    CHECK(received >= 1);  // it joined
    CHECK(received <= numbered);
    CHECK(numbered <= 50);
  }
  CHECK_FALSE(std::filesystem::exists(dir / "run" / "ensemble_state_rank0.txt"));  // the run is over
  CHECK(std::filesystem::exists(dir / "run" / "model.ckpt"));
}

TEST_CASE("a server stopped by SIGTERM and started again resumes the run: the same key and port, the client's "
          "queued and unacknowledged samples follow, the counts go on, none lost, none counted twice") {
  TempDir dir("ensemble-restart");
  const std::string yaml = (dir / "ensemble.yaml").string();
  std::ofstream(yaml) << resumable_config(dir.path(), 20000, 1);
  // The first server's log goes to a file the test watches: it is stopped once client 31 joined.
  const auto log = dir / "first.log";
  const std::string serve = "sh -c 'echo $$ > " + (dir / "pid").string() + "; exec " + std::string(FULGUR_BINARY_DIR) +
                            "/bin/fulgur_serve --config " + yaml + " 2> " + log.string() + "'";
  auto first = std::async(std::launch::async, [&] { return run_command(serve, 120); });
  const auto rendezvous = dir / "run" / "ensemble.rendezvous";
  // 10,000 samples, 10 per send, 5 ms apart: at least 5 s, so the stop below comes mid-stream.
  auto sender = client(rendezvous.string() + " 31 10000 10 paced 5");
  const auto joined = [&] {
    return std::filesystem::exists(log) && read_file(log).find("client 31 joined") != std::string::npos;
  };
  for (int i = 0; i < 1200 && !joined(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  REQUIRE(joined());
  const std::string key = read_file(rendezvous);
  REQUIRE(run_command("kill -TERM $(cat " + (dir / "pid").string() + ")").exit_code == 0);
  const auto stopped = first.get();
  const std::string stopped_log = read_file(log);
  INFO(stopped.output << stopped_log);
  REQUIRE(stopped.exit_code == 143);  // 128 + SIGTERM: the scheduler sees an unfinished run
  CHECK(stopped_log.find("fulgur: ensemble: stopped on SIGTERM") != std::string::npos);
  CHECK(std::filesystem::exists(dir / "run" / "ensemble_state_rank0.txt"));
  long long received_before = -1;
  {
    const std::string csv = read_file(dir / "run" / "ensemble_accounting.csv");
    const size_t row = csv.find("\n31,,");
    REQUIRE(row != std::string::npos);  // no goodbye yet
    REQUIRE(std::sscanf(csv.c_str() + row, "\n31,,%lld,", &received_before) == 1);
    CHECK(received_before > 0);
    CHECK(received_before < 10000);
  }

  const auto resumed = run_command(std::string(FULGUR_BINARY_DIR) + "/bin/fulgur_serve --config " + yaml, 120);
  const auto sent = sender.get();
  INFO(resumed.output << sent.output);
  REQUIRE(resumed.exit_code == 0);
  REQUIRE(sent.exit_code == 0);
  CHECK(resumed.output.find("fulgur: ensemble: resuming the stopped run") != std::string::npos);
  CHECK(read_file(rendezvous) == key);  // the clients' file stays valid
  CHECK(sent.output.find("client 31: sent 10000 dropped 0 queued 0") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir / "run" / "ensemble_state_rank0.txt"));  // the run is over
  const std::string csv = read_file(dir / "run" / "ensemble_accounting.csv");
  INFO(csv);
  long long total = -1, received = -1, refused = -1, lost = -1;
  REQUIRE(std::sscanf(csv.c_str() + csv.find("\n31,"), "\n31,%lld,%lld,%lld,%lld,", &total, &received, &refused,
                      &lost) == 4);
  MESSAGE("received " << received_before << " before the stop, " << received << " in all");
  CHECK(total == 10000);
  CHECK(received > received_before);  // the counts went on
  CHECK(refused == 0);
  CHECK(lost == 0);  // what the stopped server had not taken came again ...
  CHECK(received == 10000);  // ... and none was counted twice
}

TEST_CASE("2 server ranks end where 1 rank ends on the same samples: one client, one sample per message, FIFO "
          "streams") {
  // One client's messages go to the ranks in turn, so rank r holds samples r, r + 2, ...; with FIFO streams
  // (when_full: block) a 2-rank step of 16 + 16 samples is the 1-rank step of the same 32, whatever the timing.
  TempDir dir("ensemble-parity");
  auto yaml = [&](const std::string& name, int64_t batch, const std::string& trainer) {
    const auto path = dir / (name + ".yaml");
    std::ofstream(path) << fmt::format(
        "model: {{type: mlp, layers: [2, 16, 1], activation: tanh}}\n"
        "optimizer: {{type: sgd, lr: 0.1}}\n"
        "seed: 5\n"
        "online: {{publish_every_n_steps: 1, num_threads: 1}}\n"
        "stream: {{capacity: 1024, when_full: block, batch_size: {}}}\n"
        "trainer: {{accelerator: cpu, logger: false, enable_checkpointing: false{}}}\n"
        "ensemble: {{run_dir: {}, expected_clients: 1, min_steps: 20, host: 127.0.0.1, drain_s: 0}}\n",
        batch, trainer, (dir / name).string());
    return path.string();
  };
  const std::string serve = std::string(FULGUR_BINARY_DIR) + "/bin/fulgur_serve --config ";
  const std::string mpirun = "env -u MASTER_ADDR -u MASTER_PORT -u FULGUR_FILE_STORE mpirun --allow-run-as-root "
                             "--oversubscribe -np 2 ";
  for (const auto& name_command :
       {std::pair{std::string("one"), serve + yaml("one", 32, "")},
        std::pair{std::string("two"), mpirun + serve + yaml("two", 16, ", strategy: ddp, process_group_backend: mpi")}}) {
    const auto& name = name_command.first;  // not bound: clang 14 cannot capture a binding
    const auto& command = name_command.second;
    auto server = std::async(std::launch::async, [command = command] { return run_command(command, 180); });
    const auto sent = client((dir / name / "ensemble.rendezvous").string() + " 41 640 1").get();
    const auto served = server.get();
    INFO(name << ": " << served.output << sent.output);
    REQUIRE(sent.exit_code == 0);
    REQUIRE(served.exit_code == 0);
    CHECK(served.output.find("640 samples sent, 640 received, 0 refused, 0 lost, 640 trained at least once") !=
          std::string::npos);
    CHECK(served.output.find("fulgur_serve: 20 steps") != std::string::npos);
  }
  // Both checkpoints into one single-process trainer each: the weights agree.
  std::vector<std::vector<torch::Tensor>> weights;
  for (const std::string name : {"one", "two"}) {
    fulgur::EnsembleConfig config = fulgur::EnsembleConfig::from_yaml_file(dir / (name + ".yaml"));
    config.online.options.trainer.strategy(fulgur::StrategyKind::Auto)
        .devices(1)
        .process_group_backend(fulgur::ProcessGroupBackend::Auto);
    auto trainer = config.online.make_trainer();
    trainer->load_checkpoint(dir / name / "model.ckpt");
    CHECK(trainer->global_step() == 20);
    weights.push_back(trainer->module().parameters());
  }
  // ... and differ from the first weights (the same seed): the 20 steps moved them.
  fulgur::EnsembleConfig fresh = fulgur::EnsembleConfig::from_yaml_file(dir / "one.yaml");
  const auto untrained = fresh.online.make_trainer()->module().parameters();
  REQUIRE(weights[0].size() == weights[1].size());
  double moved = 0.0;
  for (size_t i = 0; i < weights[0].size(); ++i) {
    CAPTURE(i);
    CHECK(torch::allclose(weights[0][i], weights[1][i], 1e-5, 1e-6));
    moved = std::max(moved, (weights[0][i] - untrained[i]).abs().max().item<double>());
  }
  CHECK(moved > 1e-3);
}

}  // namespace ensemble_test
