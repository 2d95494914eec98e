#include <fulgur/trainer/checkpoint/checkpoint_locator.hpp>

#include <fulgur/trainer/checkpoint/checkpoint_connector.hpp>
#include <fulgur/engine/checkpoint/checkpoint_error.hpp>
#include <fulgur/engine/checkpoint/sharded_checkpoint.hpp>
#include <fulgur/callbacks/model_checkpoint.hpp>
#include <fulgur/trainer/run_identity.hpp>
#include <fulgur/trainer/trainer.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <iostream>

namespace fulgur {
namespace {

using Dict = c10::impl::GenericDict;

std::vector<std::filesystem::path> checkpoint_files(const std::vector<std::filesystem::path>& dirs) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& dir : dirs) {
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      if (entry.is_regular_file(ec) && entry.path().extension() == ".ckpt" &&
          entry.path().filename().string().front() != '.') {
        files.push_back(entry.path());
      }
    }
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  // Newest first; a name breaks ties so the order is stable.
  std::stable_sort(files.begin(), files.end(), [](const auto& a, const auto& b) {
    std::error_code e;
    return std::filesystem::last_write_time(a, e) > std::filesystem::last_write_time(b, e);
  });
  return files;
}

}  // namespace

std::vector<std::filesystem::path> CheckpointLocator::search_dirs() const {
  std::vector<std::filesystem::path> dirs;
  for (const auto& callback : trainer_.callbacks()) {
    if (auto* mc = dynamic_cast<ModelCheckpoint*>(callback.get())) {
      if (!mc->dirpath().empty()) dirs.push_back(mc->dirpath());
    }
  }
  // Every version of every run folder under the root (a fresh process logs
  // to a new version; a run without loggers still finds the ones with).
  const std::filesystem::path root = trainer_.config().options.default_root_dir();
  std::vector<std::filesystem::path> version_parents;
  for (const auto& logger : trainer_.loggers()) {
    // An open version stays open: log_dir() would claim it.
    const auto open = logger->open_versions_dir();
    version_parents.push_back(open ? *open : logger->log_dir().parent_path());
  }
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(root, ec)) {
    if (entry.is_directory(ec)) version_parents.push_back(entry.path());
  }
  for (const auto& parent : version_parents) {
    for (const auto& entry : std::filesystem::directory_iterator(parent, ec)) {
      if (entry.is_directory(ec) && entry.path().filename().string().rfind("version_", 0) == 0) {
        dirs.push_back(entry.path() / "checkpoints");
      }
    }
  }
  dirs.push_back(root / "checkpoints");
  return dirs;
}

std::optional<std::filesystem::path> CheckpointLocator::find_newest(
    const std::function<bool(const Checkpoint&, const std::filesystem::path&)>& accept) const {
  for (const auto& file : checkpoint_files(search_dirs())) {
    std::optional<Checkpoint> checkpoint;
    try {
      checkpoint = CheckpointIO::load(file);
      if (is_sharded_checkpoint(*checkpoint) && !shards_complete(*checkpoint, file)) {
        throw CheckpointError("a shard of this sharded checkpoint is missing");
      }
    } catch (const CheckpointError& e) {
      std::cerr << "fulgur: warning: skipping checkpoint " << file.string() << ": " << e.what() << std::endl;
      continue;
    }
    if (accept(*checkpoint, file)) return file;
  }
  return std::nullopt;
}

std::filesystem::path CheckpointLocator::resolve(const std::string& ckpt_path) const {
  if (ckpt_path != "last" && ckpt_path != "best") return ckpt_path;
  std::vector<const ModelCheckpoint*> model_checkpoints;
  for (const auto& callback : trainer_.callbacks()) {
    if (const auto* mc = dynamic_cast<const ModelCheckpoint*>(callback.get())) model_checkpoints.push_back(mc);
  }
  // After fit in this process, the ModelCheckpoint knows its best itself.
  if (ckpt_path == "best") {
    for (const auto* mc : model_checkpoints) {
      if (!mc->best_model_path().empty()) return mc->best_model_path();
    }
  }
  std::optional<Checkpoint> newest;
  const auto found = find_newest([&](const Checkpoint& checkpoint, const std::filesystem::path&) {
    newest = checkpoint;
    return true;
  });
  if (!found) {
    std::string searched;
    for (const auto& dir : search_dirs()) searched += (searched.empty() ? "" : ", ") + dir.string();
    throw CheckpointError(fmt::format("[CheckpointLocator::resolve] ckpt_path '{}': no loadable checkpoint in {}",
                                      ckpt_path, searched));
  }
  if (ckpt_path == "last") return *found;
  // A new process asks the same ModelCheckpoint's state in the newest checkpoint.
  if (newest->contains("callbacks") && newest->at("callbacks").isGenericDict()) {
    const Dict saved = newest->at("callbacks").toGenericDict();
    for (const auto* mc : model_checkpoints) {
      if (!saved.contains(mc->state_key()) || !saved.at(mc->state_key()).isGenericDict()) continue;
      CallbackState state;
      for (const auto& entry : saved.at(mc->state_key()).toGenericDict()) {
        state[entry.key().toStringRef()] = entry.value();
      }
      const std::string best = ModelCheckpoint::best_model_path_in(state);
      if (!best.empty()) return best;
    }
  }
  throw CheckpointError(fmt::format(
      "[CheckpointLocator::resolve] ckpt_path 'best': the newest checkpoint {} records no best model "
      "(ModelCheckpoint needs a monitor)",
      found->string()));
}

std::string CheckpointLocator::auto_resume_path(const std::string& run_identity) const {
  if (restart_count() == 0) return "";
  std::vector<std::string> others;
  const auto found = find_newest([&](const Checkpoint& checkpoint, const std::filesystem::path& file) {
    const auto key = CheckpointConnector::kRunIdentityKey;
    const std::string theirs =
        checkpoint.contains(key) && checkpoint.at(key).isString() ? checkpoint.at(key).toStringRef() : "none recorded";
    if (theirs == run_identity) return true;
    others.push_back(fmt::format("{} ({})", file.string(), theirs));
    return false;
  });
  if (trainer_.is_global_zero()) {
    if (found) {
      std::cerr << "fulgur: restarted job: resuming from " << found->string() << std::endl;
    } else if (!others.empty()) {
      std::cerr << fmt::format("fulgur: restarted job: starting fresh; no checkpoint of this run ({}) was found, "
                               "only another run's: {}",
                               run_identity, others.front())
                << std::endl;
    }
  }
  return found ? found->string() : "";
}

}  // namespace fulgur
