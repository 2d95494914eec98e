#pragma once

#include <fulgur/trainer/cli/config_error.hpp>
#include <fulgur/trainer/cli/config_section.hpp>
#include <fulgur/trainer/cli/options_yaml.hpp>

#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace fulgur::cli {

namespace detail {

/// One entry of a class list: `NAME` or `{class_path: NAME, init_args: {...}}`.
struct ClassEntry {
  std::string class_path;  // as written (`lightning.pytorch.callbacks.EarlyStopping`)
  std::string class_name;  // its last dotted component
  YAML::Node init_args;    // undefined for a bare name
};
/// Splits `entry`; throws ConfigError naming `path` for any other shape.
ClassEntry parse_class_entry(const YAML::Node& entry, const std::string& path, const std::string& kind);
/// "<path>.class_path: unknown <kind> class '<class_path>' (known: ...)".
[[noreturn]] void unknown_class(const ClassEntry& entry, const std::string& path, const std::string& kind,
                                const std::vector<std::string>& known);
/// Throws ConfigError when the factory left a key of `section` unread.
void check_all_read(const ConfigSection& section, const std::string& class_name);

}  // namespace detail

/// Classes the YAML config and the command line can name, as LightningCLI
/// does (`class_path` + `init_args`); the base of CallbackRegistry and
/// LoggerRegistry. A factory builds an object of `Base` from its
/// `init_args` section and `Context` (the loggers' shared run folder).
template <class Base, class... Context>
class ClassRegistry {
 public:
  /// Builds one object; reads every option it knows through the section
  /// (so unknown keys can be reported).
  using Factory = std::function<std::shared_ptr<Base>(ConfigSection&, const Context&...)>;

  /// Adds (or replaces) a class whose options are declared with
  /// FULGUR_OPTIONS as `C::Options`; it is built as `C(options, context...)`:
  ///
  ///   registry.add<MyCallback>("MyCallback");
  template <class C>
  void add(const std::string& class_name) {
    add(class_name, [](ConfigSection& section, const Context&... context) -> std::shared_ptr<Base> {
      const auto options = read_options<typename C::Options>(section);
      try {
        return std::make_shared<C>(options, context...);
      } catch (const std::invalid_argument& e) {  // a check across fields
        throw ConfigError(section.path() + ": " + e.what());
      }
    });
  }

  /// Adds (or replaces) a class built by `factory`.
  void add(const std::string& class_name, Factory factory) { factories_[class_name] = std::move(factory); }

  std::vector<std::string> class_names() const {
    std::vector<std::string> names;
    for (const auto& item : factories_) names.push_back(item.first);
    return names;
  }

  /// Builds the objects of `node` (a list, one entry, or null). A dotted
  /// class_path is matched by its last component; a bare name stands for
  /// `{class_path: name}`. Throws ConfigError naming the entry for an
  /// unknown class, an unknown or mistyped key, or an invalid value.
  /// Records the resolved options back into `node`, so --print_config
  /// shows every default.
  std::vector<std::shared_ptr<Base>> create(YAML::Node node, const std::string& path,
                                            const Context&... context) const {
    std::vector<std::shared_ptr<Base>> built;
    if (!node.IsDefined() || node.IsNull()) return built;
    if (!node.IsSequence()) {
      built.push_back(create_one(node, path, context...));
      return built;
    }
    for (size_t i = 0; i < node.size(); ++i) {
      built.push_back(create_one(node[i], path + "[" + std::to_string(i) + "]", context...));
    }
    return built;
  }

 protected:
  explicit ClassRegistry(std::string kind) : kind_(std::move(kind)) {}

 private:
  std::shared_ptr<Base> create_one(YAML::Node entry, const std::string& path, const Context&... context) const {
    const detail::ClassEntry parsed = detail::parse_class_entry(entry, path, kind_);
    const auto found = factories_.find(parsed.class_name);
    if (found == factories_.end()) detail::unknown_class(parsed, path, kind_, class_names());
    ConfigSection section(parsed.init_args, path + ".init_args");
    std::shared_ptr<Base> object = found->second(section, context...);
    detail::check_all_read(section, parsed.class_name);
    if (entry.IsMap()) entry["init_args"] = YAML::Clone(section.resolved());
    return object;
  }

  std::string kind_;  // "callback", "logger": for messages
  std::map<std::string, Factory> factories_;
};

}  // namespace fulgur::cli
