#pragma once

#include <fulgur/core/option_enum.hpp>
#include <fulgur/trainer/cli/config_error.hpp>

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace fulgur::cli {

/// A typed, recording view of one mapping of the merged configuration
/// (`trainer`, `model`, `data`). Components read their options through it:
/// every read names its default, so the section knows the full resolved
/// configuration (for --print_config and hparams.yaml) and which keys the
/// user gave that nobody read (unknown keys). Type errors throw ConfigError
/// naming the dotted key, the expected type and the value given.
class ConfigSection {
 public:
  /// `node` must be a mapping or null; `path` is its dotted prefix ("data").
  ConfigSection(YAML::Node node, std::string path);

  /// Value of `key`, or `default_value` when absent. T is one of bool,
  /// int64_t, int, double, std::string, std::vector<int64_t>,
  /// std::vector<double>, std::vector<std::string>.
  template <class T>
  T get(const std::string& key, const T& default_value);

  /// Value of `key`, which must be present.
  template <class T>
  T require(const std::string& key);

  /// A choice (core/option_enum.hpp) by its name; parse_choice's error
  /// under the dotted key.
  template <OptionEnum E>
  E choice(const std::string& key, E default_value) {
    const std::string name = get<std::string>(key, to_string(default_value));
    try {
      return parse_choice<E>(name);
    } catch (const std::invalid_argument& e) {
      throw ConfigError(dotted(key) + ": " + e.what());
    }
  }

  /// True if the user gave `key` (marks it as read).
  bool has(const std::string& key);

  /// Raw node of `key` (marks it as read); for values with several accepted
  /// shapes, such as "auto" or an integer. Records `default_value` if absent.
  YAML::Node raw(const std::string& key, const YAML::Node& default_value);

  /// Sets what --print_config shows for `key` (a nested section's resolved map).
  void record(const std::string& key, const YAML::Node& value) { resolved_[key] = value; }

  /// Throws ConfigError: "<path.key>: expected <expected>, got '<value>'".
  [[noreturn]] void fail(const std::string& key, const std::string& expected, const std::string& got) const;

  /// Dotted names of the keys the user gave that no get/require/choice read.
  std::vector<std::string> unread_keys() const;

  /// The mapping with every default filled in, in the order keys were read.
  const YAML::Node& resolved() const { return resolved_; }

  /// For --print_config: a declared default that breaks its check (a
  /// required option nobody gave, such as data.root) is shown as
  /// "<required>" instead of being an error. A value the user gave is still checked.
  void show_missing_as_required() { show_missing_ = true; }
  bool shows_missing_as_required() const { return show_missing_; }
  /// Marks `key` as required and not given (see show_missing_as_required).
  void mark_required(const std::string& key) {
    resolved_[key] = "<required>";
    missing_ = true;
  }
  /// Whether some required key was not given.
  bool missing_required() const { return missing_; }

  const std::string& path() const { return path_; }
  std::string dotted(const std::string& key) const;

 private:
  YAML::Node lookup(const std::string& key);
  YAML::Node node_;
  std::string path_;
  std::set<std::string> read_;
  YAML::Node resolved_;
  bool show_missing_ = false;
  bool missing_ = false;
};

}  // namespace fulgur::cli
