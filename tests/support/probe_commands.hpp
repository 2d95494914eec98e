#pragma once

#include "test_support.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace fulgur::testing {

/// bin/<name> in the build tree: a program of the probes' multi-call binary.
std::string probe_program(const std::string& name);

/// `ddp_probe fit` as the multi-process tests run it: seed 7, CPU, no
/// progress bar, no sanity check, collectives failing after `timeout_s`, the
/// run folder `root`; then `extra` (devices, batch size, the model's knobs).
std::string ddp_probe_fit(const std::filesystem::path& root, const std::string& extra, int timeout_s = 60);

/// ddp_probe_fit for 2 epochs in run folder dir/name, writing the final
/// parameters to dir/name.pt: what the equivalence tests compare.
std::string ddp_probe_fit_named(const TempDir& dir, const std::string& name, const std::string& extra);

/// `program runs WORLD FILE` (tests/probes/probe_runs.hpp): each of
/// `command_lines` (a probe's arguments after the program) one after another
/// in one launch of `world` ranks, so the ranks start once, not once per run.
/// FILE, written here, is `file`.
CommandResult run_in_one_launch(const std::string& program, int world, const std::filesystem::path& file,
                                const std::vector<std::string>& command_lines, int timeout_s = 300);

}  // namespace fulgur::testing
