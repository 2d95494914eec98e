#pragma once
// The flags of a user's own main(), read into options structs declared with
// FULGUR_OPTIONS by the command line's typed reader, with its checks and
// its errors.
#include <fulgur/trainer/cli/config_error.hpp>
#include <fulgur/trainer/cli/config_section.hpp>
#include <fulgur/trainer/cli/options_yaml.hpp>
#include <fulgur/trainer/trainer_options.hpp>

#include <yaml-cpp/yaml.h>

#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace fulgur::cli {
namespace detail {

/// One options struct as the flag parser sees it.
struct FlagTable {
  std::string name;                 // Options::options_name, the heading of --help
  std::vector<std::string> fields;  // the declared field names, in order
  std::vector<std::string> help;    // one --help line per field
};

std::string flag_help(const char* name, const char* doc, const YAML::Node& default_value, bool section);

template <DeclaredOptions Options>
FlagTable flag_table(const Options& defaults) {
  FlagTable table{Options::options_name, {}, {}};
  Options::visit_fields(defaults, [&](const char* name, const char* doc, const auto& field, const auto&) {
    table.fields.emplace_back(name);
    table.help.push_back(flag_help(name, doc, to_node(field), DeclaredOptions<std::decay_t<decltype(field)>>));
  });
  return table;
}

/// Splits argv's `--key value` and `--key=value` into one mapping per table:
/// a key goes to the table that declares its first component (`--fsdp.x`
/// goes to the one with a field fsdp). Prints the tables and exits 0 on
/// --help, like argparse, and prints version_line() and exits 0 on --version.
/// Throws ConfigError for an unknown flag (with the
/// closest known one), a flag without a value, a value that is not YAML, or
/// a field that two tables declare.
std::vector<YAML::Node> split_flags(int argc, const char* const* argv, const std::vector<FlagTable>& tables);

/// The reader's error with the flag's spelling: "--devices: ...".
std::string flag_error(const std::string& message);

template <DeclaredOptions Options>
Options read_flags(const YAML::Node& node, Options defaults) {
  ConfigSection section(node, "");
  try {
    return read_options(section, std::move(defaults));
  } catch (const ConfigError& e) {
    throw ConfigError(flag_error(e.what()));
  }
}

}  // namespace detail

/// Reads a main()'s flags into options structs, each starting from the
/// value given (its defaults), and returns them in the same order:
///
///   auto [trainer_options, options] = fulgur::cli::parse_options(
///       argc, argv, fulgur::TrainerOptions().max_epochs(4), MyOptions());
///   // prog --devices 2 --strategy ddp --batch_size 64 --fsdp.sharding_strategy SHARD_GRAD_OP
///
/// A flag names a field of one of the structs (`--max_epochs 4` or
/// `--max_epochs=4`; a nested struct's field with a dot); values are read
/// as YAML, as on the command line (`--precision bf16-mixed`, `--lrs
/// [0.1,0.01]`), and checked as declared. A bad flag is one ConfigError
/// (std::invalid_argument) naming it: "--devices: expected ..., got 'x'",
/// "unknown flag '--max_epoch'; did you mean 'max_epochs'?". `--help`
/// prints every flag with its default and exits 0. Two structs must not
/// declare the same field name (an error at the first run).
// The Trainer's own options are read and listed by the library, compiled
// once (parse_options.cpp): a main() that parses them does not generate the
// reader of its hundred fields again (a third of a small main's code).
extern template TrainerOptions read_options(ConfigSection&, TrainerOptions, const std::set<std::string>&);
namespace detail {
extern template FlagTable flag_table(const TrainerOptions&);
extern template TrainerOptions read_flags(const YAML::Node&, TrainerOptions);
}  // namespace detail

template <DeclaredOptions... Options>
std::tuple<Options...> parse_options(int argc, const char* const* argv, Options... defaults) {
  const std::vector<YAML::Node> nodes = detail::split_flags(argc, argv, {detail::flag_table(defaults)...});
  size_t next = 0;
  // A braced list is evaluated left to right, so nodes[k] meets the k-th struct.
  return std::tuple<Options...>{detail::read_flags(nodes[next++], std::move(defaults))...};
}

}  // namespace fulgur::cli
