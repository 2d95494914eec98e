#include <fulgur/modules/stage.hpp>

namespace fulgur {

const char* to_string(Stage stage) {
  switch (stage) {
    case Stage::Fit: return "fit";
    case Stage::Validate: return "validate";
    case Stage::Test: return "test";
    case Stage::Predict: return "predict";
  }
  return "unknown";
}

}  // namespace fulgur
