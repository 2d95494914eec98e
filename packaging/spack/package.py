# A Spack package for fulgur. Put it in a repository of your own (Spack >= 1.0):
#
#   spack repo create ~/fulgur-repo fulgur
#   mkdir -p ~/fulgur-repo/spack_repo/fulgur/packages/fulgur
#   cp packaging/spack/package.py ~/fulgur-repo/spack_repo/fulgur/packages/fulgur/
#   spack repo add ~/fulgur-repo
#   spack install fulgur ~cuda +hdf5          (or +cuda cuda_arch=90)
#   spack test run fulgur                     (builds and trains the digits example)
#
# The version's sha256 is the one of the release tarball scripts/make_dist.sh
# makes from the tag; `make release VERSION=<version>` writes it, the homepage
# and the url here (docs/development.md, "Making a release"). Until v0.1.0 is
# tagged and released they name a candidate tarball and a placeholder home.
# Checked here under a stub of Spack only (scripts/check_spack_package.py):
# Spack itself was not run (docs/installing.md).
import glob
import os
import re

from spack.package import *  # noqa: F401,F403

try:  # Spack >= 1.0 keeps the build systems in its builtin repository
    from spack_repo.builtin.build_systems.cmake import CMakePackage  # noqa: F811
    from spack_repo.builtin.build_systems.cuda import CudaPackage  # noqa: F811
except ImportError:  # Spack < 1.0 exports them from spack.package
    pass


class Fulgur(CMakePackage, CudaPackage):
    """A C++ training framework in the spirit of PyTorch Lightning, built on
    LibTorch: a Trainer (fit / validate / test / predict), DDP, Horovod and
    FSDP strategies over Gloo or NCCL, SLURM and torchrun launching,
    checkpoints that resume exactly, a YAML command line."""

    homepage = "https://github.com/fulgur-ml/fulgur"
    url = "https://github.com/fulgur-ml/fulgur/releases/download/v0.1.0/fulgur-0.1.0.tar.gz"

    license("Apache-2.0", checked_by="fulgur")

    version("0.1.0", sha256="ea43bdea26902c74dc436bcc0b63ae7abc40e4ad24040b4fca746b2331c6ed02")

    variant(
        "hdf5",
        default=True,
        description="HDF5 image packs (HDF5ImageFile, fulgur_pack, --data.format hdf5)",
    )

    depends_on("cxx", type="build")
    depends_on("cmake@3.25:", type="build")

    # LibTorch: the one inside py-torch. Gloo is fulgur's CPU backend: c10d's
    # ProcessGroupGloo.hpp includes Gloo's headers, which py-torch+gloo takes
    # from Spack's gloo package. fulgur is tested with LibTorch 2.9 to 2.15
    # (its CPU suite passes against 2.9.1 and 2.10.0: docs/development.md).
    depends_on("py-torch@2.9:+distributed+gloo")
    depends_on("gloo", type=("build", "link"))
    depends_on("py-torch~cuda", when="~cuda")
    with when("+cuda"):
        depends_on("py-torch+cuda+nccl")
        depends_on("nccl")
        for _arch in CudaPackage.cuda_arch_values:
            depends_on(f"py-torch cuda_arch={_arch}", when=f"cuda_arch={_arch}")
    depends_on("yaml-cpp@0.7:")
    depends_on("fmt@9:")
    depends_on("libjpeg-turbo")
    depends_on("libpng")
    depends_on("zlib-api")
    depends_on("hdf5~mpi", when="+hdf5")

    # The digits example's data come from scikit-learn (scripts/export_digits.py).
    depends_on("py-scikit-learn", type="test")
    depends_on("py-pillow", type="test")

    conflicts("%gcc@:11", msg="fulgur is C++20 (LibTorch's headers need it): GCC 12 or newer")

    def cmake_args(self):
        spec = self.spec
        args = [
            self.define("FULGUR_BUILD_TESTS", False),
            self.define("FULGUR_BUILD_EXAMPLES", False),
            self.define("FULGUR_BUILD_BENCH", False),
            self.define_from_variant("FULGUR_WITH_CUDA", "cuda"),
            self.define_from_variant("FULGUR_WITH_HDF5", "hdf5"),
        ]
        # py-torch installs LibTorch's CMake package inside its Python package.
        pattern = join_path(
            spec["py-torch"].prefix, "lib", "python3*", "site-packages", "torch", "share", "cmake"
        )
        torch_dirs = glob.glob(join_path(pattern, "Torch"))
        if torch_dirs:
            args.append(self.define("Torch_DIR", torch_dirs[0]))
        if spec.satisfies("+cuda"):
            archs = spec.variants["cuda_arch"].value
            args += [
                self.define("CUDAToolkit_ROOT", spec["cuda"].prefix),
                self.define("CMAKE_CUDA_COMPILER", join_path(spec["cuda"].prefix.bin, "nvcc")),
                self.define("CMAKE_CUDA_ARCHITECTURES", ";".join(archs)),
                # LibTorch's CMake files name architectures as 9.0, Spack as 90.
                self.define("TORCH_CUDA_ARCH_LIST", ";".join(f"{a[:-1]}.{a[-1]}" for a in archs)),
            ]
        return args

    # What test_digits builds and reads, kept with the installation.
    _test_sources = ["packaging/consumer", "examples/cinic10", "scripts/export_digits.py"]

    @run_after("install")
    def cache_test_sources(self):
        cache_extra_test_sources(self, self._test_sources)

    test_requires_compiler = True

    def test_digits(self):
        """build the digits example against fulgur, train it, test_acc >= 0.97"""
        cache = self.test_suite.current_test_cache_dir
        python = self.spec["python"].command
        try:
            python("-c", "import sklearn, PIL")
        except ProcessError:
            raise SkipTest("needs py-scikit-learn and py-pillow (spack load them)")
        cmake = Executable(self.spec["cmake"].prefix.bin.cmake)
        build = join_path(os.getcwd(), "digits-build")
        cmake(
            "-S",
            join_path(cache, "packaging", "consumer"),
            "-B",
            build,
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DCMAKE_PREFIX_PATH={self.prefix}",
        )
        cmake("--build", build, "-j2")
        data = join_path(os.getcwd(), "digits-cinic")
        python(join_path(cache, "scripts", "export_digits.py"), data)
        cinic10 = Executable(join_path(build, "cinic10"))
        out = cinic10(
            "fit",
            "--config",
            join_path(cache, "examples", "cinic10", "digits.yaml"),
            "--data.root",
            data,
            "--trainer.default_root_dir",
            join_path(os.getcwd(), "runs"),
            "--trainer.enable_progress_bar",
            "false",
            output=str.split,
            error=str.split,
        )
        run_dirs = re.findall(r"^fulgur: run folder (.+)$", out, re.M)
        assert run_dirs, "the example printed no run folder"
        with open(join_path(run_dirs[-1], "metrics.csv")) as f:
            header, *rows = [line.rstrip("\n").split(",") for line in f]
        col = header.index("test_acc")
        test_acc = [float(r[col]) for r in rows if col < len(r) and r[col]][-1]
        assert test_acc >= 0.97, f"test_acc {test_acc} below 0.97"
