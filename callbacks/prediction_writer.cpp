#include <fulgur/callbacks/prediction_writer.hpp>

#include <fulgur/trainer/trainer.hpp>

#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <stdexcept>

namespace fulgur {
namespace {

void write_tensor(const torch::Tensor& tensor, const std::filesystem::path& path) {
  std::filesystem::create_directories(path.parent_path());
  const std::vector<char> bytes = torch::pickle_save(tensor.defined() ? tensor.detach().cpu() : tensor);
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.flush();
  if (!out) throw std::runtime_error(fmt::format("[PredictionWriter] cannot write {}", path.string()));
}

}  // namespace

PredictionWriter::PredictionWriter(PredictionWriterOptions options) : options_(std::move(options)) {
  options_.validate();
}

std::filesystem::path PredictionWriter::file_for(Trainer& trainer, const std::string& name) const {
  const std::filesystem::path dir =
      options_.output_dir().empty() ? trainer.log_dir() : std::filesystem::path(options_.output_dir());
  const std::filesystem::path file = dir / name;
  if (trainer.world_size() == 1 || trainer.is_global_zero()) return file;
  return file.parent_path() /
         fmt::format("{}.rank{}{}", file.stem().string(), trainer.global_rank(), file.extension().string());
}

void PredictionWriter::on_predict_batch_end(Trainer& trainer, LightningModule& module, const torch::Tensor& prediction,
                                            const Batch& batch, int64_t batch_idx) {
  if (options_.write_interval() != WriteInterval::Epoch) write_on_batch_end(trainer, module, prediction, batch, batch_idx);
}

void PredictionWriter::on_predict_epoch_end(Trainer& trainer, LightningModule& module,
                                            const std::vector<torch::Tensor>& predictions) {
  if (options_.write_interval() != WriteInterval::Batch) write_on_epoch_end(trainer, module, predictions);
}

void PredictionWriter::write_on_batch_end(Trainer& trainer, LightningModule&, const torch::Tensor& prediction,
                                          const Batch&, int64_t batch_idx) {
  write_tensor(prediction, file_for(trainer, fmt::format("predictions/batch_{}.pt", batch_idx)));
}

void PredictionWriter::write_on_epoch_end(Trainer& trainer, LightningModule&,
                                          const std::vector<torch::Tensor>& predictions) {
  last_file_ = file_for(trainer, "predictions.pt");
  // One tensor, batches joined along dim 0: what torch.load(weights_only=True) reads.
  write_tensor(predictions.empty() ? torch::Tensor() : torch::cat(predictions), last_file_);
}

}  // namespace fulgur
