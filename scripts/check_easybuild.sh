#!/usr/bin/env bash
# Tests packaging/easybuild/fulgur-<version>.eb here, offline, the way a
# cluster installs software (docs/installing.md):
#
#   1. Lmod from Debian (apt, if missing) and EasyBuild 5 from PyPI in a
#      scratch venv (or the one EB_VENV names: its bin/eb is used as is);
#   2. the dependencies as what EasyBuild supports for software it did not
#      build: the OS's libraries (yaml-cpp, libjpeg-turbo, libpng, zlib, fmt,
#      HDF5, CMake) filtered out with --filter-deps, and PyTorch as a small
#      hand-written Lua module whose root is the torch wheel's venv (.venv);
#   3. fulgur's sources from `git archive` of REF (default HEAD: commit first);
#   4. `eb` builds and installs with the SYSTEM toolchain (2 jobs);
#   5. in a clean shell, `module load fulgur` and nothing else: a consumer
#      project (packaging/consumer: examples/cinic10 built outside the tree)
#      runs find_package(fulgur 0.1), builds, trains the digits and must
#      reach test_acc >= 0.97.
#
#   scripts/check_easybuild.sh [REF]       (KEEP=1 keeps the temp dir)
#
# Everything goes under one temp dir, removed at the end. Not part of
# `make test`: it builds fulgur once more from cold (17 min 26 s on a 2-core
# machine beside other builds, 14 min of it `eb`).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ref="${1:-HEAD}"
start=$SECONDS
log() { printf '[check_easybuild %4ds] %s\n' $((SECONDS - start)) "$*"; }
fail() { echo "check_easybuild: $*" >&2; exit 1; }

version="$(sed -n 's/^project(fulgur VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")"
ec="$root/packaging/easybuild/fulgur-$version.eb"
[[ -f "$ec" ]] || fail "no easyconfig $ec for version $version (project(VERSION) in CMakeLists.txt)"
venv="$(readlink -f "$root/.venv" || true)"
torch_dir="$(echo "$venv"/lib/python3*/site-packages/torch)"
[[ -f "$torch_dir/share/cmake/Torch/TorchConfig.cmake" ]] || fail "no torch wheel in $root/.venv: run scripts/setup.sh demo"
[[ -d "$root/data/digits-cinic/test" ]] || fail "no digits in $root/data/digits-cinic: run scripts/setup.sh demo"
# The PyTorch module carries the easyconfig's version; the wheel must be that version.
torch_version="$(sed -n "s/^ *('PyTorch', '\([^']*\)'.*/\1/p" "$ec")"
wheel_version="$(sed -n "s/^__version__ = '\([^'+]*\).*/\1/p" "$torch_dir/version.py")"
[[ -n "$torch_version" && "$torch_version" == "$wheel_version" ]] \
  || fail "$ec wants PyTorch '$torch_version' but .venv has torch '$wheel_version'"

work="$(mktemp -d "${TMPDIR:-/tmp}/fulgur-easybuild.XXXXXX")"
[[ "${KEEP:-0}" == 1 ]] && log "keeping $work" || trap 'rm -rf "$work"' EXIT

# 1. Lmod and EasyBuild.
if ! dpkg-query -W -f='${Status}' lmod 2>/dev/null | grep -q "install ok installed"; then
  log "installing lmod (apt)"
  sudo=""; [[ $(id -u) -eq 0 ]] || sudo=sudo
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq lmod > /dev/null
fi
if [[ -n "${EB_VENV:-}" ]]; then
  eb_venv="$EB_VENV"
else
  log "installing EasyBuild 5 from PyPI into $work/eb-venv"
  python3 -m venv "$work/eb-venv"
  "$work/eb-venv/bin/pip" install -q --no-cache-dir 'easybuild==5.*'
  eb_venv="$work/eb-venv"
fi
export EB_PYTHON="$eb_venv/bin/python"  # eb's launcher looks for a python otherwise
set +u; source /usr/share/lmod/lmod/init/bash; set -u
log "$("$eb_venv/bin/eb" --version), Lmod $(module --version 2>&1 | sed -n 's/.*Version \([0-9.]*\).*/\1/p' | head -1)"

