#pragma once

namespace fulgur {

class HookDispatcher;
class LoggerConnector;
class SignalConnector;

/// What the Trainer hands its loops besides its public face: hook dispatch,
/// metric reporting and the stop-signal agreement. The Trainer owns all three.
struct LoopContext {
  HookDispatcher& hooks;
  LoggerConnector& logging;
  SignalConnector& signals;
};

}  // namespace fulgur
