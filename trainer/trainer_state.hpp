#pragma once

namespace fulgur {

/// What the Trainer is doing right now, as Lightning's TrainerFn + stage.
enum class TrainerStage { Idle, Fitting, SanityChecking, Validating, Testing, Predicting };

}  // namespace fulgur
