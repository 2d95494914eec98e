#pragma once

#include <fulgur/modules/option_enum.hpp>

#include <string>
#include <vector>

namespace fulgur {

/// Option openmp_wait_policy: which processes get OMP_WAIT_POLICY=PASSIVE
/// where it is unset (see use_passive_openmp_wait).
enum class OpenMPWaitPolicy { Launched, Passive, Environment };

inline std::vector<std::string> option_choices(OpenMPWaitPolicy) { return {"launched", "passive", "environment"}; }

/// Restarts the program (same pid, same command line, read from
/// /proc/self/cmdline) with OMP_WAIT_POLICY=PASSIVE when the variable is not
/// set; returns when it is set (any value: the user's choice stands) or
/// when the restart fails (one warning line).
///
/// Why: LibTorch's OpenMP threads busy-wait (spin) between parallel regions
/// by default. A training process also runs loader threads, and on a node
/// whose cores are all in use the spinning threads take the cores from the
/// threads doing work: a small MLP trained 10x slower on 2 cores than with
/// passive waiting. The OpenMP runtime reads the variable once, when it is
/// loaded (before main), so it cannot be changed later in the same process.
/// The Trainer calls it first in its constructor only with option
/// openmp_wait_policy passive (the command line's default; a user's own
/// main() opts in): what main() did before the Trainer runs again in the
/// restarted program. By default (launched) only the ranks the Trainer
/// starts get PASSIVE, through their environment.
void use_passive_openmp_wait();

}  // namespace fulgur
