// CombinedLoader: Lightning's four modes over loaders of different lengths,
// one loader's batch back with part(), a resumed pass equal to the rest of
// a whole one, bad input, and a fit whose training_step reads two loaders.
#include "support/test_support.hpp"
#include "support/tiny_modules.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

namespace combined_loader_test {

using namespace fulgur;
using fulgur::testing::quiet_options;
using fulgur::testing::TempDir;

namespace {

// `n` batches of one row whose input is offset + the batch's index.
std::shared_ptr<DataLoader> counting(int64_t n, double offset) {
  std::vector<Batch> batches;
  for (int64_t i = 0; i < n; ++i) {
    batches.push_back({torch::full({1, 4}, offset + static_cast<double>(i)), torch::full({1}, offset + static_cast<double>(i))});
  }
  return std::make_shared<TensorBatchLoader>(std::move(batches));
}

CombinedLoader::Loaders two() { return {{"a", counting(3, 0.0)}, {"b", counting(5, 100.0)}}; }

// What each batch holds: "a:i" / "b:j" per part, joined.
std::vector<std::string> read(CombinedLoader& loader, int64_t first = 0) {
  std::vector<std::string> out;
  auto batches = loader.iterate(first);
  while (auto batch = batches->next()) {
    std::string text;
    for (const std::string name : {"a", "b"}) {
      if (!CombinedLoader::has_part(*batch, name)) continue;
      text += fmt::format("{}{}:{}", text.empty() ? "" : " ", name,
                          static_cast<int64_t>(CombinedLoader::part(*batch, name).input[0][0].item<double>()) % 100);
    }
    out.push_back(text);
  }
  return out;
}

}  // namespace

TEST_CASE("combined loader: max_size_cycle, max_size, min_size and sequential, as Lightning's") {
  CombinedLoader cycle(two());
  CHECK(cycle.size() == 5);
  CHECK(read(cycle) == std::vector<std::string>{"a:0 b:0", "a:1 b:1", "a:2 b:2", "a:0 b:3", "a:1 b:4"});
  CombinedLoader longest(two(), CombinedLoader::parse_mode("max_size"));
  CHECK(read(longest) == std::vector<std::string>{"a:0 b:0", "a:1 b:1", "a:2 b:2", "b:3", "b:4"});
  CombinedLoader shortest(two(), CombinedLoader::Mode::MinSize);
  CHECK(shortest.size() == 3);
  CHECK(read(shortest) == std::vector<std::string>{"a:0 b:0", "a:1 b:1", "a:2 b:2"});
  CombinedLoader sequential(two(), CombinedLoader::Mode::Sequential);
  CHECK(sequential.size() == 8);
  CHECK(read(sequential) == std::vector<std::string>{"a:0", "a:1", "a:2", "b:0", "b:1", "b:2", "b:3", "b:4"});
  // The first loader's batch is the combined batch's input and target (its size).
  auto batches = cycle.iterate(0);
  const Batch first = *batches->next();
  CHECK(first.size() == 1);
  CHECK(torch::equal(first.input, CombinedLoader::part(first, "a").input));
  auto in_order = sequential.iterate(3);
  CHECK(in_order->next()->tensors.at("dataloader_idx").item<int64_t>() == 1);
}

TEST_CASE("combined loader: a pass resumed at batch k yields what the whole pass yields from k on") {
  for (const auto mode : {CombinedLoader::Mode::MaxSizeCycle, CombinedLoader::Mode::MaxSize,
                          CombinedLoader::Mode::MinSize, CombinedLoader::Mode::Sequential}) {
    CombinedLoader loader(two(), mode);
    const auto whole = read(loader);
    for (int64_t k = 0; k <= loader.size(); ++k) {
      CAPTURE(k);
      CHECK(read(loader, k) == std::vector<std::string>(whole.begin() + k, whole.end()));
    }
  }
}

TEST_CASE("combined loader: bad input names the loader or the mode") {
  CHECK_THROWS_WITH_AS(CombinedLoader({}), "[CombinedLoader] needs at least one loader", std::invalid_argument);
  CHECK_THROWS_WITH_AS(CombinedLoader({{"a", counting(1, 0)}, {"a", counting(1, 0)}}),
                       "[CombinedLoader] loader name 'a' repeats", std::invalid_argument);
  CHECK_THROWS_WITH_AS(CombinedLoader({{"a/b", counting(1, 0)}}),
                       "[CombinedLoader] loader name 'a/b' must be non-empty, without '/'", std::invalid_argument);
  CHECK_THROWS_WITH_AS(CombinedLoader({{"a", nullptr}}), "[CombinedLoader] loader 'a' is null", std::invalid_argument);
  CHECK_THROWS_WITH_AS(CombinedLoader::parse_mode("longest"),
                       "[CombinedLoader] mode 'longest': expected one of max_size_cycle, max_size, min_size, sequential",
                       std::invalid_argument);
  CombinedLoader longest(two(), CombinedLoader::Mode::MaxSize);
  auto batches = longest.iterate(4);
  CHECK_THROWS_WITH_AS(CombinedLoader::part(*batches->next(), "a"),
                       "[CombinedLoader::part] the batch holds no batch of loader 'a'", std::out_of_range);
}

TEST_CASE("combined loader: a fit whose training_step reads both loaders' batches") {
  TempDir dir("combined-loader-fit");
  struct TwoInputs : testing::RecordingModule {
    torch::Tensor training_step(const Batch& batch, int64_t) override {
      const Batch a = CombinedLoader::part(batch, "a");
      const Batch b = CombinedLoader::part(batch, "b");
      parts_seen += 2;
      return torch::mse_loss(linear->forward(a.input).squeeze(1), a.target * 0.01) +
             torch::mse_loss(linear->forward(b.input).squeeze(1), b.target * 0.01);
    }
    int64_t parts_seen = 0;
  } model;
  struct Data : DataModule {
    std::shared_ptr<DataLoader> train_dataloader() override { return std::make_shared<CombinedLoader>(two()); }
  } data;
  Trainer trainer(quiet_options(dir.path()).max_epochs(2).logger(false).enable_checkpointing(false));
  trainer.fit(model, data);
  CHECK(trainer.state().global_step() == 10);  // 5 combined batches per epoch
  CHECK(model.parts_seen == 20);
}

}  // namespace combined_loader_test
