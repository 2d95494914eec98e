#include <fulgur/loggers/wandb_logger.hpp>

#include <fmt/format.h>

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>
#include <regex>
#include <stdexcept>
#include <thread>
#include <vector>

extern char** environ;

namespace fulgur {
namespace {

// Runs in the Python process; its stdin is the socket. It answers "ready"
// once wandb is imported, then turns each JSON line into wandb calls. A
// parent gone without "finish" has failed: the run ends with exit code 1.
constexpr const char* kScript = R"PY(
import json, socket, sys
channel = socket.socket(fileno=0)
try:
    import wandb
except Exception as error:
    channel.sendall(("cannot import wandb: %s\n" % error).encode())
    sys.exit(3)
channel.sendall(b"ready\n")
run = None
exit_code = 1
for line in channel.makefile("r", encoding="utf-8"):
    message = json.loads(line)
    if "init" in message:
        init = message["init"]
        run = wandb.init(mode="offline", dir=init["dir"], project=init["project"] or None,
                         name=init["name"] or None, id=init["id"] or None)
        run.define_metric("trainer/global_step")
        run.define_metric("*", step_metric="trainer/global_step", step_sync=True)
    elif "config" in message:
        run.config.update(message["config"], allow_val_change=True)
    elif "log" in message:
        run.log(dict(message["log"], **{"trainer/global_step": message["step"]}))
    elif "finish" in message:
        exit_code = message["finish"]
        break
if run is not None:
    run.finish(exit_code=exit_code)
)PY";

constexpr auto kReadyTimeout = std::chrono::seconds(120);
constexpr auto kFinishTimeout = std::chrono::seconds(300);

void append_string(std::string& out, const std::string& text) {
  out += '"';
  for (const unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      out += fmt::format("\\u{:04x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
}

// Python's json reads NaN and Infinity; a float stays a float ("3.0").
void append_number(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "NaN";
  } else if (std::isinf(value)) {
    out += value > 0 ? "Infinity" : "-Infinity";
  } else {
    std::string text = fmt::format("{}", value);
    if (text.find_first_of(".e") == std::string::npos) text += ".0";
    out += text;
  }
}

// The YAML configuration as JSON: plain scalars keep their YAML type
// (integer, float, boolean, null), quoted ones stay strings.
void append_yaml(std::string& out, const YAML::Node& node) {
  static const std::regex integer("[-+]?[0-9]+");
  static const std::regex floating(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  if (node.IsMap()) {
    out += '{';
    bool first = true;
    for (const auto& item : node) {
      if (!first) out += ", ";
      first = false;
      append_string(out, item.first.as<std::string>());
      out += ": ";
      append_yaml(out, item.second);
    }
    out += '}';
  } else if (node.IsSequence()) {
    out += '[';
    for (size_t i = 0; i < node.size(); ++i) {
      if (i > 0) out += ", ";
      append_yaml(out, node[i]);
    }
    out += ']';
  } else if (!node.IsDefined() || node.IsNull()) {
    out += "null";
  } else {
    const std::string& text = node.Scalar();
    if (node.Tag() == "!") {
      append_string(out, text);
    } else if (text == "true" || text == "false" || text == "True" || text == "False") {
      out += text == "true" || text == "True" ? "true" : "false";
    } else if (std::regex_match(text, integer)) {
      out += text[0] == '+' ? text.substr(1) : text;
    } else if (std::regex_match(text, floating)) {
      append_number(out, std::stod(text));
    } else if (text == ".nan" || text == ".NaN" || text == ".inf" || text == "-.inf" || text == "+.inf") {
      append_number(out, node.as<double>());
    } else {
      append_string(out, text);
    }
  }
}

}  // namespace

WandbLogger::WandbLogger(WandbLoggerOptions options, RunFolder folder)
    : options_(std::move(options)), folder_(std::move(folder)) {
  options_.validate();
}

WandbLogger::~WandbLogger() {
  try {
    const int code = finish();
    if (code != 0) std::cerr << fmt::format("fulgur: warning: WandbLogger: the wandb process exited with {}", code) << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "fulgur: warning: " << e.what() << std::endl;
  }
}

std::filesystem::path WandbLogger::log_dir() {
  return folder_.path();
}

void WandbLogger::start() {
  if (child_ > 0) return;
  const auto dir = log_dir();
  std::filesystem::create_directories(dir);
  int ends[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) {
    throw std::runtime_error(fmt::format("WandbLogger: socketpair: {}", std::strerror(errno)));
  }
  std::vector<std::string> env_text;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "WANDB_MODE=", 11) != 0) env_text.emplace_back(*e);
  }
  env_text.emplace_back("WANDB_MODE=offline");
  std::vector<char*> env;
  for (auto& text : env_text) env.push_back(text.data());
  env.push_back(nullptr);
  std::string python = options_.python(), flag = "-c", script = kScript;
  std::vector<char*> argv{python.data(), flag.data(), script.data(), nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, ends[1], 0);  // dup2 clears close-on-exec
  const int failed = posix_spawnp(&child_, python.c_str(), &actions, nullptr, argv.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  close(ends[1]);
  if (failed != 0) {
    close(ends[0]);
    child_ = -1;
    throw std::runtime_error(fmt::format("WandbLogger: cannot start '{}': {}", python, std::strerror(failed)));
  }
  socket_ = ends[0];

  // Wait for "ready": a missing wandb package fails here, with its message.
  std::string answer;
  const auto deadline = std::chrono::steady_clock::now() + kReadyTimeout;
  while (answer.find('\n') == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{socket_, POLLIN, 0};
    if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    char buffer[512];
    const ssize_t n = read(socket_, buffer, sizeof buffer);
    if (n <= 0) break;
    answer.append(buffer, static_cast<size_t>(n));
  }
  if (answer != "ready\n") {
    const std::string reason = answer.empty() ? "no answer" : answer.substr(0, answer.find('\n'));
    finish();
    throw std::runtime_error(fmt::format(
        "WandbLogger: '{}' {} (the wandb package is installed by scripts/setup.sh from "
        "scripts/requirements-extra.txt; WandbLogger's option python names the interpreter)",
        python, reason));
  }
  std::string init = "{\"init\": {\"dir\": ";
  append_string(init, std::filesystem::absolute(dir).string());
  init += ", \"project\": ";
  append_string(init, options_.project());
  init += ", \"name\": ";
  append_string(init, options_.name());
  init += ", \"id\": ";
  append_string(init, options_.id());
  init += "}}";
  send(init);
}