# 2. PyTorch as a module: what an EasyBuild-built PyTorch module sets
# (EBROOT*, its prefix on CMAKE_PREFIX_PATH, its site-packages on PYTHONPATH).
mkdir -p "$work/modules/PyTorch"
cat > "$work/modules/PyTorch/$torch_version.lua" <<EOF
help([[PyTorch $torch_version: the torch wheel of fulgur's venv, as a module (scripts/check_easybuild.sh)]])
whatis("Name: PyTorch")
whatis("Version: $torch_version")
local root = "$venv"
setenv("EBROOTPYTORCH", root)
setenv("EBVERSIONPYTORCH", "$torch_version")
prepend_path("CMAKE_PREFIX_PATH", root)
prepend_path("PYTHONPATH", pathJoin(root, "$(realpath --relative-to="$venv" "$torch_dir/..")"))
EOF
filtered="CMake,yaml-cpp,libjpeg-turbo,libpng,zlib,fmt,HDF5"

# 3. Sources.
mkdir -p "$work/sources/f/fulgur"
git -C "$root" archive --prefix="fulgur-$version/" -o "$work/sources/f/fulgur/fulgur-$version.tar.gz" "$ref"
log "sources: git archive $ref ($(git -C "$root" rev-parse --short "$ref"))"

# 4. eb. Root may build (this machine's tests run as root), with the flag that says so.
as_root=(); [[ $(id -u) -ne 0 ]] || as_root=(--allow-use-as-root-and-accept-consequences)
eb_opts=("${as_root[@]}" --prefix="$work/eb" --installpath="$work/install" --sourcepath="$work/sources"
         --tmpdir="$work/eb-tmp" --modules-tool=Lmod --module-syntax=Lua --filter-deps="$filtered" --max-parallel=2)
module use "$work/modules"

# The CUDA easyconfig is not built here (no GPU, no CUDA module): EasyBuild
# parses it and shows what it would run (--extended-dry-run), with stand-in
# CUDA, NCCL and PyTorch-CUDA modules (the host's toolkit, the wheel's NCCL).
cuda_ec="$root/packaging/easybuild/fulgur-$version-CUDA-13.0.0.eb"
if [[ -f "$cuda_ec" ]]; then
  mkdir -p "$work/modules/CUDA" "$work/modules/NCCL"
  printf 'setenv("EBROOTCUDA", "/usr/local/cuda")\nsetenv("EBVERSIONCUDA", "13.0.0")\nprepend_path("PATH", "/usr/local/cuda/bin")\n' \
    > "$work/modules/CUDA/13.0.0.lua"
  printf 'setenv("EBROOTNCCL", "%s")\nsetenv("EBVERSIONNCCL", "2.30.3")\n' "$torch_dir/../nvidia/nccl" \
    > "$work/modules/NCCL/2.30.3-CUDA-13.0.0.lua"
  cp "$work/modules/PyTorch/$torch_version.lua" "$work/modules/PyTorch/$torch_version-CUDA-13.0.0.lua"
  "$eb_venv/bin/eb" "$cuda_ec" "${eb_opts[@]}" --extended-dry-run > "$work/eb-cuda-dry-run.log" 2>&1 \
    || { cat "$work/eb-cuda-dry-run.log"; fail "eb --extended-dry-run $(basename "$cuda_ec") failed"; }
  # (A dry run does not show CMakeMake's cmake line: it cannot ask cmake its version.)
  for want in "Build succeeded for 1 out of 1" 'depends_on("CUDA/13.0.0")' 'depends_on("NCCL/2.30.3-CUDA-13.0.0")' \
              'depends_on("PyTorch/2.14.1-CUDA-13.0.0")' "lib/libfulgur_cuda.so"; do
    grep -qF "$want" "$work/eb-cuda-dry-run.log" \
      || { cat "$work/eb-cuda-dry-run.log"; fail "$(basename "$cuda_ec"): the dry run lacks '$want'"; }
  done
  log "$(basename "$cuda_ec"): eb --extended-dry-run resolves it (module fulgur/$version-CUDA-13.0.0 on CUDA, NCCL, PyTorch-CUDA; sanity check wants libfulgur_cuda.so); not built"
fi
log "eb $(basename "$ec") (build log: $work/eb.log)"
if ! "$eb_venv/bin/eb" "$ec" "${eb_opts[@]}" > "$work/eb.log" 2>&1; then
  cat "$work/eb.log"
  grep -h -B2 -A6 "error:" "$work"/eb-tmp/*/run-shell-cmd-output/*/out.txt 2>/dev/null | head -60 || true
  fail "eb failed (above)"
fi
grep -E "^== (COMPLETED|building and installing)|Build succeeded" "$work/eb.log" || true
modfile="$work/install/modules/all/fulgur/$version.lua"
[[ -f "$modfile" ]] || fail "eb wrote no module $modfile"
log "module $modfile:"
sed -n '/^depends_on\|^load\|CMAKE_PREFIX_PATH\|^setenv("EBROOT/p' "$modfile"

# 5. A user's shell: a clean environment, the site's MODULEPATH, `module load fulgur`.
log "consumer: module load fulgur; cmake packaging/consumer; train the digits"
src="$work/src"
mkdir -p "$src"
tar -xzf "$work/sources/f/fulgur/fulgur-$version.tar.gz" -C "$src" --strip-components=1
env -i HOME="$HOME" PATH=/usr/local/bin:/usr/bin:/bin TERM=dumb \
  MODULEPATH="$work/install/modules/all:$work/modules" WORK="$work" SRC="$src" DIGITS="$root/data/digits-cinic" \
  bash --noprofile --norc -euo pipefail -c '
    source /usr/share/lmod/lmod/init/bash
    module load fulgur
    module list 2>&1
    cmake -S "$SRC/packaging/consumer" -B "$WORK/digits" -DCMAKE_BUILD_TYPE=Release > "$WORK/digits-configure.log" 2>&1 \
      || { cat "$WORK/digits-configure.log"; exit 1; }
    grep "fulgur .* from" "$WORK/digits-configure.log"
    cmake --build "$WORK/digits" -j2 > "$WORK/digits-build.log" 2>&1 || { cat "$WORK/digits-build.log"; exit 1; }
    "$WORK/digits/cinic10" --version
    cd "$SRC"
    "$WORK/digits/cinic10" fit --config examples/cinic10/digits.yaml --data.root "$DIGITS" \
      --trainer.default_root_dir "$WORK/runs" --trainer.enable_progress_bar false | tee "$WORK/train.log"
  ' || fail "the consumer failed after module load fulgur (above)"
metrics="$(sed -n 's/^fulgur: run folder //p' "$work/train.log" | tail -1)/metrics.csv"
test_acc="$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "test_acc") col = i; next }
                      col && $col != "" { v = $col } END { print v }' "$metrics")"
awk -v a="$test_acc" 'BEGIN { exit !(a >= 0.97) }' || fail "test_acc '$test_acc' below 0.97 ($metrics)"
log "PASS: eb built and installed fulgur $version; after module load fulgur the digits trained to test_acc $test_acc"
