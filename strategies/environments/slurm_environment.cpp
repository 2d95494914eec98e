#include <fulgur/strategies/environments/slurm_environment.hpp>

#include <fulgur/strategies/environments/hostlist.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <utility>
#include <vector>

namespace fulgur {

namespace {

/// One run of SLURM's compressed per-node list: `count` tasks on each of
/// `repeat` consecutive nodes ("2(x3)" is {2, 3}).
struct TaskRun {
  int64_t count;
  int64_t repeat;
};

bool parse_digits(const std::string& text, std::size_t& pos, int64_t& value) {
  const std::size_t start = pos;
  value = 0;
  while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
    if (value > (std::numeric_limits<int64_t>::max() - 9) / 10) return false;
    value = value * 10 + (text[pos] - '0');
    ++pos;
  }
  return pos > start;
}

/// Parses "2", "2(x3)", "2(x3),1" into runs; throws naming `var` and the text.
std::vector<TaskRun> parse_task_runs(const std::string& where, const std::string& var, const std::string& text) {
  const auto bad = [&]() {
    return std::invalid_argument(
        fmt::format("{} {}='{}' is not a tasks-per-node list like '2' or '2(x3),1'", where, var, text));
  };
  std::vector<TaskRun> runs;
  std::size_t pos = 0;
  while (true) {
    TaskRun run{0, 1};
    if (!parse_digits(text, pos, run.count)) throw bad();
    if (text.compare(pos, 2, "(x") == 0) {
      pos += 2;
      if (!parse_digits(text, pos, run.repeat) || pos >= text.size() || text[pos] != ')') throw bad();
      ++pos;
    }
    if (run.count < 1 || run.repeat < 1) {
      throw std::invalid_argument(fmt::format("{} {}='{}' has a count of 0: expected at least 1", where, var, text));
    }
    runs.push_back(run);
    if (pos == text.size()) break;
    if (text[pos] != ',') throw bad();
    ++pos;
  }
  return runs;
}

int64_t node_count(const std::vector<TaskRun>& runs) {
  int64_t total = 0;
  for (const auto& run : runs) {
    if (run.repeat > std::numeric_limits<int64_t>::max() - total) return std::numeric_limits<int64_t>::max();
    total += run.repeat;
  }
  return total;
}

int64_t count_for_node(const std::vector<TaskRun>& runs, int64_t node) {
  for (const auto& run : runs) {
    if (node < run.repeat) return run.count;
    node -= run.repeat;
  }
  return runs.front().count;  // unreachable when node < node_count(runs)
}

}  // namespace

bool SlurmEnvironment::detect(const EnvLookup& env) {
  if (!env("SLURM_NTASKS")) return false;
  const auto job_name = env("SLURM_JOB_NAME");
  return !(job_name && (*job_name == "bash" || *job_name == "interactive"));
}

bool SlurmEnvironment::in_allocation_without_srun(const EnvLookup& env) {
  // Not SLURM_PROCID: the batch script itself has SLURM_PROCID=0 (seen with
  // slurm-wlm 22.05); only srun's steps have a step id.
  return env("SLURM_JOB_ID").has_value() && !env("SLURM_STEP_ID").has_value() && !env("SLURM_STEPID").has_value();
}

std::optional<int64_t> SlurmEnvironment::cpus_per_task(const EnvLookup& env) {
  const std::string where = "[SlurmEnvironment::cpus_per_task]";
  require_lookup(env, where);
  const auto cpus = optional_int(env, where, "SLURM_CPUS_PER_TASK");
  if (cpus) check_positive(where, "SLURM_CPUS_PER_TASK", *cpus);
  return cpus;
}

