#include <fulgur/trainer/cli/options_yaml.hpp>

namespace fulgur::cli::detail {

std::string node_text(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "null";
  if (node.IsScalar()) return node.Scalar();
  YAML::Emitter out;
  out << YAML::Flow << node;
  return out.c_str();
}

bool decode_scalar(const YAML::Node& node, bool& out) {
  if (!node.IsScalar()) return false;
  const std::string& s = node.Scalar();
  if (s == "true" || s == "True" || s == "1") return out = true, true;
  if (s == "false" || s == "False" || s == "0") return out = false, true;
  return false;
}

bool decode_scalar(const YAML::Node& node, int64_t& out) {
  if (!node.IsScalar() || node.Scalar().empty()) return false;
  try {
    size_t used = 0;
    out = std::stoll(node.Scalar(), &used, 10);
    return used == node.Scalar().size();
  } catch (const std::exception&) {
    return false;
  }
}

bool decode_scalar(const YAML::Node& node, double& out) {
  if (!node.IsScalar() || node.Scalar().empty()) return false;
  try {
    size_t used = 0;
    out = std::stod(node.Scalar(), &used);
    return used == node.Scalar().size();
  } catch (const std::exception&) {
    return false;
  }
}

bool decode_scalar(const YAML::Node& node, std::string& out) {
  if (!node.IsScalar()) return false;
  out = node.Scalar();
  return true;
}

// Integers are batch counts, numbers with a decimal point fractions.
bool decode_scalar(const YAML::Node& node, CountOrFraction& out) {
  int64_t count = 0;
  if (decode_scalar(node, count)) return out = count, true;
  double fraction = 0;
  if (decode_scalar(node, fraction)) return out = fraction, true;
  return false;
}

const char* expected_of(const bool*) { return "a boolean (true/false)"; }
const char* expected_of(const int64_t*) { return "an integer"; }
const char* expected_of(const double*) { return "a number"; }
const char* expected_of(const std::string*) { return "a string"; }
const char* expected_of(const CountOrFraction*) {
  return "a batch count (integer) or a fraction (number with a decimal point)";
}

}  // namespace fulgur::cli::detail
