#pragma once
// Several runs of a probe in one launch: `<probe> runs WORLD FILE` starts
// WORLD ranks once (fulgur's LocalLauncher, on a free port) and every rank
// runs FILE's lines one after another, each line the arguments of one whole
// command line of the probe (split at spaces), with its own Trainer and
// process group. A test's runs of one world size thus pay the ranks'
// start-up (LibTorch's, ~0.4 s a process) once, not once per run. The
// launcher serves one store for them all (LauncherStore): a rank may begin
// the next run while rank 0 still ends the last.
#include <fulgur/strategies/launchers/local_launcher.hpp>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace fulgur::testing {

/// The `runs` subcommand of a probe whose one command line is `run_one`.
/// Returns 0 when every run of every rank returned 0, else the first failure's code.
inline int run_probe_list(int argc, char** argv, const std::function<int(int, const char* const*)>& run_one) {
  if (argc != 4) {
    std::cerr << "usage: " << argv[0] << " runs WORLD FILE" << std::endl;
    return 2;
  }
  const std::string file = argv[3];
  if (std::getenv("FULGUR_LAUNCHED") == nullptr) {
    return LocalLauncher(LocalLauncherOptions(std::stoll(argv[2]))).launch(argc, argv);
  }
  std::ifstream in(file);
  std::string line;
  for (int index = 1; std::getline(in, line); ++index) {
    std::vector<std::string> words{argv[0]};
    std::istringstream split(line);
    for (std::string word; split >> word;) words.push_back(word);
    std::vector<const char*> args;
    for (const auto& word : words) args.push_back(word.c_str());
    const int code = run_one(static_cast<int>(args.size()), args.data());
    if (code != 0) {
      std::cerr << "[runs] run " << index << " of " << file << " exited with code " << code << ": " << line << std::endl;
      return code;
    }
  }
  return 0;
}

}  // namespace fulgur::testing
