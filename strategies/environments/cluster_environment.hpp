#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace fulgur {

/// Reads one environment variable; nullopt when it is not set. Environments
/// take this instead of calling ::getenv so tests can feed them a std::map
/// and never touch the real process environment.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

/// The lookup of the real process environment (::getenv).
EnvLookup process_environment();

/// "Who am I" in a distributed job: how many processes there are, which one
/// this is (globally, on its node, and which node), where rank 0 listens
/// for the rendezvous, and whether something outside fulgur (torchrun,
/// srun, mpirun) started the processes. One subclass per launcher reads that
/// launcher's variables once, at construction, and rejects missing,
/// malformed or inconsistent values there, so a bad launch fails before any
/// process group is created. Instances are immutable afterwards.
class ClusterEnvironment {
 public:
  virtual ~ClusterEnvironment() = default;

  /// Short launcher name: "torchrun", "slurm", "mpi" or "local".
  virtual std::string name() const = 0;
  /// True when the launcher already started every process; false means
  /// fulgur's Launcher has to start the other ranks itself.
  virtual bool creates_processes_externally() const = 0;

  int64_t world_size() const { return world_size_; }
  int64_t global_rank() const { return global_rank_; }
  int64_t local_rank() const { return local_rank_; }
  int64_t node_rank() const { return node_rank_; }
  int64_t num_nodes() const { return num_nodes_; }
  int64_t local_world_size() const { return local_world_size_; }

  /// Host of the rendezvous store (rank 0's node).
  const std::string& main_address() const { return main_address_; }
  /// Port of the rendezvous store; 0 means "not chosen yet".
  int main_port() const { return main_port_; }

  /// The variables the world size came from, for error messages that must
  /// tell the user which knob to turn, e.g. "WORLD_SIZE=4" or
  /// "SLURM_NTASKS=4 (SLURM_NNODES=2, SLURM_NTASKS_PER_NODE=2)".
  virtual std::string world_size_source() const = 0;

  /// Path of a shared file for a FileStore rendezvous instead of TCP; nullopt
  /// when the rendezvous is main_address():main_port().
  virtual std::optional<std::string> file_store_path() const { return std::nullopt; }

  /// Why there is no rendezvous (no address, port or file store was given),
  /// for a backend that needs one; MPI's launcher needs none.
  virtual std::optional<std::string> rendezvous_error() const { return std::nullopt; }
  /// The program's MPI communicator (its Fortran handle) whose ranks these
  /// are, for process_group_backend mpi; nullopt: the launcher's world.
  virtual std::optional<int64_t> mpi_communicator() const { return std::nullopt; }

  /// Set when a store already serves on main_address():main_port() for
  /// these ranks (torchrun's agent store, fulgur's launchers): the key
  /// prefix their groups use in it. nullopt: rank 0 serves the store.
  const std::optional<std::string>& hosted_store_prefix() const { return hosted_store_prefix_; }

  /// One line for logs: "slurm: rank 3/8 (local 1/2, node 1/4), main node01:15123".
  std::string summary() const;

 protected:
  // What every environment reads; each constructor fills these in.
  int64_t world_size_ = 1;
  int64_t global_rank_ = 0;
  int64_t local_rank_ = 0;
  int64_t node_rank_ = 0;
  int64_t num_nodes_ = 1;
  int64_t local_world_size_ = 1;
  std::string main_address_ = "127.0.0.1";
  int main_port_ = 0;
  std::optional<std::string> hosted_store_prefix_;

  ClusterEnvironment() = default;
  ClusterEnvironment(const ClusterEnvironment&) = default;
  ClusterEnvironment& operator=(const ClusterEnvironment&) = default;

  // Shared parsing so that every environment reports a bad variable in the
  // same words. `where` is the "[Class::method]" prefix of the message.

  /// Throws when `env` is an empty std::function (calling it would throw a
  /// bad_function_call that names nothing).
  static void require_lookup(const EnvLookup& env, const std::string& where);
  /// Whole-string base-10 integer; "4 ", "0x4", "" and overflow are rejected.
  static int64_t parse_int(const std::string& where, const std::string& var, const std::string& text);
  static int64_t require_int(const EnvLookup& env, const std::string& where, const std::string& var);
  static std::optional<int64_t> optional_int(const EnvLookup& env, const std::string& where, const std::string& var);
  /// Rejects value < 1 (a size or a count).
  static void check_positive(const std::string& where, const std::string& var, int64_t value);
  /// Rejects value outside [0, bound); `bound_text` says where the bound came
  /// from, e.g. "WORLD_SIZE=4".
  static void check_index(const std::string& where, const std::string& var, int64_t value, int64_t bound,
                          const std::string& bound_text);
  /// A TCP port; 0 is accepted only when `allow_zero` (meaning "pick later").
  static int parse_port(const std::string& where, const std::string& var, const std::string& text, bool allow_zero);
  /// A host name or address; rejects the empty string.
  static std::string require_nonempty(const std::string& where, const std::string& var, const std::string& text);
};

}  // namespace fulgur