SlurmEnvironment::SlurmEnvironment(const EnvLookup& env) {
  const std::string where = "[SlurmEnvironment::SlurmEnvironment]";
  require_lookup(env, where);

  world_size_ = require_int(env, where, "SLURM_NTASKS");
  check_positive(where, "SLURM_NTASKS", world_size_);
  global_rank_ = require_int(env, where, "SLURM_PROCID");
  check_index(where, "SLURM_PROCID", global_rank_, world_size_, fmt::format("SLURM_NTASKS={}", world_size_));

  num_nodes_ = require_int(env, where, "SLURM_NNODES");
  check_positive(where, "SLURM_NNODES", num_nodes_);
  node_rank_ = require_int(env, where, "SLURM_NODEID");
  check_index(where, "SLURM_NODEID", node_rank_, num_nodes_, fmt::format("SLURM_NNODES={}", num_nodes_));

  // Tasks on this node. --ntasks-per-node is what the user asked for; the
  // step's SLURM_TASKS_PER_NODE is what srun did; with neither, assume an
  // even spread and refuse to guess when it cannot be one.
  ntasks_per_node_text_ = env("SLURM_NTASKS_PER_NODE");
  tasks_per_node_text_ = env("SLURM_TASKS_PER_NODE");
  std::string local_size_text;
  const auto from_runs = [&](const std::string& var, const std::string& text) {
    const auto runs = parse_task_runs(where, var, text);
    ntasks_per_node_ = runs.front().count;
    const int64_t listed = node_count(runs);
    if (listed == num_nodes_) {
      local_world_size_ = count_for_node(runs, node_rank_);
    } else if (std::all_of(runs.begin(), runs.end(),
                           [&](const TaskRun& run) { return run.count == runs.front().count; })) {
      // The same count everywhere ("2", "2(x3)"): it holds for any number of nodes.
      local_world_size_ = runs.front().count;
    } else {
      throw std::invalid_argument(fmt::format("{} {}='{}' describes {} nodes but SLURM_NNODES={}", where, var, text,
                                              listed, num_nodes_));
    }
    local_size_text = fmt::format("{} tasks on node {} ({}='{}')", local_world_size_, node_rank_, var, text);
  };
  if (ntasks_per_node_text_) {
    from_runs("SLURM_NTASKS_PER_NODE", *ntasks_per_node_text_);
  } else if (tasks_per_node_text_) {
    from_runs("SLURM_TASKS_PER_NODE", *tasks_per_node_text_);
  } else {
    if (world_size_ % num_nodes_ != 0) {
      throw std::invalid_argument(fmt::format(
          "{} cannot tell how many tasks run on this node: SLURM_NTASKS={} is not a multiple of SLURM_NNODES={} "
          "and neither SLURM_NTASKS_PER_NODE nor SLURM_TASKS_PER_NODE is set",
          where, world_size_, num_nodes_));
    }
    local_world_size_ = world_size_ / num_nodes_;
    local_size_text = fmt::format("{} tasks per node (SLURM_NTASKS={} / SLURM_NNODES={})", local_world_size_,
                                  world_size_, num_nodes_);
  }
  if (local_world_size_ > world_size_) {
    throw std::invalid_argument(
        fmt::format("{} {} is more than SLURM_NTASKS={}", where, local_size_text, world_size_));
  }
  local_rank_ = require_int(env, where, "SLURM_LOCALID");
  check_index(where, "SLURM_LOCALID", local_rank_, local_world_size_, local_size_text);

  job_id_ = env("SLURM_JOB_ID");
  std::optional<int64_t> job_number;
  if (job_id_) {
    job_number = parse_int(where, "SLURM_JOB_ID", *job_id_);
    if (*job_number < 0) {
      throw std::invalid_argument(fmt::format("{} SLURM_JOB_ID='{}' is negative", where, *job_id_));
    }
  }

  if (auto address = env("MASTER_ADDR")) {
    main_address_ = require_nonempty(where, "MASTER_ADDR", *address);
  } else {
    std::string var = "SLURM_NODELIST";
    auto nodelist = env(var);
    if (!nodelist) nodelist = env(var = "SLURM_JOB_NODELIST");
    if (!nodelist) {
      throw std::invalid_argument(fmt::format(
          "{} cannot find the main node: none of MASTER_ADDR, SLURM_NODELIST, SLURM_JOB_NODELIST is set", where));
    }
    try {
      main_address_ = expand_hostlist(*nodelist).front();
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(fmt::format("{} {}='{}' is not a valid hostlist: {}", where, var, *nodelist, e.what()));
    }
  }

  if (auto port = env("MASTER_PORT")) {
    main_port_ = parse_port(where, "MASTER_PORT", *port, /*allow_zero=*/false);
  } else if (job_number) {
    main_port_ = static_cast<int>(15000 + *job_number % 10000);
  } else {
    throw std::invalid_argument(
        fmt::format("{} cannot choose the main port: neither MASTER_PORT nor SLURM_JOB_ID is set", where));
  }
}

std::string SlurmEnvironment::world_size_source() const {
  std::string detail = fmt::format("SLURM_NNODES={}", num_nodes_);
  if (ntasks_per_node_text_) {
    detail += ", SLURM_NTASKS_PER_NODE=" + *ntasks_per_node_text_;
  } else if (tasks_per_node_text_) {
    detail += ", SLURM_TASKS_PER_NODE=" + *tasks_per_node_text_;
  }
  return fmt::format("SLURM_NTASKS={} ({})", world_size_, detail);
}

}  // namespace fulgur
