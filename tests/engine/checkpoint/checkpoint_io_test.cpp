#include "support/file_size_limit.hpp"
#include "support/test_support.hpp"

#include <fulgur/engine/checkpoint/checkpoint_error.hpp>
#include <fulgur/engine/checkpoint/checkpoint_io.hpp>
#include <fulgur/version.hpp>

#include <torch/torch.h>

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <chrono>
#include <fstream>
#include <random>
#include <thread>

namespace checkpoint_io_test {

using namespace fulgur;
using fulgur::testing::read_file;
using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {

Checkpoint sample_checkpoint() {
  Checkpoint c = new_state_dict();
  c.insert(CheckpointIO::kVersionKey, std::string("0.1.0"));
  c.insert("epoch", int64_t{3});
  c.insert("loss", 0.25);
  c.insert("flag", true);
  c.insert("nothing", c10::IValue());
  auto nested = new_state_dict();
  nested.insert("weight", torch::arange(6, torch::kFloat32).reshape({2, 3}));
  nested.insert("count", int64_t{7});
  c.insert("nested", nested);
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(int64_t{1});
  list.push_back(std::string("two"));
  list.push_back(c10::ivalue::Tuple::create({0.9, 0.999}));
  c.insert("list", list);
  return c;
}

void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

std::vector<std::string> directory_names(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE("CheckpointIO: a saved checkpoint loads back in C++ and in Python with weights_only") {
  TempDir dir("ckpt-io");
  const auto path = dir / "a.ckpt";
  CheckpointIO::save(sample_checkpoint(), path);
  CHECK(directory_names(dir.path()) == std::vector<std::string>{"a.ckpt"});

  const Checkpoint back = CheckpointIO::load(path);
  CHECK(back.at("epoch").toInt() == 3);
  CHECK(back.at("loss").toDouble() == 0.25);
  CHECK(back.at("flag").toBool());
  CHECK(back.at("nothing").isNone());
  const auto nested = back.at("nested").toGenericDict();
  CHECK(torch::equal(nested.at("weight").toTensor(), torch::arange(6, torch::kFloat32).reshape({2, 3})));
  CHECK(back.at("list").toList().get(1).toStringRef() == "two");

  const std::string script = fmt::format(
      "import torch\n"
      "c = torch.load('{}', weights_only=True)\n"
      "assert c['fulgur_version'] == '{}', c\n"
      "assert c['epoch'] == 3 and c['loss'] == 0.25 and c['flag'] is True and c['nothing'] is None\n"
      "assert torch.equal(c['nested']['weight'], torch.arange(6.).reshape(2, 3))\n"
      "assert c['nested']['count'] == 7\n"
      "assert c['list'][0] == 1 and c['list'][1] == 'two' and tuple(c['list'][2]) == (0.9, 0.999), c['list']\n"
      "print('python-ok')\n",
      path.string(), fulgur::kVersion);
  write_bytes(dir / "check.py", script);
  const auto result = run_command(std::string(FULGUR_PYTHON) + " " + (dir / "check.py").string(), 120);
  INFO(result.output);
  CHECK(result.exit_code == 0);
  CHECK(result.output.find("python-ok") != std::string::npos);
}

TEST_CASE("CheckpointIO: truncated, bit-flipped and foreign files give one error naming the path") {
  TempDir dir("ckpt-corrupt");
  const auto good = dir / "good.ckpt";
  CheckpointIO::save(sample_checkpoint(), good);
  const std::string bytes = read_file(good);

  auto expect_error = [&](const std::string& name, const std::string& content, const std::string& detail) {
    const auto path = dir / name;
    write_bytes(path, content);
    std::string message;
    try {
      CheckpointIO::load(path);
    } catch (const CheckpointError& e) {
      message = e.what();
    }
    INFO(name << ": " << message);
    CHECK(message.rfind("[CheckpointIO::load] " + path.string() + " is not a valid checkpoint", 0) == 0);
    CHECK(message.find(detail) != std::string::npos);
  };
  SUBCASE("truncated") {
    for (size_t keep : {size_t{0}, size_t{10}, bytes.size() / 2, bytes.size() - 1}) {
      expect_error("truncated.ckpt", bytes.substr(0, keep), "");
    }
  }
  SUBCASE("a flipped bit in tensor data fails the CRC check") {
    // The float tensor 0..5 is stored as raw little-endian floats; flip a bit of the value 5.0f.
    const float five = 5.0f;
    const std::string needle(reinterpret_cast<const char*>(&five), sizeof five);
    const size_t at = bytes.find(needle);
    REQUIRE(at != std::string::npos);
    std::string flipped = bytes;
    flipped[at + 2] = static_cast<char>(flipped[at + 2] ^ 0x10);
    expect_error("flipped.ckpt", flipped, "CRC-32");
  }
  SUBCASE("a zip64 end record pointing outside the file (found by the fuzzer) is an error") {
    // LibTorch's zip reader trusts the zip64 record whenever its locator is
    // there; a central-directory offset past the end made it read out of bounds.
    const size_t record = bytes.rfind(std::string("PK\x06\x06", 4));
    REQUIRE(record != std::string::npos);
    std::string damaged = bytes;
    for (size_t i = 0; i < 8; ++i) damaged[record + 48 + i] = static_cast<char>(0xF0);
    expect_error("zip64.ckpt", damaged, "zip64 end record disagrees");
  }
  SUBCASE("every single-byte flip is an error or loads the same values, never a crash") {
    for (size_t at = 0; at < bytes.size(); at += 7) {
      std::string flipped = bytes;
      flipped[at] = static_cast<char>(flipped[at] ^ 0x5a);
      try {
        const Checkpoint c = CheckpointIO::load_from_bytes(flipped, "flip");
        CHECK(c.at("epoch").toInt() == 3);  // the flip hit padding or an unused header field
      } catch (const CheckpointError& e) {
        CHECK(std::string(e.what()).find("flip") != std::string::npos);
      }
    }
  }
  SUBCASE("foreign files") {
    expect_error("text.ckpt", "hello, this is not a checkpoint\n", "not a zip archive");
    // A real torch.save archive that fulgur did not write.
    torch::Tensor t = torch::ones({3});
    torch::save(t, (dir / "tensor.pt").string());
    expect_error("tensor.pt", read_file(dir / "tensor.pt"), "");
  }
  CHECK_THROWS_WITH_AS(CheckpointIO::load(dir / "missing.ckpt"),
                       doctest::Contains(("cannot read checkpoint " + (dir / "missing.ckpt").string()).c_str()),
                       CheckpointError);
}

TEST_CASE("CheckpointIO: a write error names the path and keeps the previous checkpoint") {
  TempDir dir("ckpt-write-error");
  const auto path = dir / "last.ckpt";
  CheckpointIO::save(sample_checkpoint(), path);
  const std::string before = read_file(path);

  Checkpoint big = sample_checkpoint();
  big.insert("big", torch::zeros({1 << 20}));  // 4 MiB
  // Writes past 64 KiB fail with EFBIG, like a full disk.
  std::string message;
  {
    fulgur::testing::FileSizeLimit limit(64 * 1024);
    try {
      CheckpointIO::save(big, path);
    } catch (const CheckpointError& e) {
      message = e.what();
    }
  }
  INFO(message);
  CHECK(message.rfind("[CheckpointIO::save] cannot write checkpoint " + path.string(), 0) == 0);
  CHECK(message.find("too large") != std::string::npos);
  CHECK(read_file(path) == before);
  CHECK(directory_names(dir.path()) == std::vector<std::string>{"last.ckpt"});

  // A parent that is a file cannot hold a checkpoint.
  write_bytes(dir / "plain-file", "x");
  CHECK_THROWS_WITH_AS(CheckpointIO::save(sample_checkpoint(), dir / "plain-file" / "x.ckpt"),
                       doctest::Contains((dir / "plain-file" / "x.ckpt").string().c_str()), CheckpointError);
}

TEST_CASE("CheckpointIO: SIGKILL at random moments during repeated saves leaves a loadable checkpoint") {
  // The synchronous writer, and AsyncCheckpointIO's background one.
  for (const std::string mode : {"save-loop", "async-save-loop"}) {
    CAPTURE(mode);
    TempDir dir("ckpt-kill-" + mode);
    const auto path = dir / "last.ckpt";
    Checkpoint first = sample_checkpoint();
    first.insert("counter", int64_t{-1});
    CheckpointIO::save(first, path);
    const std::string probe = std::string(FULGUR_BINARY_DIR) + "/bin/checkpoint_probe";
    std::mt19937 random(12345);
    int64_t previous = -1;
    for (int round = 0; round < 8; ++round) {
      const pid_t child = ::fork();
      REQUIRE(child >= 0);
      if (child == 0) {
        const int null = ::open("/dev/null", O_WRONLY);
        ::dup2(null, STDOUT_FILENO);
        ::execl(probe.c_str(), probe.c_str(), mode.c_str(), dir.path().c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
      }
      // Wait (reading concurrently, which must always work) until the probe
      // has saved at least once, then kill it at a random moment of its next saves.
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (CheckpointIO::load(path).at("counter").toInt() < 0 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(random() % 200));
      REQUIRE(::kill(child, SIGKILL) == 0);
      int status = 0;
      ::waitpid(child, &status, 0);
      REQUIRE(WIFSIGNALED(status));
      const Checkpoint c = CheckpointIO::load(path);  // must not throw
      const int64_t counter = c.at("counter").toInt();
      if (c.contains("values")) {
        CHECK(torch::equal(c.at("values").toTensor(), torch::full({256 * 1024}, static_cast<float>(counter))));
      }
      previous = std::max(previous, counter);
      CheckpointIO::save(first, path);  // counter -1 again for the next round
    }
    CHECK(previous >= 0);  // the probe did save before being killed
    // A killed writer may leave a temp file; the next successful save removes it.
    CheckpointIO::save(first, path);
    CHECK(directory_names(dir.path()) == std::vector<std::string>{"last.ckpt"});
  }
}

}  // namespace checkpoint_io_test
