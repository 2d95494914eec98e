// examples/ensemble: 32 runs of the heat rod (half C++, half Fortran
// clients, 8 at a time) stream into a 2-rank training job under mpirun;
// every sample is accounted for, the surrogate meets the example's stated
// error on held-out parameters, and the plot is written.
#include "support/test_support.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <regex>
#include <string>

namespace example_ensemble_test {

using fulgur::testing::read_file;
using fulgur::testing::run_command;
using fulgur::testing::TempDir;

TEST_CASE("examples/ensemble: 32 clients in waves into 2 ranks, every sample trained, held-out error below 0.1") {
  TempDir dir("example-ensemble");
  const auto result = run_command("bash " + std::string(FULGUR_SOURCE_DIR) + "/examples/ensemble/run_local.sh " +
                                      std::string(FULGUR_BINARY_DIR) + " " + (dir / "run").string(),
                                  300);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  // 32 runs x 41 samples, all received (16 of them from the Fortran client).
  CHECK(result.output.find("fulgur: ensemble: 32 clients (0 without a goodbye): 1312 samples sent, 1312 received, 0 "
                           "refused, 0 lost") != std::string::npos);
  CHECK(read_file(dir / "run" / "clients.log").find("heat_client_fortran 31: sent 41, dropped 0") !=
        std::string::npos);
  std::smatch error;
  REQUIRE(std::regex_search(result.output, error, std::regex("18 held-out runs, mean relative error ([0-9.]+)")));
  MESSAGE("held-out relative error: " << error[1]);
  CHECK(std::stod(error[1]) < 0.1);
  CHECK(std::filesystem::file_size(dir / "run" / "error_vs_kappa.png") > 1000);
  CHECK(std::filesystem::exists(dir / "run" / "model.ckpt"));
}

}  // namespace example_ensemble_test
