#pragma once

namespace fulgur {

/// While alive, a SIGPIPE whose action is the default is ignored: a write
/// to the socket of a peer that died then fails with EPIPE and the process
/// group reports which rank died, instead of the process being killed
/// silently (Python ignores SIGPIPE at start-up for the same reason). A
/// handler the program installed itself is left alone. The first holder
/// changes the action and the last one puts back what it found, in any
/// order; process groups hold one for their lifetime.
class IgnoredSigpipe {
 public:
  IgnoredSigpipe();
  ~IgnoredSigpipe();
  IgnoredSigpipe(const IgnoredSigpipe&) = delete;
  IgnoredSigpipe& operator=(const IgnoredSigpipe&) = delete;
};

}  // namespace fulgur
