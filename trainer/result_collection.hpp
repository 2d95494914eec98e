#pragma once

#include <fulgur/modules/metric_sink.hpp>
#include <fulgur/trainer/loops/running_stage.hpp>

#include <torch/torch.h>

#include <map>
#include <string>
#include <vector>

namespace fulgur {

class Strategy;

/// Everything logged during one loop: the latest value per step and the
/// running epoch aggregate (weighted mean / sum / max / min). Values stay
/// tensors on their device until someone asks for numbers, so logging does
/// not force a device synchronisation every step.
class ResultCollection : public MetricSink {
 public:
  /// `stage`: the loop values are logged from (Train, Validate or Test);
  /// it decides the on_step/on_epoch defaults.
  explicit ResultCollection(RunningStage stage) : stage_(stage) {}

  /// Weight for this batch's ReduceOp::Mean values (its size).
  void set_batch_size(int64_t batch_size) { batch_size_ = batch_size; }
  /// Appended to every name logged from now on: "/dataloader_idx_<i>" while
  /// the steps of loader i of several run, else empty.
  void set_name_suffix(std::string suffix) { suffix_ = std::move(suffix); }

  /// Records one value; validates the name, shape and the options.
  void log(const std::string& name, const torch::Tensor& value, const LogOptions& options) override;
  /// Records a Metric object: its batch value (from forward()) on_step; at
  /// the epoch's end epoch_metrics() computes it (the metric syncs itself,
  /// once) and resets it.
  void log(const std::string& name, metrics::Metric& metric, const LogOptions& options) override;

  /// Values split by destination: loggers, the progress bar, and the
  /// callback metrics (base names, what callbacks monitor).
  struct Metrics {
    std::map<std::string, double> logger;
    std::map<std::string, double> prog_bar;
    std::map<std::string, double> callback;

    /// Files `value` under `key` where `options` send it; callbacks see it
    /// under the base `name` too.
    void add(const std::string& name, const std::string& key, const LogOptions& options, double value);
  };

  /// One on_step value, still a tensor on its device.
  struct StepValue {
    std::string name;  // as logged
    std::string key;   // as reported (name_step when also on_epoch)
    LogOptions options;
    torch::Tensor value;
  };

  /// The last step's on_step values, without reading them: the training
  /// loop reads them (read()) only on steps where someone looks.
  std::vector<StepValue> step_values() const;

  /// `values` as numbers, copied to the host at once (one host read).
  static Metrics read(const std::vector<StepValue>& values);

  /// Host reads of logged values so far in this process (step and epoch
  /// values): a diagnostic of where training waits for the device.
  static int64_t host_reads();

  /// Epoch aggregates of on_epoch values, reduced across processes by the
  /// strategy where sync_dist is set, and logged Metric objects computed
  /// (each synced once) and then reset. Every process must call this together.
  /// With several processes they first agree on what was logged, so a rank
  /// that ran fewer batches, or none, still takes part in every sync (and
  /// reports the synced values): it finds a Metric object it did not log by
  /// its path in `module`, the module the others logged it from.
  Metrics epoch_metrics(Strategy& strategy, const torch::nn::Module* module = nullptr) const;

  /// Forgets the step values (called after each batch has been reported).
  void reset_step();
  /// Forgets everything (called at the start of each epoch of this loop).
  void reset();

  bool empty() const { return metrics_.empty(); }

 private:
  struct Metric {
    LogOptions options;
    bool on_step = false;
    bool on_epoch = false;
    torch::Tensor step_value;  // latest value this step (undefined after reset_step)
    torch::Tensor accumulator;  // float64: weighted sum, sum, max or min
    torch::Tensor weight;       // float64: total batch size for ReduceOp::Mean
    metrics::Metric* object = nullptr;  // a logged Metric: its compute() is the epoch value
  };
  /// Checks the options and files `name`; the entry, or nullptr for a repeated Metric object.
  Metric& entry(const std::string& name, const LogOptions& options, bool on_step, bool on_epoch);

  std::string step_name(const std::string& name, const Metric& m) const;
  std::string epoch_name(const std::string& name, const Metric& m) const;
  double compute_epoch(const Metric& metric, Strategy& strategy) const;
  /// One on_epoch entry as every process sees it: enough to take part in
  /// its sync, and report the result, without having logged it.
  struct Logged {
    std::string name;
    std::string key;  // as reported (epoch_name)
    LogOptions options;
    bool object = false;
    std::string path;  // a Metric object's path in the module ("": not found there)
  };
  /// The union, by name, of what each process logged (sorted by name);
  /// throws the same error on every process where they disagree.
  std::vector<Logged> logged_everywhere(Strategy& strategy, const torch::nn::Module* module) const;

  RunningStage stage_;
  int64_t batch_size_ = 1;
  std::string suffix_;
  std::map<std::string, Metric> metrics_;
};

}  // namespace fulgur
