#pragma once

namespace fulgur {

/// The loop at work, as Lightning's RunningStage names it: inside fit the
/// training loop, the sanity check and the validation loop; the evaluation
/// loops of validate and test; predict. Kept apart from Stage (the entry
/// points) so that DataModule::setup cannot be given a loop.
enum class RunningStage { Train, SanityCheck, Validate, Test, Predict };

/// "train", "sanity_check", "validate", "test", "predict".
inline const char* to_string(RunningStage stage) {
  switch (stage) {
    case RunningStage::Train: return "train";
    case RunningStage::SanityCheck: return "sanity_check";
    case RunningStage::Validate: return "validate";
    case RunningStage::Test: return "test";
    case RunningStage::Predict: return "predict";
  }
  return "unknown";
}

}  // namespace fulgur
