#pragma once
#include <stdexcept>

namespace fulgur {

/// A server rank refused this client's key: its rendezvous file is another
/// run's (an old file, or the wrong run folder). Nothing it sends is taken.
class EnsembleRefusedError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace fulgur
