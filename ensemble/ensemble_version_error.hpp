#pragma once
#include <fulgur/ensemble/ensemble_refused_error.hpp>

namespace fulgur {

/// A server rank speaks another version of the wire protocol than this
/// client (a client library of another fulgur release): nothing the client
/// sends can be taken, so it stops. The message names both versions.
class EnsembleVersionError : public EnsembleRefusedError {
 public:
  using EnsembleRefusedError::EnsembleRefusedError;
};

}  // namespace fulgur
