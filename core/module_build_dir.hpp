#pragma once
// Where this build put its loadable modules (fulgur_cuda, fulgur_mpi): the
// build tree's lib/. CudaRuntime and MpiRuntime look there after beside the
// program and before the install prefix. Its one definition is generated
// (CMakeLists.txt), so no other compile carries the build tree's path.

namespace fulgur {

/// `<build tree>/lib`, as the build was configured.
extern const char kModuleBuildDir[];

}  // namespace fulgur
