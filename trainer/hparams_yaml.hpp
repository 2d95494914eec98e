#pragma once

#include <fulgur/modules/hyperparameters.hpp>

#include <yaml-cpp/yaml.h>

namespace fulgur {

/// A module's hyper-parameters as YAML (hparams.yaml, the loggers, the run
/// identity): sections become mappings, lists sequences, None null.
YAML::Node hparams_to_yaml(const HParams& hparams);

/// YAML read back as hyper-parameters (the CLI records its resolved
/// configuration so): integers, floats and booleans keep their type, other
/// scalars become strings.
HParams hparams_from_yaml(const YAML::Node& node);

}  // namespace fulgur
