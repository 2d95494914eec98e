// A stand-in for a user's training binary, driven by local_launcher_test.cpp.
//
// Without FULGUR_LAUNCHED in the environment it is the launcher:
//   launcher_probe launch <nprocs> [--nodes N] [--node-rank R] [--port P]
//                  [--address A] [--grace S] <mode> [args...]
// and re-executes itself (through LocalLauncher) as `launcher_probe <mode>
// [args...]`. With FULGUR_LAUNCHED set it is one rank: it prints one line
//   probe rank=R local_rank=L world_size=W local_world_size=LW group_rank=G master_addr=A master_port=P
// and then acts per <mode>:
//   ok                   exit 0
//   hang                 wait to be stopped
//   fail <rank> <code>   that rank exits with <code>, the others hang
//   kill9 <rank>         that rank SIGKILLs itself, the others hang
// The word `stubborn` among the args makes every rank ignore SIGINT and
// SIGTERM (before it prints), so only SIGKILL stops a hanging one. Other
// args (the test's unique token, which finds leftover processes) are ignored.
#include <fulgur/strategies/launchers/local_launcher.hpp>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

// One of the programs in a multi-call binary (started through bin/launcher_probe).
namespace launcher_probe {

namespace {

std::string env_or(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : fallback;
}

// Bounded so that a broken launcher in a failing test cannot leave processes
// behind for long.
[[noreturn]] void hang() {
  for (int i = 0; i < 1200; ++i) ::usleep(50'000);
  std::fprintf(stderr, "launcher_probe: rank %s was never stopped\n", env_or("RANK", "?").c_str());
  std::_Exit(99);
}

int run_rank(const std::vector<std::string>& args) {
  bool stubborn = false;
  for (const auto& a : args) stubborn = stubborn || a == "stubborn";
  // Before printing: the test signals the launcher once every rank printed.
  if (stubborn) {
    std::signal(SIGINT, SIG_IGN);
    std::signal(SIGTERM, SIG_IGN);
  }
  std::printf("probe rank=%s local_rank=%s world_size=%s local_world_size=%s group_rank=%s master_addr=%s master_port=%s\n",
              env_or("RANK", "").c_str(), env_or("LOCAL_RANK", "").c_str(), env_or("WORLD_SIZE", "").c_str(),
              env_or("LOCAL_WORLD_SIZE", "").c_str(), env_or("GROUP_RANK", "").c_str(),
              env_or("MASTER_ADDR", "").c_str(), env_or("MASTER_PORT", "").c_str());
  std::fflush(stdout);
  if (args.empty()) {
    std::fprintf(stderr, "launcher_probe: no mode given\n");
    return 2;
  }
  const std::string& mode = args[0];
  const long rank = std::strtol(env_or("RANK", "-1").c_str(), nullptr, 10);
  if (mode == "ok") return 0;
  if (mode == "hang") hang();
  if ((mode == "fail" && args.size() >= 3) || (mode == "kill9" && args.size() >= 2)) {
    if (std::stol(args[1]) != rank) hang();
    // Give the other ranks time to start, so the launcher has someone to stop.
    ::usleep(300'000);
    if (mode == "kill9") std::raise(SIGKILL);
    return std::stoi(args[2]);
  }
  std::fprintf(stderr, "launcher_probe: unknown mode '%s'\n", mode.c_str());
  return 2;
}

int run_launcher(int argc, char** argv) {
  if (argc < 4 || std::string(argv[1]) != "launch") {
    std::fprintf(stderr, "usage: launcher_probe launch <nprocs> [--option value]... <mode> [args...]\n");
    return 2;
  }
  // sh starts background jobs with SIGINT ignored, and children inherit
  // that; the probe stands for a binary started from a terminal.
  std::signal(SIGINT, SIG_DFL);
  try {
    fulgur::LocalLauncherOptions options(std::stoll(argv[2]));
    int i = 3;
    for (; i + 1 < argc && std::string(argv[i]).rfind("--", 0) == 0; i += 2) {
      const std::string key = argv[i];
      const std::string value = argv[i + 1];
      if (key == "--nodes") options.num_nodes(std::stoll(value));
      else if (key == "--node-rank") options.node_rank(std::stoll(value));
      else if (key == "--port") options.main_port(std::stoll(value));
      else if (key == "--address") options.main_address(value);
      else if (key == "--grace") options.grace_period_s(std::stod(value));
      else throw std::invalid_argument("launcher_probe: unknown option " + key);
    }
    fulgur::LocalLauncher launcher(options);
    std::vector<const char*> child_argv{argv[0]};
    for (; i < argc; ++i) child_argv.push_back(argv[i]);
    return launcher.launch(static_cast<int>(child_argv.size()), child_argv.data());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (std::getenv("FULGUR_LAUNCHED") == nullptr) return run_launcher(argc, argv);
  return run_rank(std::vector<std::string>(argv + 1, argv + argc));
}

}  // namespace launcher_probe
