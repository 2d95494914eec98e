#pragma once

#include <fulgur/core/option_enum.hpp>
#include <fulgur/core/options.hpp>
#include <fulgur/trainer/callback.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace fulgur {

/// When PredictionWriter writes: after every batch, at the epoch's end, or both.
enum class WriteInterval { Batch, Epoch, BatchAndEpoch };
inline std::vector<std::string> option_choices(WriteInterval) { return {"batch", "epoch", "batch_and_epoch"}; }

/// Options of PredictionWriter, with Lightning's names.
#define FULGUR_PREDICTION_WRITER_OPTIONS(X)                                                                   \
  X(fulgur::WriteInterval, write_interval, fulgur::WriteInterval::Epoch,                                    \
    "when predictions are written: epoch (one file), batch (one file per batch) or batch_and_epoch",        \
    fulgur::check::Any{})                                                                                   \
  X(std::string, output_dir, "", "folder of the files; empty: the run folder", fulgur::check::Any{})

struct PredictionWriterOptions {
  FULGUR_OPTIONS(PredictionWriterOptions, FULGUR_PREDICTION_WRITER_OPTIONS)
};

/// Writes what predict_step returns, as Lightning's BasePredictionWriter:
/// at the epoch's end `predictions.pt` (the batches joined along dim 0, one
/// tensor that torch.load(weights_only=True) reads) and/or after every batch
/// `predictions/batch_<i>.pt`. With several processes every rank writes its
/// own share, the rank before the suffix (`predictions.rank1.pt`). Override
/// write_on_batch_end / write_on_epoch_end to write another format. The
/// CLI's predict subcommand adds one unless the configuration has one.
class PredictionWriter : public Callback {
 public:
  using Options = PredictionWriterOptions;
  explicit PredictionWriter(PredictionWriterOptions options = {});

  std::string state_key() const override { return "PredictionWriter"; }
  void on_predict_batch_end(Trainer& trainer, LightningModule& module, const torch::Tensor& prediction,
                            const Batch& batch, int64_t batch_idx) override;
  void on_predict_epoch_end(Trainer& trainer, LightningModule& module,
                            const std::vector<torch::Tensor>& predictions) override;

  /// Where the last write_on_epoch_end wrote (empty before).
  const std::filesystem::path& last_file() const { return last_file_; }

 protected:
  virtual void write_on_batch_end(Trainer& trainer, LightningModule& module, const torch::Tensor& prediction,
                                  const Batch& batch, int64_t batch_idx);
  virtual void write_on_epoch_end(Trainer& trainer, LightningModule& module,
                                  const std::vector<torch::Tensor>& predictions);
  /// `output_dir` (or the run folder) / `name`, with `.rank<r>` before the
  /// extension on ranks other than 0 of a multi-process run.
  std::filesystem::path file_for(Trainer& trainer, const std::string& name) const;

 private:
  PredictionWriterOptions options_;
  std::filesystem::path last_file_;
};

}  // namespace fulgur
