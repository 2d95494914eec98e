#pragma once

namespace fulgur {

/// What runs, as Lightning names it: the four entry points (fit, validate,
/// test, predict: what a DataModule is set up for and what the command line
/// runs) and, inside fit, the loop at work (train, sanity_check, and
/// validate for fit's validation loop).
enum class Stage { Fit, Validate, Test, Predict, Train, SanityCheck };

/// "fit", "validate", "test", "predict", "train", "sanity_check".
const char* to_string(Stage stage);

}  // namespace fulgur
