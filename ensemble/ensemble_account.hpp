#pragma once
#include <cstdint>

namespace fulgur {

/// One client's samples as the server counts them (on one rank, or summed
/// over the ranks). With a goodbye, sent = received + refused + lost exactly.
struct EnsembleAccount {
  /// What the client said it handed to the network for these ranks (its goodbye); -1: no goodbye (it crashed).
  int64_t sent = -1;
  int64_t received = 0;
  /// Received with the run's key but refused (a shape or dtype unlike the
  /// stream's, targets the model cannot take, a truncated message).
  int64_t refused = 0;
  /// Drawn into a training batch at least once.
  int64_t trained = 0;
  /// Dropped from the reservoir before any batch drew them.
  int64_t evicted_untrained = 0;
  /// The client's number of the last sample that arrived, plus one: of a
  /// client without a goodbye, numbered - received - refused samples were
  /// dropped from its queue or lost with it.
  int64_t numbered = 0;
  /// The server ranks the client said (in its goodbye) it sends to; 0: unknown.
  int64_t ranks = 0;
  /// Sent but never received (0 without a goodbye: unknown).
  int64_t lost() const { return sent < 0 ? 0 : sent - received - refused; }
  /// Adds `other`'s counts (the same client on another rank, or another
  /// client for a total); `sent` is the caller's (it needs every goodbye).
  void add_counts(const EnsembleAccount& other) {
    received += other.received;
    refused += other.refused;
    trained += other.trained;
    evicted_untrained += other.evicted_untrained;
    numbered = numbered > other.numbered ? numbered : other.numbered;
    ranks = ranks > other.ranks ? ranks : other.ranks;
  }
};

}  // namespace fulgur
