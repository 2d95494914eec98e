// The sequence example from its own main(): named batch tensors (a padding
// mask), and the strategy and process count chosen by Trainer options alone.
// The Trainer starts the second rank itself; 2 processes of batch 16 must
// end where 1 process of batch 32 does.
#include "support/pickled_tensor.hpp"
#include "support/test_support.hpp"

#include <fulgur/fulgur.hpp>

#include <torch/torch.h>

#include <doctest/doctest.h>

namespace example_sequence_test {

using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {

const std::string kExample = std::string(FULGUR_BINARY_DIR) + "/bin/sequence_classifier";

struct Run {
  int exit_code;
  std::string output;
  torch::Tensor weights;
};

Run train(const TempDir& dir, const std::string& name, const std::string& flags) {
  const auto weights = dir / (name + ".pt");
  const auto result = run_command(kExample + " --max_epochs 3 --default_root_dir " + (dir / name).string() + " --weights " +
                                      weights.string() + " " + flags,
                                  240);
  torch::Tensor loaded;
  if (std::filesystem::exists(weights)) {
    loaded = fulgur::testing::load_pickled_tensor(weights);
  }
  return {result.exit_code, result.output, loaded};
}

}  // namespace

TEST_CASE("sequence example: ddp and horovod on 2 processes equal 1 process; the masked model learns") {
  TempDir dir("example-sequence");
  const Run one = train(dir, "one", "--devices 1 --batch_size 32");
  INFO(one.output);
  REQUIRE(one.exit_code == 0);
  REQUIRE(one.weights.defined());
  // Learned: the classes are balanced-ish, so chance is near 0.5.
  const auto acc_at = one.output.find("val_acc ");
  REQUIRE(acc_at != std::string::npos);
  CHECK(std::stod(one.output.substr(acc_at + 8)) > 0.8);

  for (const std::string strategy : {"ddp", "horovod"}) {
    CAPTURE(strategy);
    const Run two = train(dir, strategy, "--devices 2 --batch_size 16 --strategy " + strategy);
    INFO(two.output);
    REQUIRE(two.exit_code == 0);
    REQUIRE(two.weights.defined());
    CHECK(torch::allclose(two.weights, one.weights, 1e-5, 1e-5));
    // Only rank 0 writes the run folder.
    CHECK(std::filesystem::exists(dir / strategy / "fulgur_logs" / "version_0" / "metrics.csv"));
    CHECK_FALSE(std::filesystem::exists(dir / strategy / "fulgur_logs" / "version_1"));
  }
  // single_device cannot use 2 processes: one clear error, nothing started,
  // and the command line's exit code for bad input.
  const Run bad = train(dir, "bad", "--devices 2 --strategy single_device");
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find("strategy 'single_device' needs devices=1 and num_nodes=1") != std::string::npos);
}

TEST_CASE("Batch: named tensors move together and name what is missing; pad_sequences masks the padding") {
  fulgur::Batch batch{torch::ones({2, 3}), torch::zeros({2}), {{"mask", torch::ones({2, 3}, torch::kBool)}}};
  CHECK(batch.contains("mask"));
  CHECK(batch["mask"].dtype() == torch::kBool);
  CHECK_THROWS_WITH_AS(batch["lengths"], "[Batch::operator[]] the batch has no tensor 'lengths' (it has: input, target, mask)",
                       std::out_of_range);
  const fulgur::Batch doubled = batch.map([](const torch::Tensor& t) { return t.to(torch::kDouble); });
  CHECK(doubled["mask"].dtype() == torch::kDouble);
  CHECK(doubled.input.dtype() == torch::kDouble);

  const auto padded = fulgur::pad_sequences({torch::tensor({5, 6, 7}), torch::tensor({8})}, -1);
  CHECK(torch::equal(padded.padded, torch::tensor({{5, 6, 7}, {8, -1, -1}})));
  CHECK(torch::equal(padded.mask, torch::tensor({{true, true, true}, {true, false, false}})));
  CHECK_THROWS_WITH_AS(fulgur::pad_sequences({torch::zeros({2, 3}), torch::zeros({2, 4})}),
                       "[pad_sequences] sequence 1 has shape [2, 4] and type float but sequence 0 has [2, 3] and "
                       "float; only the first dimension (the length) may differ",
                       std::invalid_argument);

  // The default collate stacks named tensors like the input.
  class Named : public fulgur::Dataset {
   public:
    int64_t size() const override { return 4; }
    fulgur::Example get(int64_t i) const override {
      return {torch::full({2}, i), fulgur::class_index(i % 2), {{"weight", torch::full({1}, 10.0 * i)}}};
    }
  };
  const fulgur::Batch collated = Named().get_batch({1, 3});
  CHECK(torch::equal(collated["weight"], torch::tensor({{10.0f}, {30.0f}})));
  CHECK(torch::equal(collated.target, torch::tensor({1, 1}, torch::kLong)));
}

}  // namespace example_sequence_test
