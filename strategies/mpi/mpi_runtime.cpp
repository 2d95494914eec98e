#include <fulgur/strategies/mpi/mpi_runtime.hpp>

#include <fulgur/core/module_build_dir.hpp>

#include <fulgur_mpi_module_paths.hpp>

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <vector>

namespace fulgur {
namespace {

struct LoadedMpiModule {
  void* module = nullptr;
  std::string error;
};

LoadedMpiModule load_mpi_module() {
#ifndef FULGUR_MPI_MODULE_NAME
  return {nullptr, "fulgur was built without MPI (FULGUR_WITH_MPI=OFF, or no MPI was found when it was configured)"};
#else
  // FULGUR_MPI_MODULE, beside the program (<prefix>/bin/../lib), the build
  // tree, the install prefix.
  std::vector<std::string> paths;
  if (const char* env = std::getenv("FULGUR_MPI_MODULE"); env != nullptr && *env != '\0') paths.emplace_back(env);
  std::error_code error;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) paths.push_back((exe.parent_path().parent_path() / "lib" / FULGUR_MPI_MODULE_NAME).string());
  paths.push_back(std::string(kModuleBuildDir) + "/" FULGUR_MPI_MODULE_NAME);
  paths.emplace_back(FULGUR_MPI_MODULE_INSTALL_PATH);
  std::string errors;
  for (const auto& path : paths) {
    if (!std::filesystem::exists(path)) continue;
    // GLOBAL: Open MPI's own plugins find libmpi's symbols only so.
    if (void* module = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL)) return {module, {}};
    errors += std::string(dlerror()) + "; ";
  }
  return {nullptr, FULGUR_MPI_MODULE_NAME " could not be loaded: " +
                       (errors.empty() ? std::string("not found beside the program, in the build tree or the install "
                                                     "prefix (set FULGUR_MPI_MODULE; in a build tree, build the "
                                                     "target fulgur_mpi)")
                                       : errors)};
#endif
}

void* mpi_symbol(const char* name) {
  static const LoadedMpiModule loaded = load_mpi_module();
  if (loaded.module == nullptr) {
    throw std::invalid_argument("[MpiRuntime] process_group_backend 'mpi': " + loaded.error);
  }
  void* found = dlsym(loaded.module, name);
  if (found == nullptr) throw std::runtime_error(std::string("[MpiRuntime] the MPI module has no ") + name);
  return found;
}

/// Runs a call into the module; what MPI refused (the module's
/// std::invalid_argument) comes out as MpiRefusedError.
template <class Call>
void refused_as_mpi_error(Call&& call) {
  try {
    call();
  } catch (const MpiRefusedError&) {
    throw;
  } catch (const std::invalid_argument& e) {
    throw MpiRefusedError(e.what());
  }
}

}  // namespace

c10::intrusive_ptr<c10d::Backend> MpiRuntime::group(std::optional<int64_t> communicator, int rank, int size) {
  using Make = void (*)(int, int, int, int, c10::intrusive_ptr<c10d::Backend>&);
  c10::intrusive_ptr<c10d::Backend> made;
  refused_as_mpi_error([&] {
    reinterpret_cast<Make>(mpi_symbol("fulgur_mpi_group"))(communicator ? 1 : 0,
                                                         static_cast<int>(communicator.value_or(0)), rank, size, made);
  });
  return made;
}

c10::intrusive_ptr<c10d::Backend> MpiRuntime::split(const c10::intrusive_ptr<c10d::Backend>& parent,
                                                    const std::string& name, int rank, int size) {
  using Split = void (*)(const c10::intrusive_ptr<c10d::Backend>&, const std::string&, int, int,
                         c10::intrusive_ptr<c10d::Backend>&);
  c10::intrusive_ptr<c10d::Backend> made;
  refused_as_mpi_error([&] { reinterpret_cast<Split>(mpi_symbol("fulgur_mpi_split"))(parent, name, rank, size, made); });
  return made;
}

std::optional<MpiRuntime::Layout> MpiRuntime::layout(int64_t communicator) {
  using Query = void (*)(int, int*);
  int found[4] = {-1, -1, -1, -1};
  refused_as_mpi_error(
      [&] { reinterpret_cast<Query>(mpi_symbol("fulgur_mpi_comm_layout"))(static_cast<int>(communicator), found); });
  if (found[1] < 0) return std::nullopt;
  return Layout{found[0], found[1], found[2], found[3]};
}

void MpiRuntime::require_concurrent_calls(const std::string& who) {
  using Require = void (*)(const std::string&);
  refused_as_mpi_error([&] { reinterpret_cast<Require>(mpi_symbol("fulgur_mpi_require_multiple"))(who); });
}

bool MpiRuntime::built() {
#ifdef FULGUR_MPI_MODULE_NAME
  return true;
#else
  return false;
#endif
}

}  // namespace fulgur
