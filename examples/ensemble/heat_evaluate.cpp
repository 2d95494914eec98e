// The ensemble example's check: the surrogate fulgur_serve trained
// (run_dir/model.ckpt) against the solver on held-out parameters, none of
// which any client ran. Writes run_dir/heldout.csv (kappa, amplitude, the
// relative L2 error over the run's 41 samples) and prints the mean error.
//
//   heat_evaluate ensemble.yaml [TARGET]     exit 1 when the mean error is not below TARGET (default 0.1)
#include "heat_rod.hpp"

#include <fulgur/ensemble/ensemble_config.hpp>
#include <fulgur/online/online_trainer.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    std::fprintf(stderr, "usage: heat_evaluate ensemble.yaml [TARGET]\n");
    return 2;
  }
  const double target = argc == 3 ? std::atof(argv[2]) : 0.1;
  try {
    fulgur::EnsembleConfig config = fulgur::EnsembleConfig::from_yaml_file(argv[1]);
    // One process here, whatever the training job ran on.
    config.online.options.trainer.strategy(fulgur::StrategyKind::Auto)
        .devices(1)
        .num_nodes(1)
        .process_group_backend(fulgur::ProcessGroupBackend::Auto);
    auto trainer = config.online.make_trainer();
    trainer->load_checkpoint(config.ensemble.run_dir / "model.ckpt");
    std::ofstream csv(config.ensemble.run_dir / "heldout.csv");
    csv << "kappa,amplitude,relative_error\n";
    double sum = 0.0;
    int runs = 0;
    for (const heat_rod::Run& run : heat_rod::held_out_runs()) {
      const torch::Tensor x = torch::from_blob(const_cast<float*>(run.inputs.data()), {run.samples(), 3}).clone();
      const torch::Tensor truth =
          torch::from_blob(const_cast<float*>(run.fields.data()), {run.samples(), heat_rod::kPoints}).clone();
      const double error = ((trainer->predict(x) - truth).norm() / truth.norm()).item<double>();
      csv << run.kappa << ',' << run.amplitude << ',' << error << '\n';
      sum += error;
      ++runs;
    }
    const double mean = sum / runs;
    std::printf("heat_evaluate: %d held-out runs, mean relative error %.4f (target < %.2f), trained %ld steps; %s\n",
                runs, mean, target, trainer->global_step(), (config.ensemble.run_dir / "heldout.csv").c_str());
    return mean < target ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "heat_evaluate: %s\n", e.what());
    return 1;
  }
}
