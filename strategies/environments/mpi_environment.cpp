#include <fulgur/strategies/environments/mpi_environment.hpp>

#include <fmt/format.h>

#include <array>
#include <stdexcept>

namespace fulgur {

namespace {

struct Flavor {
  const char* name;
  const char* rank;
  const char* size;
  const char* local_rank;
  const char* local_size;
};

// Order matters: see the class comment.
constexpr std::array<Flavor, 3> kFlavors{{
    {"OpenMPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"MVAPICH", "MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_LOCAL_RANK",
     "MV2_COMM_WORLD_LOCAL_SIZE"},
    {"MPICH/Intel MPI", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
}};

const Flavor* find_flavor(const EnvLookup& env) {
  for (const auto& flavor : kFlavors) {
    if (env(flavor.rank)) return &flavor;
  }
  return nullptr;
}

}  // namespace

bool MPIEnvironment::detect(const EnvLookup& env) { return find_flavor(env) != nullptr; }

MPIEnvironment::MPIEnvironment(const EnvLookup& env) {
  const std::string where = "[MPIEnvironment::MPIEnvironment]";
  require_lookup(env, where);
  const Flavor* flavor = find_flavor(env);
  if (flavor == nullptr) {
    throw std::invalid_argument(fmt::format(
        "{} no MPI launcher variables found: expected one of OMPI_COMM_WORLD_RANK (OpenMPI), "
        "MV2_COMM_WORLD_RANK (MVAPICH), PMI_RANK (MPICH/Intel MPI)",
        where));
  }
  flavor_ = flavor->name;
  size_var_ = flavor->size;
  local_size_var_ = flavor->local_size;

  world_size_ = require_int(env, where, flavor->size);
  check_positive(where, flavor->size, world_size_);
  global_rank_ = require_int(env, where, flavor->rank);
  check_index(where, flavor->rank, global_rank_, world_size_, fmt::format("{}={}", flavor->size, world_size_));

  local_world_size_ = require_int(env, where, flavor->local_size);
  check_positive(where, flavor->local_size, local_world_size_);
  if (local_world_size_ > world_size_) {
    throw std::invalid_argument(fmt::format("{} {}='{}' is larger than {}={}", where, flavor->local_size,
                                            local_world_size_, flavor->size, world_size_));
  }
  local_rank_ = require_int(env, where, flavor->local_rank);
  check_index(where, flavor->local_rank, local_rank_, local_world_size_,
              fmt::format("{}={}", flavor->local_size, local_world_size_));

  // Node numbers are derived, so an uneven layout would give wrong ones
  // (and two processes the same GPU): refuse it instead.
  if (world_size_ % local_world_size_ != 0) {
    throw std::invalid_argument(fmt::format(
        "{} {}={} is not a multiple of {}={}: node rank and node count are derived from them, so every node "
        "must run the same number of ranks",
        where, flavor->size, world_size_, flavor->local_size, local_world_size_));
  }
  num_nodes_ = world_size_ / local_world_size_;
  node_rank_ = global_rank_ / local_world_size_;

  const auto address = env("MASTER_ADDR");
  const auto port = env("MASTER_PORT");
  if (auto path = env("FULGUR_FILE_STORE")) file_store_path_ = require_nonempty(where, "FULGUR_FILE_STORE", *path);
  if (!file_store_path_) {
    if (!address && !port) {
      rendezvous_error_ = fmt::format(
          "{} no rendezvous for the {} ranks: set MASTER_ADDR and MASTER_PORT (a TCP store on rank 0's host) "
          "or FULGUR_FILE_STORE=<path on a filesystem all nodes share>, or choose process_group_backend 'mpi'",
          where, flavor->name);
    } else if (!address || !port) {
      throw std::invalid_argument(fmt::format(
          "{} {} is set but {} is not: a TCP rendezvous needs both (or set FULGUR_FILE_STORE instead)", where,
          address ? "MASTER_ADDR" : "MASTER_PORT", address ? "MASTER_PORT" : "MASTER_ADDR"));
    }
  }
  main_address_ = address ? require_nonempty(where, "MASTER_ADDR", *address) : "127.0.0.1";
  main_port_ = port ? parse_port(where, "MASTER_PORT", *port, /*allow_zero=*/false) : 0;
}

std::string MPIEnvironment::world_size_source() const {
  return fmt::format("{}={} ({}={})", size_var_, world_size_, local_size_var_, local_world_size_);
}

}  // namespace fulgur
