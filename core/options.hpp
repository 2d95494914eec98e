#pragma once

// Options structs that declare each field once: its type, name, default, doc
// line and check. From that one declaration come the chainable setter and
// the getter (the torch::nn options style), validate(), and visit_fields(),
// through which the YAML reader, --print_config, hparams.yaml and the docs'
// option tables are produced (trainer/cli/options_yaml.hpp). It lives in the
// bottom layer and knows no YAML, so every layer may declare options.
//
//   #define MY_MODEL_OPTIONS(X)                                        \
//     X(double, lr, 0.05, "learning rate", fulgur::check::Positive{}) \
//     X(int64_t, num_classes, 10, "classes", fulgur::check::AtLeast{2})
//   struct MyModelOptions {
//     FULGUR_OPTIONS(MyModelOptions, MY_MODEL_OPTIONS)
//   };
//
//   MyModelOptions().lr(0.1).validate();  // "[MyModelOptions] lr must be > 0, got -1"

#include <fulgur/core/option_checks.hpp>

#include <torch/arg.h>

#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

/// One field: member `name_`, setter `name(value)`, getter `name()`.
#define FULGUR_OPTION_FIELD(type, name, default_value, doc, check) TORCH_ARG(type, name) = default_value;

#define FULGUR_OPTION_VISIT(type, name, default_value, doc, check) visitor(#name, doc, self.name##_, check);

/// Declares the fields listed by the X-macro `FIELDS` in the options struct
/// `Self`, plus:
///   static constexpr const char* options_name: "Self", for messages;
///   visit_fields(self, visitor): visitor(name, doc, field&, check) per field,
///     in declaration order;
///   validate(): throws std::invalid_argument "[Self] <name> <rule>, got <value>"
///     for the first field that breaks its check.
#define FULGUR_OPTIONS(Self, FIELDS)                                                                 \
  FIELDS(FULGUR_OPTION_FIELD)                                                                        \
                                                                                                     \
 public:                                                                                             \
  static constexpr const char* options_name = #Self;                                                 \
  template <class S, class V>                                                                        \
  static void visit_fields(S& self, V&& visitor) {                                                   \
    FIELDS(FULGUR_OPTION_VISIT)                                                                      \
  }                                                                                                  \
  void validate() const { ::fulgur::validate_options(*this); }

namespace fulgur {

/// True for a struct declared with FULGUR_OPTIONS.
template <class T>
concept DeclaredOptions = requires { T::options_name; };

/// Checks every field of `options` (see FULGUR_OPTIONS), nested options
/// structs included.
template <DeclaredOptions Options>
void validate_options(const Options& options) {
  Options::visit_fields(options, [&](const char* name, const char*, const auto& value, const auto& check) {
    using Value = std::decay_t<decltype(value)>;
    if constexpr (DeclaredOptions<Value>) {
      validate_options(value);
    } else if (auto broken = check::failure(check, value)) {
      throw std::invalid_argument("[" + std::string(Options::options_name) + "] " + name + " " + *broken);
    }
  });
}

/// The field `name` of `options` when it has type T; nullptr when there is
/// no such field (a search by name, as Lightning's lightning_getattr).
template <class T, DeclaredOptions Options>
T* find_option(Options& options, std::string_view name) {
  T* found = nullptr;
  Options::visit_fields(options, [&](const char* field, const char*, auto& value, const auto&) {
    if constexpr (std::is_same_v<std::decay_t<decltype(value)>, T>) {
      if (name == field) found = &value;
    }
  });
  return found;
}

}  // namespace fulgur
