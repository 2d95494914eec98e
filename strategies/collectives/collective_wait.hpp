#pragma once

#include <optional>
#include <string>

namespace fulgur {

/// Marks, for its lifetime, that this process waits in a collective (its
/// operation name), so a stop signal that cannot be acted on can say where
/// the process was held (SignalConnector). One process-wide slot: the
/// innermost or latest wait of any thread is the one shown.
class CollectiveWait {
 public:
  /// `operation`: a string literal ("all_reduce", "horovod allreduce", ...).
  explicit CollectiveWait(const char* operation);
  ~CollectiveWait();
  CollectiveWait(const CollectiveWait&) = delete;
  CollectiveWait& operator=(const CollectiveWait&) = delete;

  struct Now {
    std::string operation;
    double seconds = 0.0;  // how long it has waited
  };
  /// The wait in progress, if any.
  static std::optional<Now> current();

 private:
  const char* previous_operation_;
  long long previous_since_ns_;
};

}  // namespace fulgur
