#include <fulgur/callbacks/model_checkpoint.hpp>

#include <fulgur/trainer/checkpoint/checkpoint_connector.hpp>
#include <fulgur/engine/checkpoint/sharded_checkpoint.hpp>
#include <fulgur/trainer/trainer.hpp>

#include <fmt/format.h>

#include <unistd.h>

#include <cmath>
#include <iostream>
#include <limits>
#include <stdexcept>

namespace fulgur {
namespace {

int64_t effective_every_n_epochs(const ModelCheckpointOptions& o) {
  if (o.every_n_epochs()) return *o.every_n_epochs();
  return (o.every_n_train_steps() == 0 && o.train_time_interval() == 0.0) ? 1 : 0;
}

/// Points `target` at the file `source` holds, atomically: a hard link under
/// a temp name renamed over the target (a copy where links are refused).
void replace_with_link(const std::filesystem::path& source, const std::filesystem::path& target) {
  // Appended piecewise: GCC 12 warns (-Wstringop-overflow, a false positive) on "." + string.
  std::string name = ".";
  name += target.filename().string();
  name += ".tmp.link";
  const auto temp = target.parent_path() / name;
  std::error_code ec;
  std::filesystem::remove(temp, ec);
  std::filesystem::create_hard_link(source, temp, ec);
  if (ec) std::filesystem::copy_file(source, temp, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::rename(temp, target);
}

}  // namespace

ModelCheckpoint::ModelCheckpoint(ModelCheckpointOptions options) : options_(std::move(options)) {
  const auto& o = options_;
  o.validate();
  if (static_cast<int>(o.every_n_train_steps() > 0) + static_cast<int>(o.every_n_epochs().value_or(0) > 0) +
          static_cast<int>(o.train_time_interval() > 0) > 1) {
    throw std::invalid_argument(
        "[ModelCheckpoint::ModelCheckpoint] every_n_train_steps, every_n_epochs and train_time_interval are mutually "
        "exclusive");
  }
  if (!o.dirpath().empty()) dirpath_ = o.dirpath();
}

std::string ModelCheckpoint::state_key() const {
  return fmt::format("ModelCheckpoint{{'monitor': '{}', 'mode': '{}', 'every_n_train_steps': {}, 'every_n_epochs': {}, "
                     "'train_time_interval': {}}}",
                     options_.monitor(), to_string(options_.mode()), options_.every_n_train_steps(),
                     effective_every_n_epochs(options_), options_.train_time_interval());
}

CallbackState ModelCheckpoint::state_dict() const {
  auto best_k = c10::impl::GenericDict(c10::StringType::get(), c10::AnyType::get());
  for (const auto& [path, score] : best_k_models_) best_k.insert(path, score);
  CallbackState state;
  state["monitor"] = options_.monitor();
  state["dirpath"] = dirpath_.string();
  state["best_model_path"] = best_model_path_;
  state["best_model_score"] = best_model_score_ ? c10::IValue(*best_model_score_) : c10::IValue();
  state["last_model_path"] = last_model_path_;
  state["best_k_models"] = best_k;
  return state;
}

namespace {

std::string text_in(const CallbackState& state, const char* key) {
  const auto it = state.find(key);
  return it != state.end() && it->second.isString() ? it->second.toStringRef() : std::string();
}

}  // namespace

std::string ModelCheckpoint::best_model_path_in(const CallbackState& state) {
  return text_in(state, "best_model_path");
}

void ModelCheckpoint::load_state_dict(const CallbackState& state) {
  best_model_path_ = best_model_path_in(state);
  last_model_path_ = text_in(state, "last_model_path");
  const auto score = state.find("best_model_score");
  best_model_score_ = score != state.end() && score->second.isDouble() ? std::optional(score->second.toDouble())
                                                                        : std::nullopt;
  best_k_models_.clear();
  const auto best_k = state.find("best_k_models");
  if (best_k != state.end() && best_k->second.isGenericDict()) {
    for (const auto& entry : best_k->second.toGenericDict()) {
      if (entry.key().isString() && entry.value().isDouble()) {
        best_k_models_[entry.key().toStringRef()] = entry.value().toDouble();
      }
    }
  }
}

void ModelCheckpoint::setup(Trainer& trainer, LightningModule&) {
  if (options_.dirpath().empty()) dirpath_ = trainer.log_dir() / "checkpoints";
}

void ModelCheckpoint::on_train_start(Trainer&, LightningModule&) { last_time_save_ = std::chrono::steady_clock::now(); }

void ModelCheckpoint::on_train_batch_end(Trainer& trainer, LightningModule&, const torch::Tensor&, const Batch&,
                                         int64_t) {
  const int64_t step = trainer.state().global_step();
  if (step == last_saved_step_) return;  // an accumulation batch, or saved already
  if (options_.every_n_train_steps() > 0) {
    if (step > 0 && step % options_.every_n_train_steps() == 0) save(trainer, /*ranked=*/true);
    return;
  }
  if (options_.train_time_interval() > 0) {
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - last_time_save_).count();
    // Clocks differ between processes: rank 0 decides for everyone.
    const double due = trainer.strategy()
                           .broadcast(torch::tensor({elapsed >= options_.train_time_interval() ? 1.0 : 0.0}), 0)
                           .item<double>();
    if (due > 0) {
      save(trainer, /*ranked=*/true);
      last_time_save_ = std::chrono::steady_clock::now();
    }
  }
}

void ModelCheckpoint::on_train_epoch_end(Trainer& trainer, LightningModule&) {
  const int64_t every = effective_every_n_epochs(options_);
  if (every > 0 && (trainer.state().current_epoch() + 1) % every == 0) save(trainer, /*ranked=*/true);
}

void ModelCheckpoint::on_train_end(Trainer& trainer, LightningModule&) {
  // Training stopped (max_epochs, max_steps, a stop request): the resumable
  // state right after the last step.
  if (options_.save_last()) save(trainer, /*ranked=*/false);
}

void ModelCheckpoint::on_exception(Trainer& trainer, LightningModule&, const std::exception_ptr&) {
  // As Lightning: not in fast_dev_run or the sanity check, and not twice for one step.
  if (!options_.save_on_exception() || trainer.state().stage() != Stage::Fit || trainer.state().sanity_checking() || trainer.config().options.fast_dev_run() > 0 ||
      trainer.state().global_step() == last_saved_step_) {
    return;
  }
  save(trainer, /*ranked=*/true);
  if (trainer.is_global_zero()) {
    std::cerr << "fulgur: training failed; checkpoint saved at step " << trainer.state().global_step() << " in "
              << dirpath_.string() << std::endl;
  }
}

bool ModelCheckpoint::better(double candidate, double reference) const {
  if (options_.monitor().empty()) return candidate > reference;  // scores are steps: newer is better
  return options_.mode() == MonitorMode::Min ? candidate < reference : candidate > reference;
}

std::string ModelCheckpoint::worst_path() const {
  std::string worst;
  for (const auto& [path, score] : best_k_models_) {
    if (worst.empty() || better(best_k_models_.at(worst), score)) worst = path;
  }
  return worst;
}

std::string ModelCheckpoint::format_filename(const std::string& template_text, int64_t epoch, int64_t step,
                                             const std::map<std::string, double>& metrics) {
  std::string out;
  size_t at = 0;
  while (at < template_text.size()) {
    const size_t open = template_text.find('{', at);
    if (open == std::string::npos) {
      out += template_text.substr(at);
      break;
    }
    const size_t close = template_text.find('}', open);
    if (close == std::string::npos) {
      throw std::invalid_argument(fmt::format("[ModelCheckpoint] filename '{}' has an unclosed '{{'", template_text));
    }
    out += template_text.substr(at, open - at);
    const std::string field = template_text.substr(open + 1, close - open - 1);
    const size_t colon = field.find(':');
    const std::string name = field.substr(0, colon);
    const std::string spec = colon == std::string::npos ? "" : field.substr(colon);
    out += name + "=";
    if (name == "epoch") {
      out += std::to_string(epoch);
    } else if (name == "step") {
      out += std::to_string(step);
    } else {
      const auto it = metrics.find(name);
      const double value = it == metrics.end() ? std::numeric_limits<double>::quiet_NaN() : it->second;
      try {
        out += fmt::format(fmt::runtime("{" + spec + "}"), value);
      } catch (const fmt::format_error& e) {
        throw std::invalid_argument(
            fmt::format("[ModelCheckpoint] filename '{}': bad format '{}' for {}: {}", template_text, spec, name,
                        e.what()));
      }
    }
    at = close + 1;
  }
  return out;
}

void ModelCheckpoint::save(Trainer& trainer, bool ranked) {
  const int64_t step = trainer.state().global_step();
  const bool writer = trainer.is_global_zero();
  std::filesystem::path ranked_path;
  if (ranked && options_.save_top_k() != 0) {
    double score = static_cast<double>(step);  // no monitor: the newest is best
    bool have_score = true;
    std::map<std::string, double> metrics = trainer.state().callback_metrics();
    if (!options_.monitor().empty()) {
      const auto it = metrics.find(options_.monitor());
      const double local = it == metrics.end() ? std::numeric_limits<double>::quiet_NaN() : it->second;
      // Every process must take the same decision: use rank 0's value.
      score = trainer.state().interrupted()
                  ? local
                  : trainer.strategy().broadcast(torch::tensor({local}, torch::kFloat64), 0).item<double>();
      metrics[options_.monitor()] = score;
      have_score = !std::isnan(score);
      if (!have_score && !warned_missing_monitor_ && writer) {
        std::cerr << "fulgur: warning: ModelCheckpoint monitor '" << options_.monitor()
                  << "' has no value yet; skipping the ranked checkpoint" << std::endl;
        warned_missing_monitor_ = true;
      }
    }
    if (have_score) {
      const std::string name = format_filename(options_.filename().empty() ? "{epoch}-{step}" : options_.filename(),
                                               trainer.state().current_epoch(), step, metrics);
      const std::filesystem::path path = dirpath_ / (name + ".ckpt");
      const bool above_worst = !best_k_models_.empty() && better(score, best_k_models_.at(worst_path()));
      const bool keep = options_.save_top_k() == -1 ||
                        static_cast<int64_t>(best_k_models_.size()) < options_.save_top_k() ||
                        best_k_models_.count(path.string()) > 0 || above_worst;
      if (keep) {
        // The table is updated first, so the checkpoint carries itself in it.
        best_k_models_[path.string()] = score;
        std::string dropped;
        if (options_.save_top_k() > 0 && static_cast<int64_t>(best_k_models_.size()) > options_.save_top_k()) {
          dropped = worst_path();
          best_k_models_.erase(dropped);
        }
        best_model_path_.clear();
        for (const auto& [p, s] : best_k_models_) {
          if (best_model_path_.empty() || better(s, *best_model_score_)) {
            best_model_path_ = p;
            best_model_score_ = s;
          }
        }
        if (options_.save_last()) last_model_path_ = (dirpath_ / "last.ckpt").string();
        // Only once the new file exists (an asynchronous write may still run):
        // the checkpoint it outranked goes, and last.ckpt becomes a link to it
        // (same content: not written twice; a sharded one's shards stay named
        // after the ranked file, its metadata says so).
        const bool drop = writer && !dropped.empty() && dropped != path.string();
        const bool link_last = writer && options_.save_last();
        const std::filesystem::path last = dirpath_ / "last.ckpt";
        std::function<void()> after_write;
        if (drop || link_last) {
          after_write = [drop, dropped, link_last, path, last] {
            if (drop) remove_checkpoint(dropped);
            if (link_last) {
              replace_with_link(path, last);
              remove_shards(last);
            }
          };
        }
        trainer.save_checkpoint(path, options_.save_weights_only(), std::move(after_write));
        ranked_path = path;
      }
    }
  }
  if (options_.save_last()) {
    const std::filesystem::path last = dirpath_ / "last.ckpt";
    last_model_path_ = last.string();
    // With a ranked checkpoint just written, its after_write links last.ckpt to it.
    if (ranked_path.empty()) trainer.save_checkpoint(last, options_.save_weights_only());
  }
  last_saved_step_ = step;
}

}  // namespace fulgur
