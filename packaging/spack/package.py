# A Spack package for fulgur. Put it in a repository of your own:
#
#   spack repo create ~/fulgur-repo fulgur
#   mkdir -p ~/fulgur-repo/packages/fulgur   # Spack >= 1.0: ~/fulgur-repo/spack_repo/fulgur/packages/fulgur
#   cp packaging/spack/package.py ~/fulgur-repo/packages/fulgur/
#   spack repo add ~/fulgur-repo
#   spack install fulgur@0.1.0 ~cuda +hdf5
#
# What was checked here: not Spack itself (not on PyPI or in Debian 12, and its
# git snapshot is larger than this machine may fetch), but this file under a
# stub of spack.package (scripts/check_spack_package.py): it imports, declares
# the versions, variants and dependencies below, and cmake_args() gives the
# expected flags for +cuda/~cuda and +hdf5/~hdf5. See docs/installing.md.
import glob
import os

from spack.package import *  # noqa: F401,F403 (Spack < 1.0 also exports CMakePackage here)

try:  # Spack >= 1.0 keeps the build systems in its builtin repository
    from spack_repo.builtin.build_systems.cmake import CMakePackage  # noqa: F811
except ImportError:
    pass


class Fulgur(CMakePackage):
    """A C++ training framework in the spirit of PyTorch Lightning, built on
    LibTorch: a Trainer (fit / validate / test / predict), DDP, Horovod and
    FSDP strategies over Gloo or NCCL, SLURM and torchrun launching,
    checkpoints that resume exactly, a YAML command line."""

    homepage = "https://fulgur.invalid/"  # no public home yet: a release sets it and a url/git
    # A release tarball is `git archive --prefix=fulgur-<v>/ v<v>`; until one
    # is published, install from a checkout: `spack dev-build fulgur@0.1.0` or
    # `spack install fulgur@0.1.0 dev_path=/path/to/fulgur` (a development spec).
    url = "https://fulgur.invalid/releases/fulgur-0.1.0.tar.gz"

    version("0.1.0")  # no published checksum yet (see above)

    variant("cuda", default=False, description="Build the fulgur_cuda module (needs a CUDA build of py-torch)")
    variant("hdf5", default=True, description="HDF5 image packs (HDF5ImageFile, fulgur_pack, --data.format hdf5)")

    depends_on("cxx", type="build")
    depends_on("cmake@3.25:", type="build")

    # LibTorch 2.11 to 2.15 (docs/development.md); C++20.
    depends_on("py-torch@2.11:2.15")
    depends_on("py-torch+cuda", when="+cuda")
    depends_on("py-torch~cuda", when="~cuda")
    depends_on("cuda", when="+cuda")
    depends_on("nccl", when="+cuda")
    depends_on("gloo", type="build")  # headers: c10d's ProcessGroupGloo.hpp includes gloo/config.h
    depends_on("yaml-cpp@0.7:")
    depends_on("fmt@9:")
    depends_on("libjpeg-turbo")
    depends_on("libpng")
    depends_on("zlib-api")
    depends_on("hdf5~mpi", when="+hdf5")

    conflicts("%gcc@:11", msg="fulgur is C++20 (LibTorch's headers need it): GCC 12 or newer")

    def cmake_args(self):
        args = [
            self.define("FULGUR_BUILD_TESTS", False),
            self.define("FULGUR_BUILD_EXAMPLES", False),
            self.define("FULGUR_BUILD_BENCH", False),
            self.define_from_variant("FULGUR_WITH_CUDA", "cuda"),
            self.define_from_variant("FULGUR_WITH_HDF5", "hdf5"),
        ]
        # py-torch installs LibTorch's CMake package inside its Python package.
        torch_dirs = glob.glob(
            os.path.join(self.spec["py-torch"].prefix, "lib", "python3*", "site-packages", "torch", "share", "cmake", "Torch")
        )
        if torch_dirs:
            args.append(self.define("Torch_DIR", torch_dirs[0]))
        if self.spec.satisfies("+cuda"):
            args.append(self.define("CMAKE_CUDA_COMPILER", os.path.join(self.spec["cuda"].prefix.bin, "nvcc")))
        return args
