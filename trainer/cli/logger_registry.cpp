#include <fulgur/trainer/cli/logger_registry.hpp>

#include <fulgur/loggers/tensor_board_logger.hpp>
#include <fulgur/loggers/wandb_logger.hpp>
#include <fulgur/loggers/csv_logger.hpp>

#include <fmt/format.h>

#include <typeindex>

namespace fulgur::cli {

LoggerRegistry LoggerRegistry::with_builtins() {
  LoggerRegistry registry;
  const Factory csv = [](ConfigSection&, const RunFolder& f) -> std::shared_ptr<Logger> {
    return std::make_shared<CSVLogger>(f.root_dir, f.name, f.version);
  };
  const Factory tensorboard = [](ConfigSection&, const RunFolder& f) -> std::shared_ptr<Logger> {
    return std::make_shared<TensorBoardLogger>(f.root_dir, f.name, f.version);
  };
  registry.add("csv", csv);
  registry.add("CSVLogger", csv);
  registry.add("tensorboard", tensorboard);
  registry.add("TensorBoardLogger", tensorboard);
  registry.add<WandbLogger>("wandb");
  registry.add<WandbLogger>("WandbLogger");
  return registry;
}

std::vector<std::shared_ptr<Logger>> LoggerRegistry::create(YAML::Node node, const std::string& path,
                                                            const std::filesystem::path& root_dir,
                                                            const std::string& name) const {
  bool enabled = false;
  if (node.IsDefined() && node.IsScalar() && YAML::convert<bool>::decode(node, enabled)) {
    node = enabled ? YAML::Node("csv") : YAML::Node();
  } else if (node.IsDefined() && node.IsScalar() && node.Scalar().find(',') != std::string::npos) {
    YAML::Node names(YAML::NodeType::Sequence);
    const std::string& text = node.Scalar();
    size_t start = 0;
    while (true) {
      const size_t comma = text.find(',', start);
      std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      part.erase(0, part.find_first_not_of(' '));
      part.erase(part.find_last_not_of(' ') + 1);
      names.push_back(part);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    node = names;
  }
  if (!node.IsDefined() || node.IsNull() || (node.IsSequence() && node.size() == 0)) return {};
  // The version stays open: the Trainer claims one for all of them when the run starts.
  const RunFolder folder{root_dir, name, std::nullopt};
  auto loggers = ClassRegistry::create(node, path, folder);
  for (size_t i = 0; i < loggers.size(); ++i) {
    const Logger& logger = *loggers[i];
    for (size_t j = 0; j < i; ++j) {
      const Logger& earlier = *loggers[j];
      if (std::type_index(typeid(logger)) == std::type_index(typeid(earlier))) {
        throw ConfigError(fmt::format("{}[{}]: a second logger of the class of {}[{}] (loggers share one run folder)",
                                      path, i, path, j));
      }
    }
  }
  return loggers;
}

}  // namespace fulgur::cli
