#pragma once

// Part of the fulgur_mpi module (links MPI), never of the fulgur library.

#include <fulgur/strategies/mpi/mpi_engine.hpp>

#include <torch/csrc/distributed/c10d/Work.hpp>

#include <chrono>
#include <exception>
#include <memory>
#include <vector>

namespace fulgur {

/// A Work its group's engine completes; while someone waits for it, the
/// engine polls without sleeping for a moment after each progress. It does
/// not keep the engine alive: the group owns it.
class MpiWork : public c10d::Work {
 public:
  MpiWork(int rank, c10d::OpType type, const std::vector<at::Tensor>& tensors, std::weak_ptr<MpiEngine> engine)
      : c10d::Work(rank, type, nullptr, tensors), engine_(std::move(engine)) {}
  void done(std::exception_ptr error) { finish(std::move(error)); }
  bool wait(std::chrono::milliseconds timeout) override {
    struct Waiting {
      explicit Waiting(std::shared_ptr<MpiEngine> engine) : engine(std::move(engine)) {
        if (this->engine) this->engine->waiting(+1);
      }
      ~Waiting() {
        if (engine) engine->waiting(-1);
      }
      std::shared_ptr<MpiEngine> engine;
    } waiting(engine_.lock());
    return c10d::Work::wait(timeout);
  }

 private:
  std::weak_ptr<MpiEngine> engine_;
};

}  // namespace fulgur
