#include <fulgur/strategies/mpi/mpi_reducer.hpp>

namespace fulgur {

MpiReducer::MpiReducer() : thread_([this] { loop(); }) {}

MpiReducer::~MpiReducer() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_one();
  thread_.join();
}

std::shared_ptr<std::atomic<bool>> MpiReducer::submit(std::function<void()> job) {
  auto done = std::make_shared<std::atomic<bool>>(false);
  {
    const std::lock_guard lock(mutex_);
    jobs_.emplace_back(std::move(job), done);
  }
  ready_.notify_one();
  return done;
}

void MpiReducer::combine(c10d::ReduceOp::RedOpType op, at::Tensor into, const at::Tensor& from) {
  AT_DISPATCH_ALL_TYPES_AND(at::kBool, into.scalar_type(), "MpiReducer::combine", [&] {
    scalar_t* a = into.data_ptr<scalar_t>();
    const scalar_t* b = from.data_ptr<scalar_t>();
    const int64_t n = into.numel();
    switch (op) {
      case c10d::ReduceOp::SUM: for (int64_t i = 0; i < n; ++i) a[i] = a[i] + b[i]; break;
      case c10d::ReduceOp::PRODUCT: for (int64_t i = 0; i < n; ++i) a[i] = a[i] * b[i]; break;
      case c10d::ReduceOp::MIN: for (int64_t i = 0; i < n; ++i) a[i] = b[i] < a[i] ? b[i] : a[i]; break;
      default: for (int64_t i = 0; i < n; ++i) a[i] = b[i] > a[i] ? b[i] : a[i]; break;
    }
  });
}

void MpiReducer::loop() {
  for (;;) {
    std::pair<std::function<void()>, std::shared_ptr<std::atomic<bool>>> next;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      next = std::move(jobs_.front());
      jobs_.pop_front();
    }
    next.first();  // the ring's combine: plain arithmetic, nothing that throws
    next.second->store(true, std::memory_order_release);
  }
}

}  // namespace fulgur
