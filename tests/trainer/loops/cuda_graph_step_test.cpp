// The Trainer's cuda_graph option: the reasons a step is not captured, the
// fallback on the CPU, and the step logic (warm-up, capture, replay, other
// shapes, failed capture) with a CPU stand-in for the CUDA graph, whose
// capture runs the step once and whose replay runs it again on the static
// inputs. The graph itself runs in scripts/gpu_check.sh.
#include "support/test_support.hpp"
#include "support/tiny_modules.hpp"

#include <fulgur/modules/metrics/mean_squared_error.hpp>
#include <fulgur/modules/scoped_metric_sink.hpp>
#include <fulgur/trainer/loops/cuda_graph_step.hpp>

#include <doctest/doctest.h>

#include <filesystem>

using namespace fulgur;
using fulgur::testing::quiet_options;
using fulgur::testing::RecordingModule;
using fulgur::testing::RegressionData;
using fulgur::testing::TempDir;

namespace cuda_graph_step_test {

Platform one_gpu() {
  Platform p;
  p.cuda_device_count = 1;
  return p;
}

std::string refusal(TrainerOptions options, LightningModule& module) {
  const TrainerConfig config = TrainerConfig::resolve(options.accelerator(AcceleratorKind::Cuda), one_gpu());
  const auto optimizers = module.configure_optimizers().entries();
  return CudaGraphStep::refusal(config, module, optimizers).value_or("");
}

// Counts what reaches the loop's results.
struct CountingSink : MetricSink {
  void log(const std::string& name, const torch::Tensor& value, const LogOptions&) override {
    names.push_back(name);
    values.push_back(value.item<double>());
  }
  void log(const std::string& name, metrics::Metric&, const LogOptions&) override { names.push_back(name); }
  std::vector<std::string> names;
  std::vector<double> values;
};

// The stand-in graph: its capture runs the step once (so the step's static
// outputs exist, as a real capture allocates them); its replay runs no host
// code, as a real one, and reads what the static input holds then.
struct StandInGraph {
  GraphCapture capture() {
    GraphCapture g;
    g.capture = [this](const std::function<void()>& body, std::string& error) -> std::shared_ptr<void> {
      ++captures;
      if (!fail_with.empty()) {
        error = fail_with;
        return nullptr;
      }
      body();
      return std::make_shared<int>(captures);
    };
    g.replay = [this](const std::shared_ptr<void>&) {
      ++replays;
      replayed_inputs.push_back(static_input[0][0].item<double>());
    };
    return g;
  }
  int captures = 0;
  int replays = 0;
  std::string fail_with;
  torch::Tensor static_input;  // the input the capture computed on (the graph's static buffer)
  std::vector<double> replayed_inputs;
};

Batch batch_of(double value, int64_t rows = 2) { return {torch::full({rows, 4}, value), torch::zeros({rows})}; }

}  // namespace cuda_graph_step_test

using namespace cuda_graph_step_test;

TEST_CASE("cuda_graph: each reason a step cannot be captured is named") {
  RecordingModule module;
  CHECK(refusal(TrainerOptions(), module).empty());
  CHECK(refusal(TrainerOptions().precision(PrecisionMode::BF16Mixed), module).empty());
  CHECK(refusal(TrainerOptions().precision(PrecisionMode::FP16Mixed), module).find("16-mixed's gradient scaler") != std::string::npos);
  CHECK(refusal(TrainerOptions().strategy(StrategyKind::DDP), module).find("needs strategy single_device; ddp") !=
        std::string::npos);
  CHECK(refusal(TrainerOptions().accumulate_grad_batches(2), module).find("accumulate_grad_batches=2") !=
        std::string::npos);
  CHECK(refusal(TrainerOptions().gradient_clip_val(1.0), module).find("gradient clipping") != std::string::npos);
  module.scheduler_interval = Interval::Step;
  CHECK(refusal(TrainerOptions(), module).find("an LR scheduler with interval step") != std::string::npos);
  module.scheduler_interval = Interval::Epoch;  // captured again when it changes the LR
  CHECK(refusal(TrainerOptions(), module).empty());
  module.scheduler_interval.reset();
  module.automatic_optimization(false);
  CHECK(refusal(TrainerOptions(), module).find("manual optimization") != std::string::npos);

  struct AdamModule : RecordingModule {
    OptimizerConfig configure_optimizers() override {
      return {std::make_shared<torch::optim::Adam>(parameters(), torch::optim::AdamOptions(0.1)), std::nullopt};
    }
  } adam;
  CHECK(refusal(TrainerOptions(), adam).find("only SGD's step can be captured") != std::string::npos);

  const TrainerConfig cpu = TrainerConfig::resolve(TrainerOptions().accelerator(AcceleratorKind::Cpu), Platform());
  CHECK(CudaGraphStep::refusal(cpu, module, {}).value_or("") == "needs a GPU (accelerator is cpu)");
}

TEST_CASE("cuda_graph: cuda_graph_warmup must be at least 1, named in the error") {
  CHECK_THROWS_WITH_AS(TrainerConfig::resolve(TrainerOptions().cuda_graph(true).cuda_graph_warmup(0), Platform()),
                       doctest::Contains("cuda_graph_warmup"), std::invalid_argument);
}

