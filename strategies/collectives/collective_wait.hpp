#pragma once

#include <atomic>
#include <optional>
#include <string>

namespace fulgur {

/// Where this process waits in a collective, so a stop signal that cannot
/// be acted on can say where the process was held (SignalConnector). A
/// strategy owns one and hands it to its process group, and the groups made
/// from that group share it: the innermost or latest wait of any of their
/// threads is the one shown.
class CollectiveWait {
 public:
  struct Now {
    std::string operation;
    double seconds = 0.0;  // how long it has waited
  };

  /// Marks, for its lifetime, that a thread waits in `operation` (a string
  /// literal: "all_reduce", "horovod allreduce", ...).
  class Scope {
   public:
    Scope(CollectiveWait& wait, const char* operation);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    CollectiveWait& wait_;
    const char* previous_operation_;
    long long previous_since_ns_;
  };

  /// The wait in progress, if any; from any thread.
  std::optional<Now> current() const;

 private:
  std::atomic<const char*> operation_{nullptr};
  std::atomic<long long> since_ns_{0};
};

}  // namespace fulgur
