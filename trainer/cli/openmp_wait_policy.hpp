#pragma once

namespace fulgur::cli {

/// Restarts the program (same pid, same arguments) with
/// OMP_WAIT_POLICY=PASSIVE when the variable is not set; returns when it is
/// set (any value: the user's choice stands) or when the restart fails.
///
/// Why: LibTorch's OpenMP threads busy-wait (spin) between parallel regions
/// by default. A training process also runs loader threads, and on a node
/// whose cores are all in use the spinning threads take the cores from the
/// threads doing work: a small MLP trained 10x slower on 2 cores than with
/// passive waiting. The OpenMP runtime reads the variable once, when it is
/// loaded (before main), so it cannot be changed later in the same process.
/// Call it first in main(), before any thread starts; cli::run does.
void use_passive_openmp_wait(int argc, const char* const* argv);

}  // namespace fulgur::cli
