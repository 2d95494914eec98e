#include <fulgur/strategies/collectives/collective_wait.hpp>

#include <atomic>
#include <chrono>

namespace fulgur {
namespace {

std::atomic<const char*> g_operation{nullptr};
std::atomic<long long> g_since_ns{0};

long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

CollectiveWait::CollectiveWait(const char* operation)
    : previous_operation_(g_operation.load()), previous_since_ns_(g_since_ns.load()) {
  g_since_ns.store(now_ns());
  g_operation.store(operation);
}

CollectiveWait::~CollectiveWait() {
  g_operation.store(previous_operation_);
  g_since_ns.store(previous_since_ns_);
}

std::optional<CollectiveWait::Now> CollectiveWait::current() {
  const char* operation = g_operation.load();
  if (operation == nullptr) return std::nullopt;
  return Now{operation, static_cast<double>(now_ns() - g_since_ns.load()) * 1e-9};
}

}  // namespace fulgur
