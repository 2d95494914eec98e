// fulgur::cli::parse_options: a main()'s own flags read into options structs
// by the command line's typed reader (examples/*/main.cpp use it).
#include <fulgur/fulgur.hpp>

#include "support/test_support.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace parse_options_test {

using fulgur::testing::run_command;

namespace {

#define PARSE_TEST_FLAGS(X)                                                                    \
  X(int64_t, batch_size, 64, "samples per batch", fulgur::check::Positive{})                   \
  X(std::string, name, "run", "a name", fulgur::check::NotEmpty{})
struct TestFlags {
  FULGUR_OPTIONS(TestFlags, PARSE_TEST_FLAGS)
};

#define CLASHING_FLAGS(X) X(int64_t, max_epochs, 1, "also a TrainerOptions field", fulgur::check::Any{})
struct ClashingFlags {
  FULGUR_OPTIONS(ClashingFlags, CLASHING_FLAGS)
};

template <class... Options>
std::tuple<Options...> parse(const std::vector<std::string>& args, Options... defaults) {
  std::vector<const char*> argv{"prog"};
  for (const auto& arg : args) argv.push_back(arg.c_str());
  return fulgur::cli::parse_options(static_cast<int>(argv.size()), argv.data(), defaults...);
}

std::string error_of(const std::vector<std::string>& args) {
  try {
    parse(args, fulgur::TrainerOptions(), TestFlags());
  } catch (const fulgur::cli::ConfigError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("parse_options: each flag goes to the struct that declares it; the values passed in are the defaults") {
  const auto [trainer, flags] =
      parse({"--devices", "2", "--strategy", "ddp", "--batch_size=32", "--fsdp.sharding_strategy", "SHARD_GRAD_OP",
             "--limit_val_batches", "0.5"},
            fulgur::TrainerOptions().max_epochs(7), TestFlags());
  CHECK(trainer.devices() == "2");
  CHECK(trainer.strategy() == fulgur::StrategyKind::DDP);
  CHECK(trainer.max_epochs() == 7);
  CHECK(trainer.fsdp().sharding_strategy() == fulgur::ShardingStrategy::ShardGradOp);
  CHECK(trainer.fsdp().state_dict_type() == fulgur::StateDictType::Full);
  CHECK(trainer.limit_val_batches().is_fraction());
  CHECK(trainer.limit_val_batches().value() == 0.5);
  CHECK(flags.batch_size() == 32);
  CHECK(flags.name() == "run");
}

TEST_CASE("parse_options: a bad flag is one error that names it") {
  CHECK(error_of({"--max_epoch", "3"}) == "unknown flag '--max_epoch'; did you mean 'max_epochs'?");
  CHECK(error_of({"--batch_size", "0"}) == "--batch_size: must be > 0, got 0");
  CHECK(error_of({"--batch_size", "many"}) == "--batch_size: expected an integer, got 'many'");
  CHECK(error_of({"--fsdp.sharding_stratgy", "FULL_SHARD"}) ==
        "unknown flag '--fsdp.sharding_stratgy'; did you mean 'fsdp.sharding_strategy'?");
  CHECK(error_of({"--batch_size"}) == "--batch_size: a value must follow the flag");
  CHECK(error_of({"batch_size", "3"}) == "unexpected argument 'batch_size': flags are --KEY VALUE (--help lists them)");
  CHECK_THROWS_WITH_AS(parse({}, fulgur::TrainerOptions(), ClashingFlags()),
                       "parse_options: 'max_epochs' is a field of both TrainerOptions and ClashingFlags; a flag must "
                       "name one",
                       fulgur::cli::ConfigError);
}

TEST_CASE("parse_options: --help lists every flag with the program's default and exits 0; --version prints the version") {
  const auto help = run_command(std::string(FULGUR_BINARY_DIR) + "/bin/gan --help", 60);
  INFO(help.output);
  CHECK(help.exit_code == 0);
  CHECK(help.output.find("usage: ") == 0);
  CHECK(help.output.find("\nTrainerOptions:\n") != std::string::npos);
  CHECK(help.output.find("  --max_epochs 8  ") != std::string::npos);  // the example's default, not TrainerOptions'
  CHECK(help.output.find("  --fsdp.KEY VALUE  ") != std::string::npos);
  CHECK(help.output.find("\nRunFlags:\n  --ckpt_path \"\"  ") != std::string::npos);
  CHECK(help.output.find("  --batch_size 64  samples per process and batch") != std::string::npos);
  CHECK(help.output.find("--version") != std::string::npos);
  const auto version = run_command(std::string(FULGUR_BINARY_DIR) + "/bin/gan --max_epochs 3 --version", 60);
  CHECK(version.exit_code == 0);
  CHECK(version.output == fmt::format("fulgur {}\n", fulgur::kVersion));
  // A bad flag ends the program as the command line does: one line, exit code 2.
  const auto bad = run_command(std::string(FULGUR_BINARY_DIR) + "/bin/gan --max_epoch 3", 60);
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find("error: unknown flag '--max_epoch'; did you mean 'max_epochs'?\n") != std::string::npos);
}

}  // namespace parse_options_test
