#pragma once

#include <fulgur/core/option_enum.hpp>

#include <string>
#include <vector>

namespace fulgur {

/// Option process_group_backend (Lightning's DDPStrategy(process_group_backend=...)):
/// which c10d backend carries the collectives. Auto, the default, is NCCL
/// for CUDA tensors and Gloo for CPU ones. Gloo with accelerator gpu moves
/// CUDA tensors through Gloo: slower, but several ranks may then share one
/// GPU (NCCL refuses two ranks on one device). Nccl needs accelerator gpu.
/// Mpi carries them over the site's MPI (ranks started by an MPI launcher,
/// or the program's own communicator); fulgur built with FULGUR_WITH_MPI.
enum class ProcessGroupBackend { Auto, Gloo, Nccl, Mpi };

inline std::vector<std::string> option_choices(ProcessGroupBackend) { return {"auto", "gloo", "nccl", "mpi"}; }

}  // namespace fulgur
