#include <fulgur/strategies/environments/cluster_environment.hpp>
#include <fulgur/strategies/environments/detect_cluster_environment.hpp>
#include <fulgur/strategies/environments/local_environment.hpp>
#include <fulgur/strategies/environments/mpi_environment.hpp>
#include <fulgur/strategies/environments/slurm_environment.hpp>
#include <fulgur/strategies/environments/torchrun_environment.hpp>

#include <doctest/doctest.h>

#include <map>
#include <optional>
#include <stdexcept>
#include <string>

namespace cluster_environment_test {

using namespace fulgur;

namespace {

using Vars = std::map<std::string, std::string>;

/// An environment made of exactly `vars`; the real one is never read or changed.
EnvLookup fake_env(Vars vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

Vars with(Vars vars, const Vars& changes) {
  for (const auto& [name, value] : changes) vars[name] = value;
  return vars;
}

Vars without(Vars vars, const std::string& name) {
  vars.erase(name);
  return vars;
}

// Rank 3 of 8: 4 nodes x 2 processes, this one is local rank 1 on node 1.
const Vars kTorchrun{{"RANK", "3"},       {"WORLD_SIZE", "8"},       {"LOCAL_RANK", "1"},
                     {"LOCAL_WORLD_SIZE", "2"}, {"GROUP_RANK", "1"}, {"GROUP_WORLD_SIZE", "4"},
                     {"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29500"}};

// Task 5 of 8 under srun: 4 nodes x 2 tasks, local id 1 on node 2.
const Vars kSlurm{{"SLURM_PROCID", "5"},         {"SLURM_NTASKS", "8"},
                  {"SLURM_LOCALID", "1"},        {"SLURM_NODEID", "2"},
                  {"SLURM_NNODES", "4"},         {"SLURM_NTASKS_PER_NODE", "2"},
                  {"SLURM_JOB_ID", "123456"},    {"SLURM_NODELIST", "jwb[0001-0004]"},
                  {"SLURM_JOB_NAME", "train"},   {"SLURM_STEP_ID", "0"}};

// Rank 5 of 8 under OpenMPI's mpirun with a TCP rendezvous.
const Vars kOpenMPI{{"OMPI_COMM_WORLD_RANK", "5"},       {"OMPI_COMM_WORLD_SIZE", "8"},
                    {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                    {"MASTER_ADDR", "node01"},           {"MASTER_PORT", "29400"}};

const std::string kTorchrunWhere = "[TorchrunEnvironment::TorchrunEnvironment] ";
const std::string kSlurmWhere = "[SlurmEnvironment::SlurmEnvironment] ";
const std::string kMpiWhere = "[MPIEnvironment::MPIEnvironment] ";

// The full message is built first: doctest may keep the pointer it is given.
void check_torchrun_error(const Vars& vars, const std::string& message) {
  const std::string expected = kTorchrunWhere + message;
  CHECK_THROWS_WITH_AS(TorchrunEnvironment(fake_env(vars)), expected.c_str(), std::invalid_argument);
}
void check_slurm_error(const Vars& vars, const std::string& message) {
  const std::string expected = kSlurmWhere + message;
  CHECK_THROWS_WITH_AS(SlurmEnvironment(fake_env(vars)), expected.c_str(), std::invalid_argument);
}
void check_mpi_error(const Vars& vars, const std::string& message) {
  const std::string expected = kMpiWhere + message;
  CHECK_THROWS_WITH_AS(MPIEnvironment(fake_env(vars)), expected.c_str(), std::invalid_argument);
}

}  // namespace

// --- process environment --------------------------------------------------------

TEST_CASE("cluster environment: process_environment reads the real environment without changing it") {
  const EnvLookup env = process_environment();
  CHECK(env("PATH").has_value());
  CHECK_FALSE(env("FULGUR_TEST_VARIABLE_THAT_IS_NEVER_SET_4711").has_value());
}

// --- local ------------------------------------------------------------------------

TEST_CASE("cluster environment: local is one process on one node") {
  LocalEnvironment local(fake_env({}));
  CHECK(local.name() == "local");
  CHECK_FALSE(local.creates_processes_externally());
  CHECK(local.world_size() == 1);
  CHECK(local.global_rank() == 0);
  CHECK(local.local_rank() == 0);
  CHECK(local.node_rank() == 0);
  CHECK(local.num_nodes() == 1);
  CHECK(local.local_world_size() == 1);
  CHECK(local.main_address() == "127.0.0.1");
  CHECK(local.main_port() == 0);
  CHECK_FALSE(local.file_store_path().has_value());
  CHECK(local.world_size_source() == "a single local process (no torchrun, SLURM or MPI variables found)");
  CHECK(local.summary() == "local: rank 0/1 (local 0/1, node 0/1), main 127.0.0.1:0");
}

TEST_CASE("cluster environment: local takes MASTER_PORT, where 0 means pick one later") {
  CHECK(LocalEnvironment(fake_env({{"MASTER_PORT", "12345"}})).main_port() == 12345);
  CHECK(LocalEnvironment(fake_env({{"MASTER_PORT", "0"}})).main_port() == 0);
  CHECK_THROWS_WITH_AS(LocalEnvironment(fake_env({{"MASTER_PORT", "abc"}})),
                       "[LocalEnvironment::LocalEnvironment] MASTER_PORT='abc' is not an integer",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(LocalEnvironment(fake_env({{"MASTER_PORT", "-1"}})),
                       "[LocalEnvironment::LocalEnvironment] MASTER_PORT='-1' is not a TCP port: expected 0..65535",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(LocalEnvironment(EnvLookup{}),
                       "[LocalEnvironment::LocalEnvironment] the environment lookup is empty (pass "
                       "process_environment())",
                       std::invalid_argument);
}

// --- torchrun -------------------------------------------------------------------

TEST_CASE("cluster environment: torchrun reads every variable") {
  TorchrunEnvironment env(fake_env(kTorchrun));
  CHECK(env.name() == "torchrun");
  CHECK(env.creates_processes_externally());
  CHECK(env.world_size() == 8);
  CHECK(env.global_rank() == 3);
  CHECK(env.local_rank() == 1);
  CHECK(env.local_world_size() == 2);
  CHECK(env.node_rank() == 1);
  CHECK(env.num_nodes() == 4);
  CHECK(env.main_address() == "10.0.0.1");
  CHECK(env.main_port() == 29500);
  CHECK(env.world_size_source() == "WORLD_SIZE=8");
  CHECK_FALSE(env.file_store_path().has_value());
  CHECK(env.summary() == "torchrun: rank 3/8 (local 1/2, node 1/4), main 10.0.0.1:29500");
}

TEST_CASE("cluster environment: torchrun derives node rank and count and defaults the address") {
  Vars vars = without(without(without(kTorchrun, "GROUP_RANK"), "GROUP_WORLD_SIZE"), "MASTER_ADDR");
  vars = with(vars, {{"RANK", "5"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "4"}});
  TorchrunEnvironment env(fake_env(vars));
  CHECK(env.node_rank() == 1);  // 5 / 4
  CHECK(env.num_nodes() == 2);  // 8 / 4
  CHECK(env.main_address() == "127.0.0.1");

  // GROUP_RANK / GROUP_WORLD_SIZE win over the division (uneven nodes).
  TorchrunEnvironment uneven(fake_env(with(kTorchrun, {{"WORLD_SIZE", "3"},
                                                       {"RANK", "2"},
                                                       {"LOCAL_RANK", "0"},
                                                       {"LOCAL_WORLD_SIZE", "1"},
                                                       {"GROUP_RANK", "1"},
                                                       {"GROUP_WORLD_SIZE", "2"}})));
  CHECK(uneven.node_rank() == 1);
  CHECK(uneven.num_nodes() == 2);
}

TEST_CASE("cluster environment: torchrun is detected by RANK and WORLD_SIZE") {
  CHECK(TorchrunEnvironment::detect(fake_env(kTorchrun)));
  CHECK(TorchrunEnvironment::detect(fake_env({{"RANK", "0"}, {"WORLD_SIZE", "1"}})));
  CHECK_FALSE(TorchrunEnvironment::detect(fake_env({{"RANK", "0"}})));
  CHECK_FALSE(TorchrunEnvironment::detect(fake_env({{"WORLD_SIZE", "1"}})));
  CHECK_FALSE(TorchrunEnvironment::detect(fake_env({})));
}

TEST_CASE("cluster environment: torchrun names the missing variable") {
  for (const char* var : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_PORT"}) {
    CAPTURE(var);
    check_torchrun_error(without(kTorchrun, var), std::string(var) + " is not set");
  }
}

TEST_CASE("cluster environment: torchrun rejects malformed and inconsistent values") {
  check_torchrun_error(with(kTorchrun, {{"RANK", "x"}}), "RANK='x' is not an integer");
  check_torchrun_error(with(kTorchrun, {{"RANK", ""}}), "RANK='' is not an integer");
  check_torchrun_error(with(kTorchrun, {{"RANK", "3 "}}), "RANK='3 ' is not an integer");
  check_torchrun_error(with(kTorchrun, {{"RANK", "0x3"}}), "RANK='0x3' is not an integer");
  check_torchrun_error(with(kTorchrun, {{"WORLD_SIZE", "99999999999999999999"}}),
                       "WORLD_SIZE='99999999999999999999' is too large for a 64-bit integer");
  check_torchrun_error(with(kTorchrun, {{"WORLD_SIZE", "0"}}), "WORLD_SIZE='0' must be at least 1");
  check_torchrun_error(with(kTorchrun, {{"RANK", "8"}}), "RANK='8' is out of range: expected 0 <= RANK < WORLD_SIZE=8");
  check_torchrun_error(with(kTorchrun, {{"RANK", "-1"}}),
                       "RANK='-1' is out of range: expected 0 <= RANK < WORLD_SIZE=8");
  check_torchrun_error(with(kTorchrun, {{"LOCAL_WORLD_SIZE", "0"}}), "LOCAL_WORLD_SIZE='0' must be at least 1");
  check_torchrun_error(with(kTorchrun, {{"LOCAL_WORLD_SIZE", "16"}}),
                       "LOCAL_WORLD_SIZE='16' is larger than WORLD_SIZE=8");
  check_torchrun_error(with(kTorchrun, {{"LOCAL_RANK", "2"}}),
                       "LOCAL_RANK='2' is out of range: expected 0 <= LOCAL_RANK < LOCAL_WORLD_SIZE=2");
  check_torchrun_error(with(kTorchrun, {{"GROUP_RANK", "4"}}),
                       "GROUP_RANK='4' is out of range: expected 0 <= GROUP_RANK < GROUP_WORLD_SIZE=4");
  check_torchrun_error(with(without(kTorchrun, "GROUP_WORLD_SIZE"), {{"GROUP_RANK", "4"}}),
                       "GROUP_RANK='4' is out of range: expected 0 <= GROUP_RANK < 4 nodes (WORLD_SIZE=8 / "
                       "LOCAL_WORLD_SIZE=2)");
  check_torchrun_error(with(kTorchrun, {{"GROUP_WORLD_SIZE", "0"}}), "GROUP_WORLD_SIZE='0' must be at least 1");
  check_torchrun_error(
      with(without(kTorchrun, "GROUP_WORLD_SIZE"), {{"WORLD_SIZE", "6"}, {"LOCAL_WORLD_SIZE", "4"}, {"LOCAL_RANK", "3"}}),
      "WORLD_SIZE=6 is not a multiple of LOCAL_WORLD_SIZE=4, so the number of nodes is unknown (set GROUP_WORLD_SIZE)");
  check_torchrun_error(with(without(kTorchrun, "GROUP_RANK"), {{"GROUP_WORLD_SIZE", "2"}, {"RANK", "7"}}),
                       "GROUP_RANK is not set and RANK=7 / LOCAL_WORLD_SIZE=2 = 3 is out of range: expected < "
                       "GROUP_WORLD_SIZE=2");
  check_torchrun_error(with(kTorchrun, {{"MASTER_PORT", "70000"}}),
                       "MASTER_PORT='70000' is not a TCP port: expected 1..65535");
  check_torchrun_error(with(kTorchrun, {{"MASTER_PORT", "0"}}), "MASTER_PORT='0' is not a TCP port: expected 1..65535");
  check_torchrun_error(with(kTorchrun, {{"MASTER_ADDR", ""}}), "MASTER_ADDR is set but empty");
}

// --- SLURM ------------------------------------------------------------------------

TEST_CASE("cluster environment: slurm reads every variable") {
  SlurmEnvironment env(fake_env(kSlurm));
  CHECK(env.name() == "slurm");
  CHECK(env.creates_processes_externally());
  CHECK(env.world_size() == 8);
  CHECK(env.global_rank() == 5);
  CHECK(env.local_rank() == 1);
  CHECK(env.node_rank() == 2);
  CHECK(env.num_nodes() == 4);
  CHECK(env.local_world_size() == 2);
  CHECK(env.main_address() == "jwb0001");
  CHECK(env.main_port() == 15000 + 3456);  // last four digits of 123456
  CHECK(env.ntasks_per_node() == 2);
  CHECK(env.ntasks_per_node_given());
  CHECK(env.ntasks_per_node_text() == std::optional<std::string>("2"));
  CHECK(env.job_id() == std::optional<std::string>("123456"));
  CHECK(env.world_size_source() == "SLURM_NTASKS=8 (SLURM_NNODES=4, SLURM_NTASKS_PER_NODE=2)");
  CHECK_FALSE(env.file_store_path().has_value());
  CHECK(env.summary() == "slurm: rank 5/8 (local 1/2, node 2/4), main jwb0001:18456");
}

TEST_CASE("cluster environment: slurm port comes from MASTER_PORT, else the job id as Lightning derives it") {
  CHECK(SlurmEnvironment(fake_env(with(kSlurm, {{"MASTER_PORT", "29999"}}))).main_port() == 29999);
  CHECK(SlurmEnvironment(fake_env(with(kSlurm, {{"SLURM_JOB_ID", "42"}}))).main_port() == 15042);
  CHECK(SlurmEnvironment(fake_env(with(kSlurm, {{"SLURM_JOB_ID", "9999"}}))).main_port() == 24999);
  CHECK(SlurmEnvironment(fake_env(with(kSlurm, {{"SLURM_JOB_ID", "10000"}}))).main_port() == 15000);
  CHECK(SlurmEnvironment(fake_env(with(kSlurm, {{"SLURM_JOB_ID", "87650123"}}))).main_port() == 15123);
  // Without MASTER_PORT every task of the job derives the same port.
  for (const char* procid : {"0", "3", "7"}) {
    CHECK(SlurmEnvironment(fake_env(with(kSlurm, {{"SLURM_PROCID", procid}}))).main_port() == 18456);
  }
}

TEST_CASE("cluster environment: slurm address is MASTER_ADDR, else the first host of the node list") {
  CHECK(SlurmEnvironment(fake_env(with(kSlurm, {{"MASTER_ADDR", "10.1.2.3"}}))).main_address() == "10.1.2.3");
  CHECK(SlurmEnvironment(fake_env(with(kSlurm, {{"SLURM_NODELIST", "gpu[17-20]"}}))).main_address() == "gpu17");
  CHECK(SlurmEnvironment(fake_env(with(kSlurm, {{"SLURM_NODELIST", "login2,gpu[1-3]"}}))).main_address() == "login2");
  CHECK(SlurmEnvironment(fake_env(with(kSlurm, {{"SLURM_NODELIST", "rack[2-3]-n[07-08]"}}))).main_address() ==
        "rack2-n07");
  // SLURM_JOB_NODELIST when the step list is absent.
  CHECK(SlurmEnvironment(fake_env(with(without(kSlurm, "SLURM_NODELIST"), {{"SLURM_JOB_NODELIST", "c[5-8]"}})))
            .main_address() == "c5");
  // SLURM_NODELIST wins when both are there.
  CHECK(SlurmEnvironment(fake_env(with(kSlurm, {{"SLURM_JOB_NODELIST", "c[5-8]"}}))).main_address() == "jwb0001");
}

TEST_CASE("cluster environment: slurm tasks per node accept the compressed per-node form") {
  // 2 tasks on each of 3 nodes.
  SlurmEnvironment even(fake_env(with(kSlurm, {{"SLURM_NTASKS", "6"},
                                               {"SLURM_NNODES", "3"},
                                               {"SLURM_NTASKS_PER_NODE", "2(x3)"}})));
  CHECK(even.local_world_size() == 2);
  CHECK(even.ntasks_per_node() == 2);
  CHECK(even.ntasks_per_node_text() == std::optional<std::string>("2(x3)"));
  CHECK(even.world_size_source() == "SLURM_NTASKS=6 (SLURM_NNODES=3, SLURM_NTASKS_PER_NODE=2(x3))");

  // 2, 2, 1: the last node runs one task, and this node's own count is used.
  const Vars uneven = with(kSlurm, {{"SLURM_NTASKS", "5"}, {"SLURM_NNODES", "3"}, {"SLURM_NTASKS_PER_NODE", "2(x2),1"}});
  SlurmEnvironment last(fake_env(with(uneven, {{"SLURM_PROCID", "4"}, {"SLURM_NODEID", "2"}, {"SLURM_LOCALID", "0"}})));
  CHECK(last.local_world_size() == 1);
  CHECK(last.ntasks_per_node() == 2);  // the first count
  SlurmEnvironment middle(fake_env(with(uneven, {{"SLURM_PROCID", "3"}, {"SLURM_NODEID", "1"}, {"SLURM_LOCALID", "1"}})));
  CHECK(middle.local_world_size() == 2);
  check_slurm_error(with(uneven, {{"SLURM_PROCID", "4"}, {"SLURM_NODEID", "2"}, {"SLURM_LOCALID", "1"}}),
                    "SLURM_LOCALID='1' is out of range: expected 0 <= SLURM_LOCALID < 1 tasks on node 2 "
                    "(SLURM_NTASKS_PER_NODE='2(x2),1')");

  SlurmEnvironment listed(fake_env(with(kSlurm, {{"SLURM_NTASKS", "3"},
                                                 {"SLURM_NNODES", "2"},
                                                 {"SLURM_PROCID", "0"},
                                                 {"SLURM_NODEID", "0"},
                                                 {"SLURM_LOCALID", "1"},
                                                 {"SLURM_NTASKS_PER_NODE", "2,1"}})));
  CHECK(listed.local_world_size() == 2);
  // One count throughout holds for any number of nodes.
  CHECK(SlurmEnvironment(fake_env(with(kSlurm, {{"SLURM_NTASKS_PER_NODE", "2(x9)"}}))).local_world_size() == 2);
}

TEST_CASE("cluster environment: slurm falls back to SLURM_TASKS_PER_NODE, then to an even spread") {
  SlurmEnvironment from_step(fake_env(with(without(kSlurm, "SLURM_NTASKS_PER_NODE"), {{"SLURM_TASKS_PER_NODE", "2(x4)"}})));
  CHECK(from_step.local_world_size() == 2);
  CHECK(from_step.ntasks_per_node() == 2);
  CHECK_FALSE(from_step.ntasks_per_node_given());
  CHECK_FALSE(from_step.ntasks_per_node_text().has_value());
  CHECK(from_step.world_size_source() == "SLURM_NTASKS=8 (SLURM_NNODES=4, SLURM_TASKS_PER_NODE=2(x4))");

  SlurmEnvironment spread(fake_env(without(kSlurm, "SLURM_NTASKS_PER_NODE")));
  CHECK(spread.local_world_size() == 2);
  CHECK_FALSE(spread.ntasks_per_node().has_value());
  CHECK_FALSE(spread.ntasks_per_node_given());
  CHECK(spread.world_size_source() == "SLURM_NTASKS=8 (SLURM_NNODES=4)");
  check_slurm_error(with(without(kSlurm, "SLURM_NTASKS_PER_NODE"), {{"SLURM_NTASKS", "7"}}),
                    "cannot tell how many tasks run on this node: SLURM_NTASKS=7 is not a multiple of "
                    "SLURM_NNODES=4 and neither SLURM_NTASKS_PER_NODE nor SLURM_TASKS_PER_NODE is set");
  check_slurm_error(with(without(kSlurm, "SLURM_NTASKS_PER_NODE"), {{"SLURM_LOCALID", "2"}}),
                    "SLURM_LOCALID='2' is out of range: expected 0 <= SLURM_LOCALID < 2 tasks per node "
                    "(SLURM_NTASKS=8 / SLURM_NNODES=4)");
}

TEST_CASE("cluster environment: slurm names the missing variable") {
  for (const char* var : {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NODEID", "SLURM_NNODES"}) {
    CAPTURE(var);
    check_slurm_error(without(kSlurm, var), std::string(var) + " is not set");
  }
  check_slurm_error(without(kSlurm, "SLURM_NODELIST"),
                    "cannot find the main node: none of MASTER_ADDR, SLURM_NODELIST, SLURM_JOB_NODELIST is set");
  check_slurm_error(without(kSlurm, "SLURM_JOB_ID"),
                    "cannot choose the main port: neither MASTER_PORT nor SLURM_JOB_ID is set");
  // Either replacement is enough.
  CHECK(SlurmEnvironment(fake_env(with(without(kSlurm, "SLURM_NODELIST"), {{"MASTER_ADDR", "h"}}))).main_address() ==
        "h");
  CHECK(SlurmEnvironment(fake_env(with(without(kSlurm, "SLURM_JOB_ID"), {{"MASTER_PORT", "1234"}}))).main_port() ==
        1234);
}

TEST_CASE("cluster environment: slurm rejects malformed and inconsistent values") {
  check_slurm_error(with(kSlurm, {{"SLURM_PROCID", "x"}}), "SLURM_PROCID='x' is not an integer");
  check_slurm_error(with(kSlurm, {{"SLURM_NTASKS", "0"}}), "SLURM_NTASKS='0' must be at least 1");
  check_slurm_error(with(kSlurm, {{"SLURM_PROCID", "8"}}),
                    "SLURM_PROCID='8' is out of range: expected 0 <= SLURM_PROCID < SLURM_NTASKS=8");
  check_slurm_error(with(kSlurm, {{"SLURM_NNODES", "0"}}), "SLURM_NNODES='0' must be at least 1");
  check_slurm_error(with(kSlurm, {{"SLURM_NODEID", "4"}}),
                    "SLURM_NODEID='4' is out of range: expected 0 <= SLURM_NODEID < SLURM_NNODES=4");
  check_slurm_error(with(kSlurm, {{"SLURM_LOCALID", "2"}}),
                    "SLURM_LOCALID='2' is out of range: expected 0 <= SLURM_LOCALID < 2 tasks on node 2 "
                    "(SLURM_NTASKS_PER_NODE='2')");
  check_slurm_error(with(kSlurm, {{"SLURM_NTASKS_PER_NODE", "abc"}}),
                    "SLURM_NTASKS_PER_NODE='abc' is not a tasks-per-node list like '2' or '2(x3),1'");
  check_slurm_error(with(kSlurm, {{"SLURM_NTASKS_PER_NODE", "2(x"}}),
                    "SLURM_NTASKS_PER_NODE='2(x' is not a tasks-per-node list like '2' or '2(x3),1'");
  check_slurm_error(with(kSlurm, {{"SLURM_NTASKS_PER_NODE", "2,"}}),
                    "SLURM_NTASKS_PER_NODE='2,' is not a tasks-per-node list like '2' or '2(x3),1'");
  check_slurm_error(with(kSlurm, {{"SLURM_NTASKS_PER_NODE", ""}}),
                    "SLURM_NTASKS_PER_NODE='' is not a tasks-per-node list like '2' or '2(x3),1'");
  check_slurm_error(with(kSlurm, {{"SLURM_NTASKS_PER_NODE", "0"}}),
                    "SLURM_NTASKS_PER_NODE='0' has a count of 0: expected at least 1");
  check_slurm_error(with(kSlurm, {{"SLURM_NTASKS_PER_NODE", "2,1"}}),
                    "SLURM_NTASKS_PER_NODE='2,1' describes 2 nodes but SLURM_NNODES=4");
  check_slurm_error(with(kSlurm, {{"SLURM_NTASKS_PER_NODE", "16"}}),
                    "16 tasks on node 2 (SLURM_NTASKS_PER_NODE='16') is more than SLURM_NTASKS=8");
  check_slurm_error(with(without(kSlurm, "SLURM_NTASKS_PER_NODE"), {{"SLURM_TASKS_PER_NODE", "2(x2),1"}}),
                    "SLURM_TASKS_PER_NODE='2(x2),1' describes 3 nodes but SLURM_NNODES=4");
  check_slurm_error(with(kSlurm, {{"SLURM_JOB_ID", "abc"}}), "SLURM_JOB_ID='abc' is not an integer");
  check_slurm_error(with(kSlurm, {{"SLURM_JOB_ID", "-5"}}), "SLURM_JOB_ID='-5' is negative");
  check_slurm_error(with(kSlurm, {{"MASTER_PORT", "http"}}), "MASTER_PORT='http' is not an integer");
  check_slurm_error(with(kSlurm, {{"MASTER_ADDR", ""}}), "MASTER_ADDR is set but empty");
  check_slurm_error(with(kSlurm, {{"SLURM_NODELIST", "jwb[0001-0004"}}),
                    "SLURM_NODELIST='jwb[0001-0004' is not a valid hostlist: [expand_hostlist] unbalanced '[' in "
                    "hostlist 'jwb[0001-0004'");
  check_slurm_error(with(without(kSlurm, "SLURM_NODELIST"), {{"SLURM_JOB_NODELIST", "n[3-1]"}}),
                    "SLURM_JOB_NODELIST='n[3-1]' is not a valid hostlist: [expand_hostlist] reversed range '3-1' in "
                    "hostlist 'n[3-1]'");
}

TEST_CASE("cluster environment: slurm detection skips interactive allocations, as Lightning does") {
  CHECK(SlurmEnvironment::detect(fake_env(kSlurm)));
  CHECK(SlurmEnvironment::detect(fake_env({{"SLURM_NTASKS", "1"}})));  // no job name: a batch step
  CHECK_FALSE(SlurmEnvironment::detect(fake_env(with(kSlurm, {{"SLURM_JOB_NAME", "bash"}}))));
  CHECK_FALSE(SlurmEnvironment::detect(fake_env(with(kSlurm, {{"SLURM_JOB_NAME", "interactive"}}))));
  CHECK(SlurmEnvironment::detect(fake_env(with(kSlurm, {{"SLURM_JOB_NAME", "bash-train"}}))));
  CHECK_FALSE(SlurmEnvironment::detect(fake_env(without(kSlurm, "SLURM_NTASKS"))));
  CHECK_FALSE(SlurmEnvironment::detect(fake_env({})));
}

TEST_CASE("cluster environment: slurm notices an allocation entered without srun") {
  CHECK(SlurmEnvironment::in_allocation_without_srun(fake_env({{"SLURM_JOB_ID", "7"}, {"SLURM_NTASKS", "4"}})));
  CHECK_FALSE(SlurmEnvironment::in_allocation_without_srun(fake_env({{"SLURM_JOB_ID", "7"}, {"SLURM_STEP_ID", "0"}})));
  // The batch script has SLURM_PROCID=0 but no step id (seen on a real slurm-wlm 22.05).
  CHECK(SlurmEnvironment::in_allocation_without_srun(fake_env({{"SLURM_JOB_ID", "7"}, {"SLURM_PROCID", "0"}})));
  CHECK_FALSE(SlurmEnvironment::in_allocation_without_srun(fake_env({{"SLURM_JOB_ID", "7"}, {"SLURM_STEPID", "0"}})));
  CHECK_FALSE(SlurmEnvironment::in_allocation_without_srun(fake_env(kSlurm)));
  CHECK_FALSE(SlurmEnvironment::in_allocation_without_srun(fake_env({})));
}

// --- MPI ----------------------------------------------------------------------------

TEST_CASE("cluster environment: mpi reads OpenMPI variables") {
  MPIEnvironment env(fake_env(kOpenMPI));
  CHECK(env.name() == "mpi");
  CHECK(env.flavor() == "OpenMPI");
  CHECK(env.creates_processes_externally());
  CHECK(env.world_size() == 8);
  CHECK(env.global_rank() == 5);
  CHECK(env.local_rank() == 1);
  CHECK(env.local_world_size() == 2);
  CHECK(env.node_rank() == 2);  // 5 / 2
  CHECK(env.num_nodes() == 4);  // 8 / 2
  CHECK(env.main_address() == "node01");
  CHECK(env.main_port() == 29400);
  CHECK_FALSE(env.file_store_path().has_value());
  CHECK(env.world_size_source() == "OMPI_COMM_WORLD_SIZE=8 (OMPI_COMM_WORLD_LOCAL_SIZE=2)");
  CHECK(env.summary() == "mpi: rank 5/8 (local 1/2, node 2/4), main node01:29400");
  // OMPI_COMM_WORLD_NODE_RANK is a per-node process rank, not the node index.
  CHECK(MPIEnvironment(fake_env(with(kOpenMPI, {{"OMPI_COMM_WORLD_NODE_RANK", "1"}}))).node_rank() == 2);
}

TEST_CASE("cluster environment: mpi reads MPICH / Intel MPI (PMI) variables") {
  MPIEnvironment env(fake_env({{"PMI_RANK", "2"},
                               {"PMI_SIZE", "4"},
                               {"MPI_LOCALRANKID", "0"},
                               {"MPI_LOCALNRANKS", "2"},
                               {"MASTER_ADDR", "h0"},
                               {"MASTER_PORT", "1234"}}));
  CHECK(env.flavor() == "MPICH/Intel MPI");
  CHECK(env.world_size() == 4);
  CHECK(env.global_rank() == 2);
  CHECK(env.local_rank() == 0);
  CHECK(env.local_world_size() == 2);
  CHECK(env.node_rank() == 1);
  CHECK(env.num_nodes() == 2);
  CHECK(env.world_size_source() == "PMI_SIZE=4 (MPI_LOCALNRANKS=2)");
}

TEST_CASE("cluster environment: mpi reads MVAPICH variables, even when PMI_RANK is also set") {
  MPIEnvironment env(fake_env({{"MV2_COMM_WORLD_RANK", "3"},
                               {"MV2_COMM_WORLD_SIZE", "4"},
                               {"MV2_COMM_WORLD_LOCAL_RANK", "1"},
                               {"MV2_COMM_WORLD_LOCAL_SIZE", "2"},
                               {"PMI_RANK", "0"},
                               {"PMI_SIZE", "1"},
                               {"MASTER_ADDR", "h0"},
                               {"MASTER_PORT", "1234"}}));
  CHECK(env.flavor() == "MVAPICH");
  CHECK(env.global_rank() == 3);
  CHECK(env.world_size() == 4);
  CHECK(env.local_rank() == 1);
  CHECK(env.node_rank() == 1);
  CHECK(env.world_size_source() == "MV2_COMM_WORLD_SIZE=4 (MV2_COMM_WORLD_LOCAL_SIZE=2)");
}

TEST_CASE("cluster environment: mpi can rendezvous through a shared file instead of TCP") {
  const Vars vars = with(without(without(kOpenMPI, "MASTER_ADDR"), "MASTER_PORT"),
                         {{"FULGUR_FILE_STORE", "/shared/job42/store"}});
  MPIEnvironment env(fake_env(vars));
  CHECK(env.file_store_path() == std::optional<std::string>("/shared/job42/store"));
  CHECK(env.main_address() == "127.0.0.1");
  CHECK(env.main_port() == 0);
  CHECK(env.summary() == "mpi: rank 5/8 (local 1/2, node 2/4), file store /shared/job42/store");
  // The file store wins over a half-given TCP address.
  MPIEnvironment both(fake_env(with(vars, {{"MASTER_ADDR", "node01"}})));
  CHECK(both.file_store_path() == std::optional<std::string>("/shared/job42/store"));
  CHECK(both.main_address() == "node01");
}

TEST_CASE("cluster environment: mpi names the missing rendezvous and variables") {
  const Vars no_rendezvous = without(without(kOpenMPI, "MASTER_ADDR"), "MASTER_PORT");
  // No rendezvous at all is an error only for a backend that needs one (not 'mpi').
  const MPIEnvironment bare(fake_env(no_rendezvous));
  CHECK(bare.rendezvous_error() ==
        std::optional<std::string>("[MPIEnvironment::MPIEnvironment] no rendezvous for the OpenMPI ranks: set "
                                   "MASTER_ADDR and MASTER_PORT (a TCP store on rank 0's host) or "
                                   "FULGUR_FILE_STORE=<path on a filesystem all nodes share>, or choose "
                                   "process_group_backend 'mpi'"));
  CHECK_FALSE(MPIEnvironment(fake_env(kOpenMPI)).rendezvous_error().has_value());
  check_mpi_error(without(kOpenMPI, "MASTER_PORT"),
                  "MASTER_ADDR is set but MASTER_PORT is not: a TCP rendezvous needs both (or set FULGUR_FILE_STORE "
                  "instead)");
  check_mpi_error(without(kOpenMPI, "MASTER_ADDR"),
                  "MASTER_PORT is set but MASTER_ADDR is not: a TCP rendezvous needs both (or set FULGUR_FILE_STORE "
                  "instead)");
  check_mpi_error(with(no_rendezvous, {{"FULGUR_FILE_STORE", ""}}), "FULGUR_FILE_STORE is set but empty");
  check_mpi_error({}, "no MPI launcher variables found: expected one of OMPI_COMM_WORLD_RANK (OpenMPI), "
                      "MV2_COMM_WORLD_RANK (MVAPICH), PMI_RANK (MPICH/Intel MPI)");
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"}) {
    CAPTURE(var);
    check_mpi_error(without(kOpenMPI, var), std::string(var) + " is not set");
  }
  check_mpi_error({{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}, {"MPI_LOCALRANKID", "0"}}, "MPI_LOCALNRANKS is not set");
}

TEST_CASE("cluster environment: mpi rejects malformed and inconsistent values") {
  check_mpi_error(with(kOpenMPI, {{"OMPI_COMM_WORLD_RANK", "five"}}), "OMPI_COMM_WORLD_RANK='five' is not an integer");
  check_mpi_error(with(kOpenMPI, {{"OMPI_COMM_WORLD_SIZE", "0"}}), "OMPI_COMM_WORLD_SIZE='0' must be at least 1");
  check_mpi_error(with(kOpenMPI, {{"OMPI_COMM_WORLD_RANK", "8"}}),
                  "OMPI_COMM_WORLD_RANK='8' is out of range: expected 0 <= OMPI_COMM_WORLD_RANK < "
                  "OMPI_COMM_WORLD_SIZE=8");
  check_mpi_error(with(kOpenMPI, {{"OMPI_COMM_WORLD_LOCAL_RANK", "2"}}),
                  "OMPI_COMM_WORLD_LOCAL_RANK='2' is out of range: expected 0 <= OMPI_COMM_WORLD_LOCAL_RANK < "
                  "OMPI_COMM_WORLD_LOCAL_SIZE=2");
  check_mpi_error(with(kOpenMPI, {{"OMPI_COMM_WORLD_LOCAL_SIZE", "9"}}),
                  "OMPI_COMM_WORLD_LOCAL_SIZE='9' is larger than OMPI_COMM_WORLD_SIZE=8");
  check_mpi_error(with(kOpenMPI, {{"OMPI_COMM_WORLD_LOCAL_SIZE", "3"}}),
                  "OMPI_COMM_WORLD_SIZE=8 is not a multiple of OMPI_COMM_WORLD_LOCAL_SIZE=3: node rank and node "
                  "count are derived from them, so every node must run the same number of ranks");
  check_mpi_error(with(kOpenMPI, {{"MASTER_PORT", "65536"}}), "MASTER_PORT='65536' is not a TCP port: expected 1..65535");
  check_mpi_error({{"PMI_RANK", "x"}, {"PMI_SIZE", "2"}, {"MPI_LOCALRANKID", "0"}, {"MPI_LOCALNRANKS", "2"}},
                  "PMI_RANK='x' is not an integer");
}

TEST_CASE("cluster environment: mpi is detected by any flavour's rank variable") {
  CHECK(MPIEnvironment::detect(fake_env({{"OMPI_COMM_WORLD_RANK", "0"}})));
  CHECK(MPIEnvironment::detect(fake_env({{"PMI_RANK", "0"}})));
  CHECK(MPIEnvironment::detect(fake_env({{"MV2_COMM_WORLD_RANK", "0"}})));
  CHECK_FALSE(MPIEnvironment::detect(fake_env({{"OMPI_COMM_WORLD_SIZE", "2"}})));
  CHECK_FALSE(MPIEnvironment::detect(fake_env({})));
}

// --- detection order --------------------------------------------------------------------

TEST_CASE("cluster environment: detection order is torchrun, SLURM, MPI, local") {
  Vars all = kSlurm;
  for (const auto& [name, value] : kOpenMPI) all[name] = value;
  for (const auto& [name, value] : kTorchrun) all[name] = value;

  CHECK(detect_cluster_environment(fake_env(all))->name() == "torchrun");
  Vars slurm_and_mpi = without(without(all, "RANK"), "WORLD_SIZE");
  CHECK(detect_cluster_environment(fake_env(slurm_and_mpi))->name() == "slurm");  // srun exporting PMI ranks
  // mpirun inside an sbatch script: every rank inherited the batch step's SLURM_PROCID.
  CHECK(detect_cluster_environment(fake_env(with(slurm_and_mpi, {{"OMPI_COMM_WORLD_RANK", "6"}})))->name() == "mpi");
  CHECK(detect_cluster_environment(fake_env(kOpenMPI))->name() == "mpi");
  CHECK(detect_cluster_environment(fake_env({}))->name() == "local");
  CHECK(detect_cluster_environment(fake_env({{"MASTER_PORT", "4321"}}))->main_port() == 4321);

  // The detected environment carries the values it read.
  const auto torchrun = detect_cluster_environment(fake_env(kTorchrun));
  CHECK(torchrun->global_rank() == 3);
  CHECK(dynamic_cast<TorchrunEnvironment*>(torchrun.get()) != nullptr);
  const auto slurm = detect_cluster_environment(fake_env(kSlurm));
  CHECK(slurm->global_rank() == 5);
  CHECK(dynamic_cast<SlurmEnvironment*>(slurm.get()) != nullptr);
  CHECK(dynamic_cast<MPIEnvironment*>(detect_cluster_environment(fake_env(kOpenMPI)).get()) != nullptr);
  CHECK(dynamic_cast<LocalEnvironment*>(detect_cluster_environment(fake_env({})).get()) != nullptr);
}

TEST_CASE("cluster environment: an interactive SLURM allocation falls through to what runs inside it") {
  const Vars salloc{{"SLURM_JOB_ID", "77"}, {"SLURM_NTASKS", "4"}, {"SLURM_JOB_NAME", "interactive"}};
  CHECK(detect_cluster_environment(fake_env(salloc))->name() == "local");
  CHECK(SlurmEnvironment::in_allocation_without_srun(fake_env(salloc)));
  Vars torchrun_inside = salloc;
  for (const auto& [name, value] : kTorchrun) torchrun_inside[name] = value;
  CHECK(detect_cluster_environment(fake_env(torchrun_inside))->name() == "torchrun");
  Vars mpi_inside = with(salloc, {{"SLURM_JOB_NAME", "bash"}});
  for (const auto& [name, value] : kOpenMPI) mpi_inside[name] = value;
  CHECK(detect_cluster_environment(fake_env(mpi_inside))->name() == "mpi");
}

TEST_CASE("cluster environment: a detected but broken launch throws instead of falling through") {
  CHECK_THROWS_WITH_AS(detect_cluster_environment(fake_env({{"RANK", "0"}, {"WORLD_SIZE", "two"}})),
                       "[TorchrunEnvironment::TorchrunEnvironment] WORLD_SIZE='two' is not an integer",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(detect_cluster_environment(fake_env(with(kSlurm, {{"SLURM_PROCID", "x"}}))),
                       "[SlurmEnvironment::SlurmEnvironment] SLURM_PROCID='x' is not an integer",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(detect_cluster_environment(fake_env(without(kOpenMPI, "MASTER_PORT"))),
                       "[MPIEnvironment::MPIEnvironment] MASTER_ADDR is set but MASTER_PORT is not: a TCP rendezvous "
                       "needs both (or set FULGUR_FILE_STORE instead)",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(detect_cluster_environment(EnvLookup{}),
                       "[detect_cluster_environment] the environment lookup is empty", std::invalid_argument);
}

}  // namespace cluster_environment_test
