// The bytes on the wire and on disk: the header's numbers little-endian
// whatever the host, a frame of another protocol version recognised by its
// first bytes, and the state file a stopped server keeps (atomic, versioned,
// checksummed) refused with one line naming it when damaged.
#include "ensemble/ensemble_support.hpp"

#include <fulgur/ensemble/ensemble_state_file.hpp>
#include <fulgur/ensemble/rendezvous_file.hpp>
#include <fulgur/ensemble/wire_header.hpp>

#include <doctest/doctest.h>

#include <algorithm>

namespace ensemble_wire_test {

using fulgur::EnsembleStateFile;
using fulgur::WireHeader;
using fulgur::testing::error_of;
using fulgur::testing::read_file;
using fulgur::testing::run_command;
using fulgur::testing::TempDir;

TEST_CASE("the header's numbers are little-endian on the wire; another protocol version is known by the first "
          "6 bytes") {
  WireHeader h;
  h.kind = WireHeader::Kind::Goodbye;
  h.client_id = 0x0102030405060708ull;
  h.sequence = 0x1112131415161718ull;
  h.count = 0x21222324u;
  h.message = 0x3132333435363738ull;
  h.flags = WireHeader::kAnswerNow;
  h.input_shape = {0x0a0b};
  h.target_shape = {1};
  const std::string frame = h.encode();
  REQUIRE(frame.size() == WireHeader::kFixedBytes + 16);
  const auto byte = [&](size_t at) { return static_cast<unsigned>(static_cast<unsigned char>(frame[at])); };
  CHECK(frame.substr(0, 4) == "FLG1");
  CHECK((byte(4) == 3 && byte(5) == 0));  // version 3
  CHECK((byte(6) == 2 && byte(7) == 0));  // a goodbye
  for (size_t i = 0; i < 8; ++i) {
    CAPTURE(i);
    CHECK(byte(24 + i) == 8 - i);         // client id, lowest byte first
    CHECK(byte(32 + i) == 0x18 - i);      // sequence
    CHECK(byte(48 + i) == 0x38 - i);      // message
  }
  CHECK(byte(43) == 1);                            // flags: answer now
  CHECK((byte(44) == 0x24 && byte(47) == 0x21));  // count
  CHECK((byte(56) == 0x0b && byte(57) == 0x0a && byte(58) == 0));  // the first extent
  const WireHeader back = WireHeader::decode(frame.data(), frame.size());
  CHECK(back.client_id == h.client_id);
  CHECK(back.sequence == h.sequence);
  CHECK(back.message == h.message);
  CHECK(back.flags == WireHeader::kAnswerNow);
  CHECK(back.input_shape == h.input_shape);

  CHECK(WireHeader::foreign_version(frame.data(), frame.size()) == 0);
  std::string old = frame;
  old[4] = 2;
  CHECK(WireHeader::foreign_version(old.data(), old.size()) == 2);
  CHECK(WireHeader::foreign_version("hello", 5) == 0);  // not ours at all: malformed, not another version
  CHECK(error_of([&] { WireHeader::decode(old.data(), old.size()); }) == "protocol version 2 (this server: 3)");
}

TEST_CASE("the state file: written atomically with its version and a checksum; read back exactly; damaged, cut "
          "short or of another version it is refused with one line naming it") {
  TempDir dir("ensemble-state");
  EnsembleStateFile state;
  state.accounts[7] = fulgur::EnsembleAccount{.sent = -1, .received = 90, .refused = 2, .trained = 40,
                                              .evicted_untrained = 1, .numbered = 100, .ranks = 2};
  state.accounts[8] = fulgur::EnsembleAccount{.sent = 50, .received = 50};
  state.refusals["nonfinite"] = 1;
  state.held[7] = fulgur::HeldMessages{9, {11, 12}};
  const auto path = dir / "ensemble_state_rank0.txt";
  state.write(path);
  CHECK_FALSE(std::filesystem::exists(dir / "ensemble_state_rank0.txt.tmp"));
  const std::string text = read_file(path);
  CHECK(text.rfind("# fulgur ensemble state 1\n", 0) == 0);
  CHECK(text.find("\ncrc32 ") != std::string::npos);

  const EnsembleStateFile back = EnsembleStateFile::read(path);
  CHECK(back.table() == state.table());
  CHECK(back.accounts.at(7).numbered == 100);
  CHECK(back.held.at(7).below == 9);
  CHECK(back.held.at(7).holds(12));
  CHECK_FALSE(back.held.at(7).holds(10));

  const auto refused = [&](const std::string& damaged) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << damaged;
    return error_of([&] { EnsembleStateFile::read(path); });
  };
  std::string edited = text;
  edited[edited.find("a 7 -1 90") + 7] = '8';  // 90 received becomes 80
  const std::string prefix = "[EnsembleStateFile::read] " + path.string() + ": ";
  const std::string afresh = "; remove the ensemble_state_rank*.txt files to start the run afresh";
  CHECK(refused(edited) == prefix + "its checksum does not match its contents (a damaged or edited file)" + afresh);
  CHECK(refused(text.substr(0, text.size() / 2)) == prefix + "no checksum line at its end (a file cut short?)" + afresh);
  std::string other = text;
  other.replace(other.find("state 1"), 7, "state 9");
  CHECK(refused(other) == prefix + "version '9' of the format; this server reads version 1" + afresh);
  CHECK(refused("a 1 2 3\n") == prefix + "not a fulgur ensemble state file (no '# fulgur ensemble state N' line "
                                         "first)" + afresh);
  CHECK(error_of([&] { EnsembleStateFile::read(dir / "none.txt"); }) ==
        "[EnsembleStateFile::read] cannot open " + (dir / "none.txt").string());
  CHECK(error_of([&] { EnsembleStateFile::parse("a 1 2\n", "rank 1's counts"); }) ==
        "[EnsembleStateFile::parse] rank 1's counts: line 1 is not an 'a', 'r' or 'd' line of this format ('a 1 2')");

  // A state file it cannot write: one line naming the file, nothing left behind.
  CHECK(error_of([&] { state.write(dir / "no-such-folder" / "state.txt"); })
            .rfind("[EnsembleStateFile::write] cannot create " + (dir / "no-such-folder" / "state.txt.tmp").string(),
                   0) == 0);
}

TEST_CASE("fulgur_serve refuses a damaged state file of a stopped run with one line naming it (exit 1)") {
  TempDir dir("ensemble-bad-state");
  const auto yaml = ensemble_support::serve_config(dir.path(), 1, 0);
  std::filesystem::create_directories(dir / "run");
  fulgur::RendezvousFile rendezvous;
  rendezvous.key = fulgur::RendezvousFile::new_key();
  rendezvous.endpoints = {"tcp://127.0.0.1:1"};
  rendezvous.write(dir / "run" / "ensemble.rendezvous");
  EnsembleStateFile state;
  state.accounts[3] = fulgur::EnsembleAccount{.sent = -1, .received = 10};
  const auto path = dir / "run" / "ensemble_state_rank0.txt";
  state.write(path);
  std::string text = read_file(path);
  text[text.find("a 3 -1 10") + 8] = '2';
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  const auto served = run_command(ensemble_support::kServe + " --config " + yaml.string(), 60);
  INFO(served.output);
  CHECK(served.exit_code == 1);
  CHECK(served.output.find("fulgur_serve: [EnsembleStateFile::read] " + path.string() +
                           ": its checksum does not match its contents") != std::string::npos);
  CHECK(std::count(served.output.begin(), served.output.end(), '\n') == 1);
}

}  // namespace ensemble_wire_test
