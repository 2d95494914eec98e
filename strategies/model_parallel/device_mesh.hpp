#pragma once

#include <fulgur/strategies/collectives/process_group.hpp>

#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace fulgur {

/// The run's processes as a grid with named dimensions: `pp` (the model's
/// stages, one after the other), `dp` (replicas of the model, each with its
/// own share of the data), `cp` (the sequence split over ranks) and `tp`
/// (each layer split over ranks). Ranks are numbered with pp outermost,
/// then the order of the other three, the last innermost ("dp,cp,tp":
/// consecutive ranks form a tensor-parallel group, so it stays within a
/// node; the stages of a pipeline are the farthest apart). Each dimension with more than one rank has a process group per
/// coordinate of the others: group("tp") holds this rank and the ranks that
/// differ from it only in tp. group("dp,cp") holds those that differ in dp
/// or cp (the ranks whose gradients are averaged). A mesh of one process
/// (every size 1) has no groups, and a plan applied on it changes nothing.
class DeviceMesh {
 public:
  struct Shape {
    int64_t dp = 1, cp = 1, tp = 1, pp = 1;
    /// Outermost to innermost, inside pp.
    std::string order = "dp,cp,tp";
  };

  /// One process: every dimension of size 1.
  DeviceMesh();
  /// Over `world` (every rank calls it, in the same order as the others:
  /// the groups are made together). Sizes that do not multiply to the
  /// world size are refused naming both.
  DeviceMesh(ProcessGroup& world, const Shape& shape);
  ~DeviceMesh();
  DeviceMesh(const DeviceMesh&) = delete;
  DeviceMesh& operator=(const DeviceMesh&) = delete;

  /// `dim`: "dp", "cp", "tp" or "pp" (anything else is an error naming it).
  int64_t size(const std::string& dim) const;
  int64_t rank(const std::string& dim) const;
  /// The group along `dim` ("dp", "cp", "tp", "pp" or "dp,cp"); an error when the
  /// dimension has one rank (no group: nothing to communicate).
  ProcessGroup& group(const std::string& dim) const;
  /// The same group, for what keeps it as long as it lives (a split layer).
  std::shared_ptr<ProcessGroup> share_group(const std::string& dim) const;
  /// Whether `dim` spans more than one rank (its group exists).
  bool spans(const std::string& dim) const { return size(dim) > 1; }
  int64_t world_size() const { return shape_.dp * shape_.cp * shape_.tp * shape_.pp; }
  int64_t global_rank() const { return global_rank_; }
  const Shape& shape() const { return shape_; }

  /// `count` things (heads, features, a vocabulary) split evenly over `dim`:
  /// count / size(dim), or an error naming both numbers and `what`.
  int64_t split(const std::string& dim, int64_t count, const std::string& what) const;

 private:
  static size_t index_of(const std::string& dim);

  Shape shape_;
  int64_t global_rank_ = 0;
  std::array<int64_t, 4> coordinate_{0, 0, 0, 0};  // dp, cp, tp, pp
  std::map<std::string, std::shared_ptr<ProcessGroup>> groups_;
};

}  // namespace fulgur
