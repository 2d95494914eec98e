// One member of the ensemble, in C++: solves the heat rod for its own
// (kappa, A) and streams every sample to the training job (fulgur_serve).
// Links libfulgur_client only (no LibTorch).
//
//   heat_client RENDEZVOUS CLIENT_ID KAPPA AMPLITUDE [SUBSTEPS]
//   heat_client --write FILE CLIENT_ID KAPPA AMPLITUDE [SUBSTEPS]
//
// --write: the offline way instead (bench/ensemble_offline.sh): the samples
// go to FILE ("FLGS", the sample count, then the inputs and the targets as
// float32). SUBSTEPS (default 1): a costlier solve of the same samples.
#include "heat_rod.hpp"

#include <fulgur/ensemble/ensemble_client.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <stdexcept>

namespace {

void write_samples(const char* path, int64_t substeps, double kappa, double amplitude) {
  const heat_rod::Run run = heat_rod::run(kappa, amplitude, substeps);
  const int64_t count = run.samples();
  std::ofstream out(path, std::ios::binary);
  out.write("FLGS", 4);
  out.write(reinterpret_cast<const char*>(&count), sizeof count);
  out.write(reinterpret_cast<const char*>(run.inputs.data()), static_cast<std::streamsize>(run.inputs.size() * sizeof(float)));
  out.write(reinterpret_cast<const char*>(run.fields.data()), static_cast<std::streamsize>(run.fields.size() * sizeof(float)));
  if (!out.flush()) throw std::runtime_error(std::string("cannot write ") + path);
}

}  // namespace

int main(int argc, char** argv) {
  const bool write = argc > 1 && std::strcmp(argv[1], "--write") == 0;
  const int first = write ? 2 : 1;
  if (argc != first + 4 && argc != first + 5) {
    std::fprintf(stderr,
                 "usage: heat_client RENDEZVOUS CLIENT_ID KAPPA AMPLITUDE [SUBSTEPS]\n"
                 "       heat_client --write FILE CLIENT_ID KAPPA AMPLITUDE [SUBSTEPS]\n");
    return 2;
  }
  const double kappa = std::atof(argv[first + 2]), amplitude = std::atof(argv[first + 3]);
  const int64_t substeps = argc == first + 5 ? std::atoll(argv[first + 4]) : 1;
  if (substeps < 1) {
    std::fprintf(stderr, "heat_client: SUBSTEPS must be >= 1, got %s\n", argv[first + 4]);
    return 2;
  }
  try {
    if (write) {
      write_samples(argv[first], substeps, kappa, amplitude);
      return 0;
    }
    fulgur::EnsembleClient client(argv[first], std::strtoull(argv[first + 1], nullptr, 10));
    heat_rod::solve(
        kappa, amplitude,
        [&](const float* inputs, const float* field) { client.send(inputs, {1, 3}, field, {1, heat_rod::kPoints}); },
        substeps);
    const fulgur::EnsembleClientCounts counts = client.close();
    std::printf("heat_client %s: kappa %s, A %s: sent %ld, dropped %ld\n", argv[first + 1], argv[first + 2],
                argv[first + 3], counts.sent, counts.dropped);
    return counts.queued == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "heat_client: %s\n", e.what());
    return 1;
  }
}
