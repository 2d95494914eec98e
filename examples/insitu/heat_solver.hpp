#pragma once

#include <mpi.h>
#include <torch/torch.h>

#include <cstdint>

namespace insitu {

/// Explicit 2D heat diffusion on an nx x ny grid (zero temperature on the
/// outer edges), split by rows over the ranks of `comm`: each rank holds its
/// rows plus one halo row above and below, exchanged with its neighbours
/// after every step. The field is a [rows + 2, ny] float tensor.
class HeatSolver {
 public:
  HeatSolver(MPI_Comm comm, int64_t nx, int64_t ny, double alpha);

  /// Hot spots at random places (the same global field on any number of
  /// ranks for a given seed), then the halos.
  void reset(uint64_t seed);
  /// One explicit step of the solver.
  void step();
  /// Fills the halo rows from the neighbours (zero at the outer edges).
  void exchange_halos(torch::Tensor& field) const;

  /// This rank's rows with their halos.
  const torch::Tensor& field() const { return field_; }
  void set_field(const torch::Tensor& field) { field_ = field.clone(); }
  int64_t rows() const { return rows_; }
  /// sum over every rank of the squared interior values of `field`.
  double global_sum_of_squares(const torch::Tensor& field) const;

 private:
  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
  int64_t nx_, ny_, rows_, first_row_;
  double alpha_;
  torch::Tensor field_;
};

}  // namespace insitu
