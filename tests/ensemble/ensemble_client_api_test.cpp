// The client API's edges, with the C solver (ensemble_client_probe) against
// real sockets: a close that no server acknowledges says so, a closed handle
// answers FULGUR_CLIENT_CLOSED and a destroyed one FULGUR_CLIENT_INVALID_HANDLE
// (never a crash), and a server of another protocol version stops the
// client with one error instead of leaving it waiting.
#include "ensemble/ensemble_support.hpp"

#include <fulgur/ensemble/rendezvous_file.hpp>
#include <fulgur/ensemble/wire_header.hpp>

#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zmq.h>

#include <atomic>
#include <thread>
#include <vector>

namespace ensemble_client_api_test {

using ensemble_support::kProbe;
using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {

// A rendezvous file naming `endpoint` as the one server rank.
std::string rendezvous_for(const std::filesystem::path& dir, const std::string& endpoint) {
  fulgur::RendezvousFile file;
  file.key = fulgur::RendezvousFile::new_key();
  file.endpoints = {endpoint};
  const auto path = dir / "ensemble.rendezvous";
  file.write(path);
  return path.string();
}

}  // namespace

TEST_CASE("a close that no server acknowledges returns FULGUR_CLIENT_UNACKNOWLEDGED with its counts; the closed "
          "handle answers FULGUR_CLIENT_CLOSED, the destroyed one FULGUR_CLIENT_INVALID_HANDLE, and nothing crashes") {
  TempDir dir("ensemble-unacknowledged");
  // A port this test holds but never listens on: every connection to it is refused, and nobody else can take it.
  const int held = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(held >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  REQUIRE(::bind(held, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  REQUIRE(::getsockname(held, reinterpret_cast<sockaddr*>(&address), &size) == 0);
  const std::string rendezvous = rendezvous_for(dir.path(), fmt::format("tcp://127.0.0.1:{}", ntohs(address.sin_port)));
  const auto result = run_command(kProbe + " " + rendezvous + " 51 20 10 close_timeout 1", 60);
  ::close(held);
  INFO(result.output);
  CHECK(result.exit_code == 5);  // FULGUR_CLIENT_UNACKNOWLEDGED, never OK
  CHECK(result.output.find("close (status 5): fulgur_client_close: client 51: close_timeout_s passed with 20 "
                           "sample(s) never sent and 1 of 1 server rank(s) not acknowledging") != std::string::npos);
  CHECK(result.output.find("client 51: sent 0 dropped 0 queued 20") != std::string::npos);
  // After close: a send and a second close answer FULGUR_CLIENT_CLOSED and write no output; after destroy,
  // FULGUR_CLIENT_INVALID_HANDLE; a second destroy is harmless.
  CHECK(result.output.find("edges: ok") != std::string::npos);
}

TEST_CASE("a server of another protocol version: the client stops with one error naming both versions") {
  TempDir dir("ensemble-version");
  // A server rank of version 99, in raw ZeroMQ: it answers every message with a header of its own version.
  void* context = zmq_ctx_new();
  void* router = zmq_socket(context, ZMQ_ROUTER);
  REQUIRE(zmq_bind(router, "tcp://127.0.0.1:*") == 0);
  char endpoint[256] = {};
  size_t endpoint_size = sizeof endpoint;
  REQUIRE(zmq_getsockopt(router, ZMQ_LAST_ENDPOINT, endpoint, &endpoint_size) == 0);
  const std::string rendezvous = rendezvous_for(dir.path(), endpoint);
  std::atomic<bool> done{false};
  std::atomic<int> answered{0};
  std::thread server([&] {
    fulgur::WireHeader ack;
    ack.kind = fulgur::WireHeader::Kind::Ack;
    std::string frame = ack.encode();
    frame[4] = 99;  // the version, little-endian
    frame[5] = 0;
    while (!done) {
      zmq_pollitem_t item{router, 0, ZMQ_POLLIN, 0};
      if (zmq_poll(&item, 1, 50) <= 0) continue;
      std::vector<std::string> parts;
      int more = 1;
      while (more != 0) {
        zmq_msg_t part;
        zmq_msg_init(&part);
        zmq_msg_recv(&part, router, 0);
        parts.emplace_back(static_cast<const char*>(zmq_msg_data(&part)), zmq_msg_size(&part));
        more = zmq_msg_more(&part);
        zmq_msg_close(&part);
      }
      zmq_send(router, parts[0].data(), parts[0].size(), ZMQ_SNDMORE);
      zmq_send(router, frame.data(), frame.size(), 0);
      ++answered;
    }
  });
  // 40 sends 20 ms apart (at least 0.8 s): the answer comes while it sends, or before its close.
  const auto result = run_command(kProbe + " " + rendezvous + " 52 400 10 paced 20", 20);
  done = true;
  server.join();
  const int linger = 0;
  zmq_setsockopt(router, ZMQ_LINGER, &linger, sizeof linger);
  zmq_close(router);
  zmq_ctx_term(context);
  INFO(result.output);
  CHECK(answered >= 1);
  CHECK(result.exit_code == 1);  // stopped at once, not after close_timeout_s (30 s: past the bound above)
  CHECK(result.output.find("(status 7): ") != std::string::npos);  // FULGUR_CLIENT_VERSION_ERROR
  CHECK(result.output.find("client 52: the server speaks protocol version 99 and this client version 3: use the "
                           "client library of the server's fulgur release") != std::string::npos);
}

}  // namespace ensemble_client_api_test
