#!/usr/bin/env python3
"""Checks packaging/spack/package.py without Spack (which this machine cannot
install: it is on neither PyPI nor Debian 12, and its git snapshot is larger
than this machine may fetch): imports it under a stub of `spack.package` that
records the directives (with the conditions of `with when(...)` blocks), then
checks the versions, licence, variants and dependencies it declares, what
cmake_args() gives for +cuda/~cuda, +hdf5/~hdf5 and cuda_arch, that the
version's sha256 is the release tarball's format, that test_digits builds,
exports, trains and reads test_acc (run against stand-in executables), and
that no line is over Spack's 99 columns. It does not check that Spack
concretizes or builds it (docs/installing.md says what would).

    python3 scripts/check_spack_package.py
"""
import contextlib
import importlib.util
import os
import pathlib
import re
import sys
import tempfile
import types

ROOT = pathlib.Path(__file__).resolve().parent.parent
DECLARED = []
WHEN = []  # the conditions of the enclosing `with when(...)` blocks


def directive(kind):
    def record(*args, **kwargs):
        conditions = WHEN + ([kwargs["when"]] if kwargs.get("when") else [])
        kwargs = dict(kwargs, when=" ".join(conditions) or None)
        DECLARED.append((kind, args, kwargs))
    return record


@contextlib.contextmanager
def when(condition):
    WHEN.append(condition)
    try:
        yield
    finally:
        WHEN.pop()


class Prefix(str):
    def __getattr__(self, name):
        return Prefix(f"{self}/{name}")


class ProcessError(Exception):
    pass


class SkipTest(Exception):
    pass


CALLS = []


class Executable:
    """Records each call; `cinic10 fit` writes a run folder as the real one does."""

    def __init__(self, path):
        self.path = str(path)

    def __call__(self, *args, output=None, error=None):
        CALLS.append((os.path.basename(self.path), args))
        if os.path.basename(self.path) == "cinic10":
            run = pathlib.Path(args[args.index("--trainer.default_root_dir") + 1]) / "version_0"
            run.mkdir(parents=True)
            (run / "metrics.csv").write_text("epoch,train_loss,test_acc\n14,0.01,\n14,,0.9963\n")
            return f"fit: done\nfulgur: run folder {run}\n"
        return ""


class Spec:
    """What the package asks of a spec: satisfies('+v'/'~v'), variants, spec[dep]."""

    def __init__(self, **variants):
        self.variants = {k: types.SimpleNamespace(value=v) for k, v in variants.items()}

    def satisfies(self, text):
        sign, name = text[0], text[1:]
        return self.variants[name].value == (sign == "+")

    def __getitem__(self, dep):
        prefix = Prefix(f"/spack/opt/{dep}")
        return types.SimpleNamespace(prefix=prefix, command=Executable(prefix.bin.python3))


class CMakePackage:
    def __init__(self, spec):
        self.spec = spec
        self.prefix = Prefix("/spack/opt/fulgur")

    @staticmethod
    def define(name, value):
        if isinstance(value, bool):
            return f"-D{name}:BOOL={'ON' if value else 'OFF'}"
        return f"-D{name}:STRING={value}"

    def define_from_variant(self, name, variant):
        return self.define(name, self.spec.variants[variant].value)


class CudaPackage:
    # A few of Spack's values; the package loops over whatever Spack has.
    cuda_arch_values = ("70", "80", "90", "100")


def run_after(stage):
    def mark(method):
        method.run_after = stage
        return method
    return mark


def cache_extra_test_sources(pkg, paths):
    pkg.cached = list(paths)


stub = types.ModuleType("spack.package")
for kind in ("version", "variant", "depends_on", "conflicts", "license", "maintainers", "generator"):
    setattr(stub, kind, directive(kind))
for obj in (when, CMakePackage, CudaPackage, run_after, cache_extra_test_sources, Executable,
            ProcessError, SkipTest):
    setattr(stub, obj.__name__, obj)
stub.join_path = os.path.join
stub.__all__ = [name for name in vars(stub) if not name.startswith("_")]
sys.modules["spack"] = types.ModuleType("spack")
sys.modules["spack.package"] = stub

path = ROOT / "packaging" / "spack" / "package.py"
spec = importlib.util.spec_from_file_location("fulgur_spack_package", path)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
Fulgur = module.Fulgur
errors = []


def expect(condition, what):
    print(("ok    " if condition else "FAIL  ") + what)
    if not condition:
        errors.append(what)


cmake_version = next(line for line in (ROOT / "CMakeLists.txt").read_text().splitlines() if line.startswith("project(fulgur"))
project_version = cmake_version.split("VERSION")[1].split()[0]
versions = {args[0]: kwargs.get("sha256") for kind, args, kwargs in DECLARED if kind == "version"}
expect(project_version in versions, f"declares version {project_version} (project(VERSION) in CMakeLists.txt): {list(versions)}")
expect(bool(re.fullmatch(r"[0-9a-f]{64}", versions.get(project_version) or "")),
       f"version {project_version} has a sha256 (make release VERSION=... writes it)")
