#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fulgur {

/// Which rows of every parameter a rank holds, and how parameters group
/// into units: metadata only, no tensors of its own and no communication.
///
/// A parameter is split along dim 0 into world-size chunks of
/// ceil(rows / world) rows; rank r owns rows [r*c, (r+1)*c) (the last ranks
/// may own fewer, or none). A unit (the wrap policy: each listed submodule,
/// then the rest closing at a module boundary once big enough) is the
/// communication granularity: its parameters' chunks lie one after
/// another in one padded per-rank chunk. Units are numbered in launch
/// order: the unit whose first parameter comes last first, as backward
/// produces the last layers' gradients first.
class ShardLayout {
 public:
  struct Param {
    torch::Tensor tensor;        // the module's parameter: its TensorImpl never changes
    std::vector<int64_t> shape;  // of the whole value
    std::string name;
    int64_t rows = 1, row_numel = 1, chunk_rows = 1, local_rows = 0;
    size_t unit = 0;
    int64_t offset = 0;  // in the unit's padded per-rank chunk
    /// Rows [first, first + count) that rank `r` holds.
    int64_t first_row(int64_t r) const { return std::min(r * chunk_rows, rows); }
    int64_t rows_of(int64_t r) const { return std::min(chunk_rows, rows - first_row(r)); }
  };
  struct Unit {
    std::vector<size_t> params;
    int64_t chunk_numel = 0;       // padded elements per rank
    torch::TensorOptions options;  // of its parameters (one dtype and device)
  };

  /// The trainable ones of `parameters` (contiguous; the others stay whole
  /// and are not listed), over `world` ranks as rank `rank`. Throws for a
  /// listed submodule without trainable parameters and for a unit that
  /// mixes dtypes or devices.
  ShardLayout(const std::vector<torch::Tensor>& parameters, const std::vector<std::string>& names, int64_t world,
              int64_t rank, const std::vector<std::string>& unit_modules, int64_t min_unit_numel);

  int64_t world() const { return world_; }
  int64_t rank() const { return rank_; }
  const std::vector<Param>& params() const { return params_; }
  const std::vector<Unit>& units() const { return units_; }
  /// The index of `param` in params(), or nullopt when it is not sharded.
  std::optional<size_t> find(const torch::Tensor& param) const;

  /// The unit of the submodule named `module` (listed in unit_modules).
  std::optional<size_t> unit_of_module(const std::string& module) const;
  /// The names of the parameters of every unit, in launch order.
  std::vector<std::vector<std::string>> unit_parameter_names() const;
  /// Elements of the largest unit (whole).
  int64_t largest_unit_numel() const;
  /// The whole shape of `param`, or nullopt when it is not sharded.
  std::optional<std::vector<int64_t>> whole_shape(const torch::Tensor& param) const;
  /// Rows of `param` (dim 0) this rank owns, or nullopt when it is not sharded.
  std::optional<int64_t> local_rows(const torch::Tensor& param) const;
  /// This rank's rows of `whole` (a copy) if it is shaped like `param`, else `whole`.
  torch::Tensor shard_of(const torch::Tensor& param, const torch::Tensor& whole) const;
  /// This rank's rows of a parameter's whole value `whole` (a view; a 0-d
  /// parameter is a 0-d view or an empty one).
  torch::Tensor rows_view(size_t param, const torch::Tensor& whole) const;
  /// A parameter's place in one rank's chunk: `values` (flat, maybe
  /// undefined), times `scale`, at the start; zeros for the padding after them.
  static void fill_padded(torch::Tensor region, const torch::Tensor& values, double scale = 1.0);

 private:
  void build_units(const std::vector<std::string>& unit_modules, int64_t min_unit_numel);

  int64_t world_;
  int64_t rank_;
  std::vector<Param> params_;
  std::vector<Unit> units_;
  std::map<std::string, size_t> module_units_;
};

}  // namespace fulgur
