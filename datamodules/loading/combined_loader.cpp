#include <fulgur/datamodules/loading/combined_loader.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <stdexcept>

namespace fulgur {
namespace {

void add_part(Batch& combined, const std::string& name, const Batch& part) {
  if (part.input.defined()) combined.tensors[name + "/input"] = part.input;
  if (part.target.defined()) combined.tensors[name + "/target"] = part.target;
  for (const auto& [key, tensor] : part.tensors) combined.tensors[name + "/" + key] = tensor;
}

}  // namespace

/// One pass: a position in every loader, each loader's own iterator.
class CombinedLoader::Iterator : public BatchIterator {
 public:
  Iterator(CombinedLoader& owner, int64_t first_batch) : owner_(owner), index_(first_batch) {
    const size_t n = owner_.loaders_.size();
    iterators_.resize(n);
    if (owner_.mode_ == Mode::Sequential) return;  // opened one at a time in next()
    for (size_t i = 0; i < n; ++i) {
      const int64_t size = owner_.loaders_[i].second->size();
      if (size == 0) continue;
      // A resumed pass: a cycled loader is as far into its current round.
      const int64_t start = owner_.mode_ == Mode::MaxSizeCycle ? first_batch % size : first_batch;
      if (start < size) iterators_[i] = owner_.loaders_[i].second->iterate(start);
    }
  }

  std::optional<Batch> next() override {
    if (index_ >= owner_.size()) return std::nullopt;
    const int64_t index = index_++;
    return owner_.mode_ == Mode::Sequential ? next_sequential(index) : next_together();
  }

 private:
  std::optional<Batch> next_together() {
    Batch combined;
    bool first = true;
    for (size_t i = 0; i < iterators_.size(); ++i) {
      const auto& [name, loader] = owner_.loaders_[i];
      std::optional<Batch> part = iterators_[i] ? iterators_[i]->next() : std::nullopt;
      if (!part && owner_.mode_ == Mode::MaxSizeCycle && loader->size() > 0) {
        iterators_[i] = loader->iterate(0);  // start over, same epoch order
        part = iterators_[i]->next();
      }
      if (!part) {
        iterators_[i].reset();  // ran out (max_size): absent from now on
        continue;
      }
      if (first) {
        combined.input = part->input;
        combined.target = part->target;
        first = false;
      }
      add_part(combined, name, *part);
    }
    return combined;
  }

  std::optional<Batch> next_sequential(int64_t index) {
    size_t i = 0;
    int64_t within = index;
    while (within >= owner_.loaders_[i].second->size()) within -= owner_.loaders_[i++].second->size();
    if (!iterators_[i]) {
      for (auto& open : iterators_) open.reset();  // the earlier loaders are done
      iterators_[i] = owner_.loaders_[i].second->iterate(within);
    }
    std::optional<Batch> part = iterators_[i]->next();
    if (!part) return std::nullopt;
    Batch combined;
    combined.input = part->input;
    combined.target = part->target;
    add_part(combined, owner_.loaders_[i].first, *part);
    combined.tensors["dataloader_idx"] = torch::tensor(static_cast<int64_t>(i));
    return combined;
  }

  CombinedLoader& owner_;
  int64_t index_;
  std::vector<std::unique_ptr<BatchIterator>> iterators_;
};

CombinedLoader::CombinedLoader(Loaders loaders, Mode mode) : loaders_(std::move(loaders)), mode_(mode) {
  if (loaders_.empty()) throw std::invalid_argument("[CombinedLoader] needs at least one loader");
  std::set<std::string> names;
  for (const auto& [name, loader] : loaders_) {
    if (name.empty() || name.find('/') != std::string::npos) {
      throw std::invalid_argument(fmt::format("[CombinedLoader] loader name '{}' must be non-empty, without '/'", name));
    }
    if (!names.insert(name).second) throw std::invalid_argument(fmt::format("[CombinedLoader] loader name '{}' repeats", name));
    if (!loader) throw std::invalid_argument(fmt::format("[CombinedLoader] loader '{}' is null", name));
  }
}

CombinedLoader::Mode CombinedLoader::parse_mode(const std::string& mode) {
  if (mode == "max_size_cycle") return Mode::MaxSizeCycle;
  if (mode == "max_size") return Mode::MaxSize;
  if (mode == "min_size") return Mode::MinSize;
  if (mode == "sequential") return Mode::Sequential;
  throw std::invalid_argument(fmt::format(
      "[CombinedLoader] mode '{}': expected one of max_size_cycle, max_size, min_size, sequential", mode));
}

int64_t CombinedLoader::size() const {
  int64_t largest = 0, smallest = loaders_.front().second->size(), total = 0;
  for (const auto& [name, loader] : loaders_) {
    largest = std::max(largest, loader->size());
    smallest = std::min(smallest, loader->size());
    total += loader->size();
  }
  switch (mode_) {
    case Mode::MinSize: return smallest;
    case Mode::Sequential: return total;
    default: return largest;
  }
}

void CombinedLoader::set_epoch(int64_t epoch) {
  for (auto& [name, loader] : loaders_) loader->set_epoch(epoch);
}

void CombinedLoader::shard(const Shard& shard) {
  for (auto& [name, loader] : loaders_) loader->shard(shard);
}

void CombinedLoader::set_device(const torch::Device& device) {
  for (auto& [name, loader] : loaders_) loader->set_device(device);
}

std::unique_ptr<BatchIterator> CombinedLoader::iterate(int64_t first_batch) {
  return std::make_unique<Iterator>(*this, first_batch);
}

bool CombinedLoader::has_part(const Batch& batch, const std::string& name) {
  const std::string prefix = name + "/";
  const auto it = batch.tensors.lower_bound(prefix);
  return it != batch.tensors.end() && it->first.compare(0, prefix.size(), prefix) == 0;
}

Batch CombinedLoader::part(const Batch& batch, const std::string& name) {
  if (!has_part(batch, name)) {
    throw std::out_of_range(fmt::format("[CombinedLoader::part] the batch holds no batch of loader '{}'", name));
  }
  const std::string prefix = name + "/";
  Batch out;
  for (auto it = batch.tensors.lower_bound(prefix);
       it != batch.tensors.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
    const std::string key = it->first.substr(prefix.size());
    if (key == "input") {
      out.input = it->second;
    } else if (key == "target") {
      out.target = it->second;
    } else {
      out.tensors[key] = it->second;
    }
  }
  return out;
}

}  // namespace fulgur
