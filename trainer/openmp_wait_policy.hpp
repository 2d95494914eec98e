#pragma once

#include <fulgur/core/option_enum.hpp>

#include <string>
#include <vector>

namespace fulgur {

/// Option openmp_wait_policy: which processes get OMP_WAIT_POLICY=PASSIVE
/// where it is unset.
///
/// Why: LibTorch's OpenMP threads busy-wait (spin) between parallel regions
/// by default. A training process also runs loader threads, and on a node
/// whose cores are all in use the spinning threads take the cores from the
/// threads doing work: a small MLP trained 10x slower on 2 cores than with
/// passive waiting. The OpenMP runtime reads the variable once, when it is
/// loaded (before main), so only a new process can get it: the ranks the
/// Trainer starts get it through their environment (launched, the default
/// in a user's main() and on the command line). fulgur never restarts the
/// program that owns the Trainer; passive only adds a warning, once, when
/// that program started without the variable (see warn_without_passive_openmp_wait).
enum class OpenMPWaitPolicy { Launched, Passive, Environment };

inline std::vector<std::string> option_choices(OpenMPWaitPolicy) { return {"launched", "passive", "environment"}; }

/// One warning line on stderr when OMP_WAIT_POLICY is unset in this process
/// (openmp_wait_policy passive asked for a policy it cannot have any more):
/// set it where the program is started (`OMP_WAIT_POLICY=PASSIVE ./train`).
void warn_without_passive_openmp_wait();

}  // namespace fulgur
