#include <fulgur/callbacks/loggers/make_loggers.hpp>

#include <fulgur/trainer/loggers/csv_logger.hpp>
#include <fulgur/trainer/loggers/run_folder.hpp>
#include <fulgur/callbacks/loggers/tensor_board_logger.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <stdexcept>

namespace fulgur {

const std::vector<std::string>& known_logger_names() {
  static const std::vector<std::string> names = {"csv", "tensorboard"};
  return names;
}

std::vector<std::shared_ptr<Logger>> make_loggers(const std::vector<std::string>& names,
                                                  const std::filesystem::path& root_dir, const std::string& name) {
  for (size_t i = 0; i < names.size(); ++i) {
    const auto& known = known_logger_names();
    if (std::find(known.begin(), known.end(), names[i]) == known.end()) {
      throw std::invalid_argument(
          fmt::format("[make_loggers] unknown logger '{}' (expected one of {})", names[i], fmt::join(known, ", ")));
    }
    if (std::find(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(i), names[i]) !=
        names.begin() + static_cast<std::ptrdiff_t>(i)) {
      throw std::invalid_argument(fmt::format("[make_loggers] logger '{}' is given twice", names[i]));
    }
  }
  std::vector<std::shared_ptr<Logger>> loggers;
  if (names.empty()) return loggers;
  // Each logger would otherwise pick its own next version, and the second
  // would see the first's folder and take the one after.
  const int64_t version = next_version(root_dir / name);
  for (const auto& kind : names) {
    if (kind == "csv") {
      loggers.push_back(std::make_shared<CSVLogger>(root_dir, name, version));
    } else {
      loggers.push_back(std::make_shared<TensorBoardLogger>(root_dir, name, version));
    }
  }
  return loggers;
}

}  // namespace fulgur
