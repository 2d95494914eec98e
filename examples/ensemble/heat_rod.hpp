#pragma once
// The ensemble example's solver: the heat equation u_t = kappa u_xx on a rod
// [0, 1] of 64 points, ends held at 0, from u0(x) = A (sin(pi x) + 0.5 sin(3 pi x)),
// explicit Euler. A run is one (kappa, A); every 20th step is a sample:
// inputs (kappa, A, t / kEndTime), targets the 64 values of u at t.
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

namespace heat_rod {

constexpr int64_t kPoints = 64;
constexpr int64_t kSteps = 800;
constexpr int64_t kEvery = 20;
constexpr double kEndTime = 0.05;

/// Calls `sample(inputs[3], field[64])` at steps 0, kEvery, 2 kEvery, ... (41 samples).
/// `substeps` > 1 splits every step into that many smaller ones: the same
/// samples (more accurate), a costlier solve (bench/ensemble_offline.sh uses
/// it for a solver whose time counts).
inline void solve(double kappa, double amplitude, const std::function<void(const float*, const float*)>& sample,
                  int64_t substeps = 1) {
  const double pi = std::acos(-1.0), dx = 1.0 / (kPoints - 1), dt = kEndTime / kSteps;
  const double h = dt / static_cast<double>(substeps);
  std::vector<double> u(kPoints), next(kPoints, 0.0);
  for (int64_t i = 0; i < kPoints; ++i) {
    const double x = static_cast<double>(i) * dx;
    u[i] = amplitude * (std::sin(pi * x) + 0.5 * std::sin(3 * pi * x));
  }
  std::vector<float> field(kPoints);
  for (int64_t step = 0; step <= kSteps; ++step) {
    if (step % kEvery == 0) {
      const float inputs[3] = {static_cast<float>(kappa), static_cast<float>(amplitude),
                               static_cast<float>(static_cast<double>(step) * dt / kEndTime)};
      for (int64_t i = 0; i < kPoints; ++i) field[i] = static_cast<float>(u[i]);
      sample(inputs, field.data());
    }
    for (int64_t sub = 0; sub < substeps; ++sub) {
      for (int64_t i = 1; i + 1 < kPoints; ++i) next[i] = u[i] + kappa * h / (dx * dx) * (u[i - 1] - 2 * u[i] + u[i + 1]);
      std::swap(u, next);
    }
  }
}

/// One run's samples gathered: inputs [samples x 3], fields [samples x kPoints], row-major.
struct Run {
  double kappa = 0, amplitude = 0;
  std::vector<float> inputs, fields;
  int64_t samples() const { return static_cast<int64_t>(inputs.size() / 3); }
};

inline Run run(double kappa, double amplitude, int64_t substeps = 1) {
  Run r{kappa, amplitude, {}, {}};
  solve(
      kappa, amplitude,
      [&](const float* x, const float* u) {
        r.inputs.insert(r.inputs.end(), x, x + 3);
        r.fields.insert(r.fields.end(), u, u + kPoints);
      },
      substeps);
  return r;
}

/// The 18 held-out runs the surrogate is scored on (heat_evaluate): a grid
/// of (kappa, A) that no client draws.
inline std::vector<Run> held_out_runs() {
  std::vector<Run> runs;
  for (const double kappa : {0.6, 0.85, 1.1, 1.35, 1.6, 1.85}) {
    for (const double amplitude : {0.6, 1.0, 1.4}) runs.push_back(run(kappa, amplitude));
  }
  return runs;
}

}  // namespace heat_rod
