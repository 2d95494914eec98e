#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

namespace fulgur::cli {

/// Sets root[a][b][c] = value for the command line's dotted key "a.b.c",
/// making the sections on the way. Throws ConfigError naming `--key` for an
/// empty component or one that is a value, not a section.
void set_dotted(YAML::Node root, const std::string& key, const YAML::Node& value);

}  // namespace fulgur::cli
