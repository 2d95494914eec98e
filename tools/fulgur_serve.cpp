// An ensemble's training job (docs/ensemble.md): simulations stream
// samples over the network (EnsembleClient, fulgur_client.h) into an online
// trainer on every rank of this job, which trains one model.
//
//   fulgur_serve --config ensemble.yaml              one rank
//   srun -n 4 fulgur_serve --config ensemble.yaml    (or mpirun, torchrun) four ranks
//
// The file is an online trainer's (model, loss, optimizer, lr_scheduler,
// seed, online, stream, trainer; docs/online.md) plus an `ensemble:` section:
//   ensemble: {run_dir: run, expected_clients: 32, host: "", port: 0,
//              max_message_bytes: 268435456, time_limit_s: 0, drain_s: 5}
// At the end every rank saves the weights to run_dir/model.ckpt (online.ckpt
// format: OnlineTrainer::load_checkpoint) and rank 0 writes the accounting.
#include <fulgur/ensemble/ensemble_server.hpp>
#include <fulgur/online/online_config.hpp>
#include <fulgur/trainer/cli/config_section.hpp>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <exception>
#include <iostream>
#include <string>

namespace {

const char* kUsage =
    "usage: fulgur_serve --config FILE.yaml\n"
    "Trains one model on the samples an ensemble of simulations streams to it (docs/ensemble.md).\n";

fulgur::EnsembleOptions ensemble_options(const YAML::Node& node) {
  if (node && !node.IsMap() && !node.IsNull()) throw fulgur::cli::ConfigError("ensemble: expected a mapping");
  fulgur::cli::ConfigSection section(node ? node : YAML::Node(YAML::NodeType::Null), "ensemble");
  fulgur::EnsembleOptions o;
  o.run_dir = section.get<std::string>("run_dir", o.run_dir.string());
  o.expected_clients = section.get<int64_t>("expected_clients", o.expected_clients);
  o.host = section.get<std::string>("host", o.host);
  o.port = section.get<int64_t>("port", o.port);
  o.max_message_bytes = section.get<int64_t>("max_message_bytes", o.max_message_bytes);
  o.time_limit_s = section.get<double>("time_limit_s", o.time_limit_s);
  o.drain_s = section.get<double>("drain_s", o.drain_s);
  const std::vector<std::string> unread = section.unread_keys();
  if (!unread.empty()) throw fulgur::cli::ConfigError(unread.front() + ": unknown key");
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || std::string(argv[1]) != "--config") {
    std::cerr << kUsage;
    return 2;
  }
  const std::string path = argv[2];
  try {
    YAML::Node root;
    try {
      root = YAML::LoadFile(path);
    } catch (const YAML::Exception& e) {
      throw std::invalid_argument(fmt::format("cannot read {}: {}", path, e.what()));
    }
    fulgur::EnsembleOptions options;
    try {
      options = ensemble_options(root.IsMap() ? root["ensemble"] : YAML::Node());
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(fmt::format("{}: {}", path, e.what()));
    }
    if (root.IsMap()) root.remove("ensemble");
    const fulgur::OnlineConfig config = fulgur::OnlineConfig::from_yaml(YAML::Dump(root), path);
    std::unique_ptr<fulgur::OnlineTrainer> trainer = config.make_trainer();
    fulgur::EnsembleServer server(*trainer, options);
    server.serve();
    trainer->save_checkpoint(options.run_dir / "model.ckpt");
    if (trainer->fabric().is_global_zero()) {
      std::cout << fmt::format("fulgur_serve: {} steps; weights in {}", trainer->global_step(),
                               (options.run_dir / "model.ckpt").string())
                << std::endl;
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "fulgur_serve: " << e.what() << std::endl;
    return 1;
  }
}