TEST_CASE("cuda_graph: on the CPU a fit says why it runs eager and trains as without the option") {
  TempDir dir("cuda-graph-cpu");
  auto fit = [&](bool graph) {
    torch::manual_seed(0);
    RecordingModule module;
    RegressionData data(6, 0);
    Trainer trainer(quiet_options(dir.path()).max_epochs(2).logger(false).cuda_graph(graph));
    trainer.fit(module, data);
    return module.linear->weight.clone();
  };
  const torch::Tensor eager = fit(false);
  std::ostringstream err;
  std::streambuf* previous = std::cerr.rdbuf(err.rdbuf());
  torch::Tensor with_option;
  try {
    with_option = fit(true);
  } catch (...) {
    std::cerr.rdbuf(previous);
    throw;
  }
  std::cerr.rdbuf(previous);
  CHECK(err.str().find("fulgur: cuda_graph: needs a GPU (accelerator is cpu); the step runs eager") != std::string::npos);
  CHECK(torch::equal(eager, with_option));
}

TEST_CASE("cuda_graph: warm-up, capture once, replay with each new batch and log what the step logs") {
  RecordingModule module;
  StandInGraph graph;
  CudaGraphStep step(graph.capture(), 2);
  CountingSink results;
  const ScopedMetricSink loop(module, &results);  // as the training loop routes log()
  auto optimizer = module.configure_optimizers().optimizer;
  std::vector<double> seen;  // the input each eager run (or the capture) computed on
  auto body = [&](const Batch& b) {
    seen.push_back(b.input[0][0].item<double>());
    graph.static_input = b.input;
    const torch::Tensor loss = module.training_step(b, 0);
    loss.backward();
    optimizer->step();
    return loss;
  };
  for (double v : {1.0, 2.0}) {
    CHECK_FALSE(step.step(batch_of(v), module, results, *optimizer, body).replayed);
    optimizer->zero_grad();
  }
  CHECK(graph.captures == 0);
  CHECK(results.names.size() == 2);  // eager steps log as usual

  const auto third = step.step(batch_of(3.0), module, results, *optimizer, body);
  CHECK(third.replayed);
  CHECK(step.captured());
  CHECK(graph.captures == 1);
  CHECK(graph.replays == 1);
  // The capture's log() calls are recorded, not logged: one value per step.
  CHECK(results.names == std::vector<std::string>{"train_loss", "train_loss", "train_loss"});
  const auto fourth = step.step(batch_of(4.0), module, results, *optimizer, body);
  CHECK(fourth.replayed);
  CHECK(graph.replays == 2);
  CHECK(seen == std::vector<double>{1.0, 2.0, 3.0});        // eager, eager, the capture
  CHECK(graph.replayed_inputs == std::vector<double>{3.0, 4.0});  // each batch copied in before its replay
  // What is logged after a replay and the loss returned are the graph's static outputs.
  CHECK(results.values.back() == doctest::Approx(fourth.loss.item<double>()));
  CHECK(fourth.loss.data_ptr() == third.loss.data_ptr());
  // After the capture the parameters hold no gradients an eager step would add to.
  CHECK_FALSE(module.linear->weight.grad().defined());

  // Another shape runs eager; the graph stays for the next batch of its shape.
  CHECK_FALSE(step.step(batch_of(5.0, 3), module, results, *optimizer, body).replayed);
  CHECK(seen.back() == 5.0);
  optimizer->zero_grad();
  CHECK(step.step(batch_of(6.0), module, results, *optimizer, body).replayed);
  CHECK(graph.replays == 3);
  CHECK(graph.captures == 1);

  // An epoch scheduler changed the learning rate: captured again, then replayed.
  optimizer->param_groups()[0].options().set_lr(0.01);
  CHECK(step.step(batch_of(7.0), module, results, *optimizer, body).replayed);
  CHECK(graph.captures == 2);
  CHECK(step.recaptures() == 1);
  CHECK(step.step(batch_of(8.0), module, results, *optimizer, body).replayed);
  CHECK(graph.captures == 2);
  CHECK(graph.replayed_inputs.back() == 8.0);
}

TEST_CASE("cuda_graph: a failed capture or a logged Metric object turns the graph off and the step runs eager") {
  RecordingModule module;
  CountingSink results;
  const ScopedMetricSink loop(module, &results);
  auto optimizer = module.configure_optimizers().optimizer;
  int eager_runs = 0;
  auto body = [&](const Batch& b) {
    ++eager_runs;
    const torch::Tensor loss = module.training_step(b, 0);
    loss.backward();
    optimizer->step();
    return loss;
  };

  StandInGraph failing;
  failing.fail_with = "operation not permitted when stream is capturing\nbacktrace...";
  CudaGraphStep step(failing.capture(), 1);
  CHECK_FALSE(step.step(batch_of(1.0), module, results, *optimizer, body).replayed);
  const auto after = step.step(batch_of(2.0), module, results, *optimizer, body);
  CHECK_FALSE(after.replayed);
  CHECK(after.loss.defined());
  CHECK(failing.captures == 1);
  CHECK_FALSE(step.enabled());
  CHECK(eager_runs == 2);

  struct MetricModule : RecordingModule {
    torch::Tensor training_step(const Batch& b, int64_t i) override {
      const torch::Tensor loss = RecordingModule::training_step(b, i);
      mse.update(linear->forward(b.input).squeeze(1).detach(), b.target);
      log("train_mse", mse);
      return loss;
    }
    metrics::MeanSquaredError mse;
  } metric_module;
  auto metric_optimizer = metric_module.configure_optimizers().optimizer;
  const ScopedMetricSink metric_loop(metric_module, &results);
  StandInGraph graph;
  CudaGraphStep watched(graph.capture(), 1);
  auto metric_body = [&](const Batch& b) {
    const torch::Tensor loss = metric_module.training_step(b, 0);
    loss.backward();
    metric_optimizer->step();
    return loss;
  };
  watched.step(batch_of(1.0), metric_module, results, *metric_optimizer, metric_body);
  CHECK_FALSE(watched.enabled());
  CHECK_FALSE(watched.step(batch_of(2.0), metric_module, results, *metric_optimizer, metric_body).replayed);
  CHECK(graph.captures == 0);
}
