#pragma once

#include "test_paths.hpp"

#include <filesystem>
#include <functional>
#include <string>

namespace fulgur::testing {

/// A fresh, empty directory under the build tree, removed when destroyed.
class TempDir {
 public:
  explicit TempDir(const std::string& name);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& child) const { return path_ / child; }

 private:
  std::filesystem::path path_;
};

/// Removes the TempDirs this process made that are still there (a static
/// one, shared by a file's cases): for a program that ends without its
/// static destructors.
void remove_temp_dirs_of_this_process();

/// Result of running a command through the shell.
struct CommandResult {
  int exit_code;
  std::string output;  // stdout and stderr together
};

/// Runs `command` with /bin/sh, capturing its output, under a wall-clock
/// bound (`timeout_s`, enforced with coreutils' timeout) so a hang fails.
CommandResult run_command(const std::string& command, int timeout_s = 300);

/// The message of the exception `action` throws, or "<no exception>".
std::string error_of(const std::function<void()>& action);

/// Reads a whole file into a string; throws if it cannot be opened.
std::string read_file(const std::filesystem::path& path);

/// The one checkpoint file (not last.ckpt) a run wrote anywhere under
/// `folder`; throws naming the folder and what it found otherwise.
std::filesystem::path only_checkpoint(const std::filesystem::path& folder);

/// The last.ckpt a run wrote anywhere under `folder`; throws if there is none.
std::filesystem::path last_checkpoint(const std::filesystem::path& folder);

/// The step after which each of ranks 0..`ranks`-1 said it stops on
/// `signal` ("SIGTERM"), read from a run's output; throws naming a rank
/// that said nothing or stopped after another step than rank 0.
int64_t stop_step(const std::string& output, const std::string& signal, int64_t ranks);

/// Copies the checkpoint `file` and the shard files named after it (a
/// sharded checkpoint's parts) into `folder`; returns the copy of `file`.
std::filesystem::path copy_checkpoint(const std::filesystem::path& file, const std::filesystem::path& folder);

/// The part files (".shard-") beside the sharded checkpoint `file`.
int64_t checkpoint_parts(const std::filesystem::path& file);

/// Joins the sharded checkpoint `sharded` (its parts beside it) with
/// fulgur_consolidate into a file beside it, then compares that with the
/// whole checkpoint `whole` in Python (tests/support/same_checkpoints.py:
/// weights and optimizer states bit for bit). Returns "" when they are the
/// same, else what the tool or the comparison printed.
std::string joined_differs(const std::filesystem::path& sharded, const std::filesystem::path& whole);

/// The last non-empty value of `column` in a metrics.csv text; -1 if none.
double last_csv_value(const std::string& csv, const std::string& column);

/// Whether a TCP socket can bind `port` on 127.0.0.1 now (nothing holds it).
bool can_bind(int port);

/// A TCP port on 127.0.0.1 that nothing listens on, for a launcher the test
/// starts (torchrun, mpirun, ranks started by hand) to bind seconds later.
/// Drawn at random below the kernel's ephemeral range
/// (/proc/sys/net/ipv4/ip_local_port_range): a port from bind(0), as
/// fulgur::pick_free_port gives, is one the kernel may hand to any other
/// test's outgoing connection meanwhile (a torchrun case failed so, with
/// EADDRINUSE, beside two other tests).
int free_port();

}  // namespace fulgur::testing
