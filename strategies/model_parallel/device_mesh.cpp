#include <fulgur/strategies/model_parallel/device_mesh.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace fulgur {
namespace {

constexpr std::array<const char*, 4> kDims{"dp", "cp", "tp", "pp"};
constexpr size_t kOrdered = 3;  // dp, cp, tp: their order is an option; pp is always outermost

std::vector<size_t> parse_order(const std::string& order) {
  std::vector<size_t> dims;
  std::stringstream in(order);
  for (std::string name; std::getline(in, name, ',');) {
    size_t found = kOrdered;
    for (size_t i = 0; i < kOrdered; ++i) {
      if (name == kDims[i]) found = i;
    }
    if (found == kOrdered) {
      throw std::invalid_argument(fmt::format("[DeviceMesh] unknown dimension '{}' in the order '{}' (dp, cp, tp)", name, order));
    }
    dims.push_back(found);
  }
  if (dims.size() != kOrdered || (dims[0] + dims[1] + dims[2]) != 3 || dims[0] == dims[1] || dims[1] == dims[2] ||
      dims[0] == dims[2]) {
    throw std::invalid_argument(fmt::format("[DeviceMesh] the order '{}' must name dp, cp and tp once each", order));
  }
  return dims;
}

}  // namespace

DeviceMesh::DeviceMesh() = default;

DeviceMesh::DeviceMesh(ProcessGroup& world, const Shape& shape) : shape_(shape), global_rank_(world.rank()) {
  const std::array<int64_t, 4> sizes{shape.dp, shape.cp, shape.tp, shape.pp};
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 1) throw std::invalid_argument(fmt::format("[DeviceMesh] {} size must be >= 1, got {}", kDims[i], sizes[i]));
  }
  if (world_size() != world.size()) {
    throw std::invalid_argument(fmt::format("[DeviceMesh] pp {} x dp {} x cp {} x tp {} = {} ranks, but the world has {}",
                                            shape.pp, shape.dp, shape.cp, shape.tp, world_size(), world.size()));
  }
  std::vector<size_t> order = parse_order(shape.order);  // outermost first
  order.insert(order.begin(), 3);                          // pp outside all
  std::array<int64_t, 4> stride{};
  int64_t next = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    stride[*it] = next;
    next *= sizes[*it];
  }
  for (size_t d = 0; d < sizes.size(); ++d) coordinate_[d] = (global_rank_ / stride[d]) % sizes[d];

  // One group per set of dimensions a collective runs along; every rank
  // makes them in this order (over MPI each is a split of the world).
  const std::vector<std::vector<size_t>> sets{{0}, {1}, {2}, {0, 1}, {3}};
  for (const auto& set : sets) {
    int64_t members = 1;
    for (size_t d : set) members *= sizes[d];
    if (members == 1) continue;
    if (set.size() > 1 && (sizes[set[0]] == 1 || sizes[set[1]] == 1)) continue;  // the same as a single dimension's
    // The rank in the group: the set's coordinates in mesh order; the
    // group's name: the coordinates of the other dimensions.
    int64_t rank = 0;
    for (size_t d : order) {
      if (std::find(set.begin(), set.end(), d) != set.end()) rank = rank * sizes[d] + coordinate_[d];
    }
    std::string key, name;
    for (size_t d = 0; d < sizes.size(); ++d) {
      const bool in_set = std::find(set.begin(), set.end(), d) != set.end();
      if (in_set && !name.empty()) name += ',';
      if (in_set) name += kDims[d];
      if (!in_set) key += fmt::format("{}{}", kDims[d], coordinate_[d]);
    }
    groups_[name] = std::make_shared<ProcessGroup>(world, fmt::format("mesh/{}/{}", name, key), rank, members);
  }
}

DeviceMesh::~DeviceMesh() = default;

size_t DeviceMesh::index_of(const std::string& dim) {
  for (size_t i = 0; i < kDims.size(); ++i) {
    if (dim == kDims[i]) return i;
  }
  throw std::invalid_argument(fmt::format("[DeviceMesh] unknown dimension '{}' (dp, cp, tp, pp)", dim));
}

int64_t DeviceMesh::size(const std::string& dim) const {
  const std::array<int64_t, 4> sizes{shape_.dp, shape_.cp, shape_.tp, shape_.pp};
  return sizes[index_of(dim)];
}

int64_t DeviceMesh::rank(const std::string& dim) const { return coordinate_[index_of(dim)]; }

ProcessGroup& DeviceMesh::group(const std::string& dim) const { return *share_group(dim); }

std::shared_ptr<ProcessGroup> DeviceMesh::share_group(const std::string& dim) const {
  std::string key = dim;
  if (dim == "dp,cp") {
    if (shape_.dp == 1) key = "cp";
    if (shape_.cp == 1) key = "dp";
  } else {
    index_of(dim);
  }
  const auto found = groups_.find(key);
  if (found == groups_.end()) {
    throw std::logic_error(fmt::format("[DeviceMesh::group] '{}' spans one rank: it has no group", dim));
  }
  return found->second;
}

int64_t DeviceMesh::split(const std::string& dim, int64_t count, const std::string& what) const {
  const int64_t n = size(dim);
  if (count % n != 0) {
    throw std::invalid_argument(fmt::format("[DeviceMesh] {} {} cannot be split evenly over {} size {}", what, count, dim, n));
  }
  return count / n;
}

}  // namespace fulgur
