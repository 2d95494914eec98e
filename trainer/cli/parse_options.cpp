#include <fulgur/trainer/cli/parse_options.hpp>

#include <fulgur/core/did_you_mean.hpp>
#include <fulgur/trainer/cli/cli.hpp>
#include <fulgur/trainer/cli/dotted_key.hpp>

#include <fmt/format.h>

#include <cstdlib>
#include <iostream>
#include <map>

namespace fulgur::cli {

template TrainerOptions read_options(ConfigSection&, TrainerOptions, const std::set<std::string>&);

}  // namespace fulgur::cli

namespace fulgur::cli::detail {

template FlagTable flag_table(const TrainerOptions&);
template TrainerOptions read_flags(const YAML::Node&, TrainerOptions);

std::string flag_help(const char* name, const char* doc, const YAML::Node& default_value, bool section) {
  if (section) return fmt::format("  --{}.KEY VALUE  {} (a section)", name, doc);
  YAML::Emitter out;
  out << YAML::Flow << default_value;
  return fmt::format("  --{} {}  {}", name, out.c_str(), doc);
}

std::vector<YAML::Node> split_flags(int argc, const char* const* argv, const std::vector<FlagTable>& tables) {
  std::map<std::string, size_t> owner;
  std::vector<std::string> known;
  for (size_t t = 0; t < tables.size(); ++t) {
    for (const auto& field : tables[t].fields) {
      if (!owner.emplace(field, t).second) {
        throw ConfigError(fmt::format("parse_options: '{}' is a field of both {} and {}; a flag must name one",
                                      field, tables[owner.at(field)].name, tables[t].name));
      }
      known.push_back(field);
    }
  }
  std::vector<YAML::Node> nodes;
  for (size_t t = 0; t < tables.size(); ++t) nodes.emplace_back(YAML::NodeType::Map);
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << fmt::format("usage: {} [--KEY VALUE]... | --help | --version\n", argc > 0 ? argv[0] : "program");
      for (const auto& table : tables) {
        std::cout << "\n" << table.name << ":\n";
        for (const auto& line : table.help) std::cout << line << "\n";
      }
      std::cout.flush();
      std::exit(0);
    }
    if (arg == "--version") {
      std::cout << version_line() << std::endl;
      std::exit(0);
    }
    if (arg.rfind("--", 0) != 0 || arg.size() == 2) {
      throw ConfigError(fmt::format("unexpected argument '{}': flags are --KEY VALUE (--help lists them)", arg));
    }
    const size_t equals = arg.find('=');
    const std::string key = arg.substr(2, equals == std::string::npos ? std::string::npos : equals - 2);
    std::string text;
    if (equals != std::string::npos) {
      text = arg.substr(equals + 1);
    } else if (i + 1 < argc) {
      text = argv[++i];
    } else {
      throw ConfigError(fmt::format("--{}: a value must follow the flag", key));
    }
    const auto found = owner.find(key.substr(0, key.find('.')));
    if (found == owner.end()) throw ConfigError(fmt::format("unknown flag '--{}'{}", key, did_you_mean(key, known)));
    YAML::Node value;
    try {
      value = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      throw ConfigError(fmt::format("--{}: cannot parse value '{}': {}", key, text, e.msg));
    }
    set_dotted(nodes[found->second], key, value);
  }
  return nodes;
}

std::string flag_error(const std::string& message) {
  const std::string unknown = "unknown key '";
  if (message.rfind(unknown, 0) == 0) return "unknown flag '--" + message.substr(unknown.size());
  return "--" + message;
}

}  // namespace fulgur::cli::detail
