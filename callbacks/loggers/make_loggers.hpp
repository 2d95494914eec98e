#pragma once

#include <fulgur/trainer/loggers/logger.hpp>

#include <memory>
#include <string>
#include <vector>

namespace fulgur {

/// Logger names make_loggers() knows: "csv", "tensorboard".
const std::vector<std::string>& known_logger_names();

/// Builds the loggers named in `names`, in that order, all writing into the
/// same run folder `<root_dir>/<name>/version_<N>/` (one version shared by
/// all of them, decided here). Throws std::invalid_argument naming an
/// unknown or repeated name. Creates no file.
std::vector<std::shared_ptr<Logger>> make_loggers(const std::vector<std::string>& names,
                                                  const std::filesystem::path& root_dir,
                                                  const std::string& name = "fulgur_logs");

}  // namespace fulgur
