#include "probe_commands.hpp"

#include <fstream>

namespace fulgur::testing {

std::string probe_program(const std::string& name) { return std::string(FULGUR_BINARY_DIR) + "/bin/" + name; }

std::string ddp_probe_fit(const std::filesystem::path& root, const std::string& extra, int timeout_s) {
  return probe_program("ddp_probe") + " fit --seed_everything 7 --trainer.accelerator cpu " +
         "--trainer.enable_progress_bar false --trainer.num_sanity_val_steps 0 --trainer.process_group_timeout " +
         std::to_string(timeout_s) + " --trainer.default_root_dir " + root.string() + " " + extra;
}

std::string ddp_probe_fit_named(const TempDir& dir, const std::string& name, const std::string& extra) {
  return ddp_probe_fit(dir.path() / name,
                       "--trainer.max_epochs 2 --model.output " + (dir.path() / (name + ".pt")).string() + " " + extra);
}

CommandResult run_in_one_launch(const std::string& program, int world, const std::filesystem::path& file,
                                const std::vector<std::string>& command_lines, int timeout_s) {
  {
    std::ofstream out(file);
    for (const std::string& line : command_lines) out << line << "\n";
  }
  return run_command(program + " runs " + std::to_string(world) + " " + file.string(), timeout_s);
}

}  // namespace fulgur::testing
