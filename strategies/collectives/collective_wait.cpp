#include <fulgur/strategies/collectives/collective_wait.hpp>

#include <chrono>

namespace fulgur {
namespace {

long long now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

CollectiveWait::Scope::Scope(CollectiveWait& wait, const char* operation)
    : wait_(wait), previous_operation_(wait.operation_.load()), previous_since_ns_(wait.since_ns_.load()) {
  wait_.since_ns_.store(now_ns());
  wait_.operation_.store(operation);
}

CollectiveWait::Scope::~Scope() {
  wait_.operation_.store(previous_operation_);
  wait_.since_ns_.store(previous_since_ns_);
}

std::optional<CollectiveWait::Now> CollectiveWait::current() const {
  const char* operation = operation_.load();
  if (operation == nullptr) return std::nullopt;
  return Now{operation, static_cast<double>(now_ns() - since_ns_.load()) * 1e-9};
}

}  // namespace fulgur
