// One member of the ensemble, in C++: solves the heat rod for its own
// (kappa, A) and streams every sample to the training job (fulgur_serve).
// Links libfulgur_client only (no LibTorch).
//
//   heat_client RENDEZVOUS CLIENT_ID KAPPA AMPLITUDE
#include "heat_rod.hpp"

#include <fulgur/ensemble/ensemble_client.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: heat_client RENDEZVOUS CLIENT_ID KAPPA AMPLITUDE\n");
    return 2;
  }
  try {
    fulgur::EnsembleClient client(argv[1], std::strtoull(argv[2], nullptr, 10));
    heat_rod::solve(std::atof(argv[3]), std::atof(argv[4]), [&](const float* inputs, const float* field) {
      client.send(inputs, {1, 3}, field, {1, heat_rod::kPoints});
    });
    const fulgur::EnsembleClientCounts counts = client.close();
    std::printf("heat_client %s: kappa %s, A %s: sent %ld, dropped %ld\n", argv[2], argv[3], argv[4], counts.sent,
                counts.dropped);
    return counts.queued == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "heat_client: %s\n", e.what());
    return 1;
  }
}
