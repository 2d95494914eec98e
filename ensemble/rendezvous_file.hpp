#pragma once
#include <fulgur/ensemble/wire_header.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace fulgur {

/// Where an ensemble's clients find its server: the run's key and one
/// ZeroMQ endpoint per server rank, in a text file only its owner may read
/// (the key admits a client):
///
///   # fulgur ensemble rendezvous
///   key 3f0c...               (32 hex digits)
///   rank 0 tcp://node17:40123
///   rank 1 tcp://node18:40777
class RendezvousFile {
 public:
  WireHeader::Key key{};
  std::vector<std::string> endpoints;

  /// A key from the system's random source.
  static WireHeader::Key new_key();
  /// Reads `path`; std::invalid_argument names the file and the line.
  static RendezvousFile read(const std::filesystem::path& path);
  /// Writes `path` (mode 0600) atomically: a client never reads half of it.
  void write(const std::filesystem::path& path) const;
};

}  // namespace fulgur
