#include "heat_solver.hpp"

#include <random>
#include <stdexcept>

namespace insitu {

HeatSolver::HeatSolver(MPI_Comm comm, int64_t nx, int64_t ny, double alpha)
    : comm_(comm), nx_(nx), ny_(ny), alpha_(alpha) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  if (nx_ % size_ != 0) throw std::invalid_argument("the grid's rows must divide evenly over the ranks");
  rows_ = nx_ / size_;
  first_row_ = rank_ * rows_;
  field_ = torch::zeros({rows_ + 2, ny_});
}

void HeatSolver::reset(uint64_t seed) {
  // Every rank draws the same global spots and keeps the rows it owns.
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int64_t> row(4, nx_ - 5), col(4, ny_ - 5);
  std::uniform_real_distribution<float> heat(0.5F, 1.0F);
  field_.zero_();
  auto f = field_.accessor<float, 2>();
  for (int spot = 0; spot < 6; ++spot) {
    const int64_t r = row(gen), c = col(gen);
    const float h = heat(gen);
    for (int64_t i = r - 3; i <= r + 3; ++i) {
      for (int64_t j = c - 3; j <= c + 3; ++j) {
        const int64_t local = i - first_row_ + 1;
        if (local >= 1 && local <= rows_) f[local][j] = std::max(f[local][j], h);
      }
    }
  }
  exchange_halos(field_);
}

void HeatSolver::exchange_halos(torch::Tensor& field) const {
  float* data = field.data_ptr<float>();
  const int count = static_cast<int>(ny_);
  const int up = rank_ > 0 ? rank_ - 1 : MPI_PROC_NULL;
  const int down = rank_ + 1 < size_ ? rank_ + 1 : MPI_PROC_NULL;
  // First interior row up, last interior row down; halos come back the same way.
  MPI_Sendrecv(data + ny_, count, MPI_FLOAT, up, 0, data + (rows_ + 1) * ny_, count, MPI_FLOAT, down, 0, comm_,
               MPI_STATUS_IGNORE);
  MPI_Sendrecv(data + rows_ * ny_, count, MPI_FLOAT, down, 1, data, count, MPI_FLOAT, up, 1, comm_,
               MPI_STATUS_IGNORE);
  if (up == MPI_PROC_NULL) field[0].zero_();
  if (down == MPI_PROC_NULL) field[rows_ + 1].zero_();
}

void HeatSolver::step() {
  torch::NoGradGuard no_grad;
  const torch::Tensor u = field_;
  torch::Tensor next = u.clone();
  // The five-point Laplacian on interior rows; the outer columns stay 0.
  const auto c = u.slice(0, 1, rows_ + 1).slice(1, 1, ny_ - 1);
  const auto lap = u.slice(0, 0, rows_).slice(1, 1, ny_ - 1) + u.slice(0, 2, rows_ + 2).slice(1, 1, ny_ - 1) +
                   u.slice(0, 1, rows_ + 1).slice(1, 0, ny_ - 2) + u.slice(0, 1, rows_ + 1).slice(1, 2, ny_) - 4 * c;
  next.slice(0, 1, rows_ + 1).slice(1, 1, ny_ - 1).copy_(c + alpha_ * lap);
  field_ = next;
  exchange_halos(field_);
}

double HeatSolver::global_sum_of_squares(const torch::Tensor& field) const {
  double local = field.slice(0, 1, rows_ + 1).pow(2).sum().item<double>();
  double global = 0.0;
  MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, comm_);
  return global;
}

}  // namespace insitu