void WandbLogger::send(const std::string& line) {
  const std::string data = line + "\n";
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = ::send(socket_, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw std::runtime_error(
          fmt::format("WandbLogger: the wandb process (pid {}) stopped reading: {}", child_, std::strerror(errno)));
    }
    sent += static_cast<size_t>(n);
  }
}

void WandbLogger::log_hyperparams(const YAML::Node& hparams) {
  start();
  std::string line = "{\"config\": ";
  append_yaml(line, hparams.IsMap() ? hparams : YAML::Node(YAML::NodeType::Map));
  line += "}";
  send(line);
}

void WandbLogger::log_metrics(const std::map<std::string, double>& metrics, int64_t step) {
  start();
  std::string line = "{\"log\": {";
  bool first = true;
  for (const auto& [key, value] : metrics) {
    if (!first) line += ", ";
    first = false;
    append_string(line, key);
    line += ": ";
    append_number(line, value);
  }
  line += fmt::format("}}, \"step\": {}}}", step);
  send(line);
}

void WandbLogger::finalize(const std::string& status) { exit_code_ = status == "success" ? 0 : 1; }

int WandbLogger::finish() {
  if (child_ <= 0) return 0;
  if (socket_ >= 0) {
    try {
      send(fmt::format("{{\"finish\": {}}}", exit_code_));
    } catch (const std::exception&) {  // already gone: its exit status says why
    }
    close(socket_);
    socket_ = -1;
  }
  const pid_t child = child_;
  child_ = -1;
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + kFinishTimeout;
  while (true) {
    const pid_t done = waitpid(child, &status, WNOHANG);
    if (done == child) break;
    if (done < 0 && errno != EINTR) return -1;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      throw std::runtime_error(fmt::format("WandbLogger: the wandb process (pid {}) did not finish in {} s; killed",
                                           child, kFinishTimeout.count()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace fulgur
