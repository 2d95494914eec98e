#pragma once

namespace fulgur {

/// The entry point that runs, as Lightning's TrainerFn names it: fit,
/// validate, test or predict. What a DataModule is set up for and what the
/// command line runs; the loop at work inside one is a RunningStage.
enum class Stage { Fit, Validate, Test, Predict };

/// "fit", "validate", "test", "predict".
const char* to_string(Stage stage);

}  // namespace fulgur
