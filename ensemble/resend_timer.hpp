#pragma once
#include <algorithm>
#include <cmath>

namespace fulgur {

/// How long an ensemble client waits for a server rank's acknowledgement
/// before it sends the oldest unacknowledged message again once the
/// connection to the rank ended (on a live one, at least 20 s:
/// EnsembleClient::kLiveSilenceS): TCP's retransmission time-out
/// (RFC 6298), from the round trips it measured.
/// A busy rank (one training beside a thousand clients) answers late, not
/// never: the time-out grows with the trips it measures, so the client does
/// not flood it with copies, and shrinks again once it answers quickly.
/// The floor is 0.5 s, not TCP's 0.2 s: a trip here includes the server's
/// own work, which a loaded machine delays by far more than a network.
/// Before the first measure it is 3 s, as TCP's after a handshake that
/// timed out (RFC 6298, 5.7): a client's first trip includes its joining,
/// and a rank that hundreds of clients join at once on a busy machine
/// answered some after more than 1 s, so each sent copies (484 of 1,024
/// messages in 1 of 15 runs of ensemble_load_test beside three busy loops).
///
///   timer.measured(0.030);       // a message sent once, acknowledged 30 ms later
///   timer.timeout_s();           // smoothed trip + 4 x its variation, in [min_s, max_s]
///   timer.timed_out();           // silent a whole time-out: doubled (up to max_s) until the next measure
class ResendTimer {
 public:
  static constexpr double kFirstS = 3.0, kMinS = 0.5, kMaxS = 8.0;

  /// A round trip (sent to acknowledged) of a message sent once (Karn: a
  /// copy's acknowledgement could be the first's, so it is not measured).
  void measured(double trip_s) {
    if (!(trip_s >= 0.0)) return;
    if (!measured_) {
      smoothed_s_ = trip_s;
      variation_s_ = trip_s / 2;
      measured_ = true;
    } else {
      variation_s_ = 0.75 * variation_s_ + 0.25 * std::abs(smoothed_s_ - trip_s);
      smoothed_s_ = 0.875 * smoothed_s_ + 0.125 * trip_s;
    }
    timeout_s_ = std::clamp(smoothed_s_ + 4 * variation_s_, kMinS, kMaxS);
  }
  /// The rank stayed silent for a whole time-out: wait twice as long for the next.
  void timed_out() { timeout_s_ = std::min(2 * timeout_s_, kMaxS); }
  double timeout_s() const { return timeout_s_; }
  /// The smoothed round trip (0 before the first measure).
  double round_trip_s() const { return smoothed_s_; }

 private:
  bool measured_ = false;
  double smoothed_s_ = 0.0, variation_s_ = 0.0, timeout_s_ = kFirstS;
};

}  // namespace fulgur
