#!/usr/bin/env python3
"""Checks packaging/spack/package.py without Spack (which this machine cannot
install: it is on neither PyPI nor Debian 12): imports it under a stub of
`spack.package` that records the directives, then checks the versions,
variants and dependencies it declares and what cmake_args() gives for
+cuda/~cuda and +hdf5/~hdf5. It does not check that Spack concretizes or
builds it (docs/installing.md says what would).

    python3 scripts/check_spack_package.py
"""
import importlib.util
import pathlib
import sys
import types

ROOT = pathlib.Path(__file__).resolve().parent.parent
DECLARED = []


def directive(kind):
    def record(*args, **kwargs):
        DECLARED.append((kind, args, kwargs))
    return record


class Prefix(str):
    @property
    def bin(self):
        return self + "/bin"


class Spec:
    """Just what the package asks of a spec: satisfies('+v'/'~v'), variants, spec[dep].prefix."""

    def __init__(self, **variants):
        self.variants = {k: types.SimpleNamespace(value=v) for k, v in variants.items()}

    def satisfies(self, text):
        sign, name = text[0], text[1:]
        return self.variants[name].value == (sign == "+")

    def __getitem__(self, dep):
        return types.SimpleNamespace(prefix=Prefix(f"/spack/opt/{dep}"))


class CMakePackage:
    def __init__(self, spec):
        self.spec = spec

    @staticmethod
    def define(name, value):
        if isinstance(value, bool):
            return f"-D{name}:BOOL={'ON' if value else 'OFF'}"
        return f"-D{name}:STRING={value}"

    def define_from_variant(self, name, variant):
        return self.define(name, self.spec.variants[variant].value)


stub = types.ModuleType("spack.package")
for kind in ("version", "variant", "depends_on", "conflicts", "license", "maintainers", "generator"):
    setattr(stub, kind, directive(kind))
stub.CMakePackage = CMakePackage
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
versions = [args[0] for kind, args, _ in DECLARED if kind == "version"]
expect(project_version in versions, f"declares version {project_version} (project(VERSION) in CMakeLists.txt): {versions}")
variants = {args[0]: kwargs.get("default") for kind, args, kwargs in DECLARED if kind == "variant"}
expect(variants == {"cuda": False, "hdf5": True}, f"variants cuda (default off) and hdf5 (default on): {variants}")
deps = {(args[0], kwargs.get("when")) for kind, args, kwargs in DECLARED if kind == "depends_on"}
for name, when in [("py-torch@2.11:2.15", None), ("yaml-cpp@0.7:", None), ("libjpeg-turbo", None), ("libpng", None),
                   ("zlib-api", None), ("fmt@9:", None), ("hdf5~mpi", "+hdf5"), ("cuda", "+cuda"), ("nccl", "+cuda"),
                   ("py-torch+cuda", "+cuda"), ("cmake@3.25:", None)]:
    expect((name, when) in deps, f"depends_on({name!r}{', when=' + repr(when) if when else ''})")
expect(issubclass(Fulgur, CMakePackage), "Fulgur is a CMakePackage")
for cuda in (False, True):
    for hdf5 in (False, True):
        args = Fulgur(Spec(cuda=cuda, hdf5=hdf5)).cmake_args()
        want = [f"-DFULGUR_WITH_CUDA:BOOL={'ON' if cuda else 'OFF'}", f"-DFULGUR_WITH_HDF5:BOOL={'ON' if hdf5 else 'OFF'}",
                "-DFULGUR_BUILD_TESTS:BOOL=OFF", "-DFULGUR_BUILD_EXAMPLES:BOOL=OFF", "-DFULGUR_BUILD_BENCH:BOOL=OFF"]
        if cuda:
            want.append("-DCMAKE_CUDA_COMPILER:STRING=/spack/opt/cuda/bin/nvcc")
        expect(all(w in args for w in want) and (cuda or not any("CUDA_COMPILER" in a for a in args)),
               f"cmake_args for {'+' if cuda else '~'}cuda {'+' if hdf5 else '~'}hdf5: {args}")
# Every CMake option the package sets is declared by fulgur's CMake files.
cmake_text = "".join(p.read_text() for p in [ROOT / "CMakeLists.txt", *ROOT.glob("*/CMakeLists.txt")])
for option in ("FULGUR_WITH_CUDA", "FULGUR_WITH_HDF5", "FULGUR_BUILD_TESTS", "FULGUR_BUILD_EXAMPLES", "FULGUR_BUILD_BENCH"):
    expect(f"option({option} " in cmake_text, f"the CMake files declare option {option}")
print(f"{len(errors)} failure(s)")
sys.exit(1 if errors else 0)