expect(Fulgur.url.endswith(f"/fulgur-{project_version}.tar.gz"), f"url names the release tarball: {Fulgur.url}")
licenses = [args[0] for kind, args, _ in DECLARED if kind == "license"]
expect(licenses == ["Apache-2.0"] and (ROOT / "LICENSE").is_file(), f"license('Apache-2.0'), and LICENSE exists: {licenses}")
variants = {args[0]: kwargs.get("default") for kind, args, kwargs in DECLARED if kind == "variant"}
expect(variants == {"hdf5": True}, f"its own variant hdf5 (default on); cuda and cuda_arch from CudaPackage: {variants}")
expect(issubclass(Fulgur, CMakePackage) and issubclass(Fulgur, CudaPackage), "Fulgur is a CMakePackage and a CudaPackage")
deps = {(args[0], kwargs.get("when")) for kind, args, kwargs in DECLARED if kind == "depends_on"}
want_deps = [("py-torch@2.9:+distributed+gloo", None), ("gloo", None), ("py-torch~cuda", "~cuda"),
             ("py-torch+cuda+nccl", "+cuda"), ("nccl", "+cuda"), ("yaml-cpp@0.7:", None),
             ("libjpeg-turbo", None), ("libpng", None), ("zlib-api", None), ("fmt@9:", None),
             ("hdf5~mpi", "+hdf5"), ("cmake@3.25:", None), ("py-scikit-learn", None), ("py-pillow", None)]
want_deps += [(f"py-torch cuda_arch={a}", f"+cuda cuda_arch={a}") for a in CudaPackage.cuda_arch_values]
for name, cond in want_deps:
    expect((name, cond) in deps, f"depends_on({name!r}{', when=' + repr(cond) if cond else ''})")
for cuda in (False, True):
    for hdf5 in (False, True):
        variants = dict(cuda=cuda, hdf5=hdf5, cuda_arch=("80", "90") if cuda else ("none",))
        args = Fulgur(Spec(**variants)).cmake_args()
        want = [f"-DFULGUR_WITH_CUDA:BOOL={'ON' if cuda else 'OFF'}", f"-DFULGUR_WITH_HDF5:BOOL={'ON' if hdf5 else 'OFF'}",
                "-DFULGUR_BUILD_TESTS:BOOL=OFF", "-DFULGUR_BUILD_EXAMPLES:BOOL=OFF", "-DFULGUR_BUILD_BENCH:BOOL=OFF"]
        if cuda:
            want += ["-DCMAKE_CUDA_COMPILER:STRING=/spack/opt/cuda/bin/nvcc", "-DCUDAToolkit_ROOT:STRING=/spack/opt/cuda",
                     "-DTORCH_CUDA_ARCH_LIST:STRING=8.0;9.0", "-DCMAKE_CUDA_ARCHITECTURES:STRING=80;90"]
        expect(all(w in args for w in want) and (cuda or not any("CUDA" in a and "WITH_CUDA" not in a for a in args)),
               f"cmake_args for {'+' if cuda else '~'}cuda {'+' if hdf5 else '~'}hdf5: {args}")
# Every CMake option the package sets is declared by fulgur's CMake files.
cmake_text = "".join(p.read_text() for p in [ROOT / "CMakeLists.txt", *ROOT.glob("*/CMakeLists.txt")])
for option in ("FULGUR_WITH_CUDA", "FULGUR_WITH_HDF5", "FULGUR_BUILD_TESTS", "FULGUR_BUILD_EXAMPLES", "FULGUR_BUILD_BENCH"):
    expect(f"option({option} " in cmake_text, f"the CMake files declare option {option}")

# The stand-alone test: cached sources exist in the tree; the method runs its steps.
pkg = Fulgur(Spec(cuda=False, hdf5=True, cuda_arch=("none",)))
Fulgur.cache_test_sources(pkg)
expect(getattr(Fulgur.cache_test_sources, "run_after", None) == "install" and all((ROOT / p).exists() for p in pkg.cached),
       f"caches its test sources after install, and they exist: {pkg.cached}")
expect(bool(Fulgur.test_digits.__doc__), "test_digits has a docstring (Spack prints it as the test's purpose)")
with tempfile.TemporaryDirectory() as tmp:
    cwd = os.getcwd()
    os.chdir(tmp)
    try:
        pkg.test_suite = types.SimpleNamespace(current_test_cache_dir=str(ROOT))
        error = None
        try:
            pkg.test_digits()
        except Exception as e:  # noqa: BLE001 (reported below)
            error = e
    finally:
        os.chdir(cwd)
steps = [(name, args[0]) for name, args in CALLS]
expect(error is None and steps == [("python3", "-c"), ("cmake", "-S"), ("cmake", "--build"),
                                   ("python3", str(ROOT / "scripts" / "export_digits.py")), ("cinic10", "fit")],
       f"test_digits: checks its Python peers, configures and builds packaging/consumer, exports the digits, "
       f"trains and reads test_acc (error: {error!r}; steps {steps})")
long_lines = [n for n, line in enumerate(path.read_text().splitlines(), 1) if len(line) > 99]
expect(not long_lines, f"no line over 99 columns (Spack's style): {long_lines}")
print(f"{len(errors)} failure(s)")
sys.exit(1 if errors else 0)
