#!/usr/bin/env bash
# A CPU-only configure needs no CUDA toolkit (ctest cpu_only_configure_test,
# docs/installing.md "CPU only, without a CUDA toolkit"): in a mount
# namespace where every CUDA toolkit and nvcc of this machine is hidden
# (an empty folder over /usr/local/cuda's target, an empty non-executable
# file over each nvcc on the PATH), fulgur configures against the same
# LibTorch (a CUDA build: the torch wheel) with -DFULGUR_WITH_CUDA=OFF and
# with the default ON, says why it is CPU only, and plans no CUDA module.
#
#   tests/cpu_only_configure_test.sh <Torch_DIR>
#
# Needs root (unshare -m); exits 77 (ctest: skipped) without. Writes only
# under a temp dir.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
torch_dir="${1:?usage: cpu_only_configure_test.sh <Torch_DIR>}"
fail() { echo "cpu_only_configure_test: FAIL: $*" >&2; exit 1; }
if [[ $EUID != 0 ]] || ! unshare -m true 2> /dev/null; then
  echo "cpu_only_configure_test: skipped: needs root for a mount namespace (unshare -m)"; exit 77
fi
tmp="$(mktemp -d "${TMPDIR:-/tmp}/fulgur-cpu-only.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/empty"; : > "$tmp/nonexec"; chmod 644 "$tmp/nonexec"

# What to hide: the toolkit /usr/local/cuda points at, and every nvcc found.
hide_dirs=(); hide_files=()
[[ -e /usr/local/cuda ]] && hide_dirs+=("$(realpath /usr/local/cuda)")
while IFS= read -r n; do hide_files+=("$n"); done < <(type -ap nvcc || true)
cat > "$tmp/inside.sh" << EOF
set -e
for d in ${hide_dirs[*]:-}; do mount --bind "$tmp/empty" "\$d"; done
for f in ${hide_files[*]:-}; do [ -e "\$f" ] && mount --bind "$tmp/nonexec" "\$f"; done
for d in \$(echo "\$PATH" | tr : ' ') /usr/local/cuda/bin; do
  if [ -x "\$d/nvcc" ]; then echo "an nvcc is still there: \$d/nvcc"; exit 3; fi
done
unset CUDACXX CUDAToolkit_ROOT CUDA_HOME CUDA_PATH
cmake -S "$root" -B "\$1" -G Ninja -DTorch_DIR="$torch_dir" -DFULGUR_WITH_CUDA="\$2" \
  -DFULGUR_BUILD_TESTS=OFF -DFULGUR_BUILD_EXAMPLES=OFF -DFULGUR_BUILD_BENCH=OFF
EOF
for with_cuda in OFF ON; do
  b="$tmp/build-$with_cuda"
  unshare -m bash "$tmp/inside.sh" "$b" "$with_cuda" > "$tmp/$with_cuda.log" 2>&1 \
    || { tail -30 "$tmp/$with_cuda.log"; fail "FULGUR_WITH_CUDA=$with_cuda: the configure without a CUDA toolkit failed (above)"; }
  reason="$(grep -o '\[fulgur\] CPU only ([^)]*)' "$tmp/$with_cuda.log" || true)"
  [[ -n "$reason" ]] || fail "FULGUR_WITH_CUDA=$with_cuda: the configure did not say it is CPU only"
  grep -q '^build fulgur_cuda\b\|libfulgur_cuda' "$b/build.ninja" && fail "FULGUR_WITH_CUDA=$with_cuda: a CUDA module is planned"
  grep -q '^CMAKE_CUDA_COMPILER:.*nvcc' "$b/CMakeCache.txt" && fail "FULGUR_WITH_CUDA=$with_cuda: a CUDA compiler was found: $(grep '^CMAKE_CUDA_COMPILER:' "$b/CMakeCache.txt")"
  echo "cpu_only_configure_test: ok: FULGUR_WITH_CUDA=$with_cuda, no toolkit: $reason"
done
echo "cpu_only_configure_test: PASS (hidden: ${hide_dirs[*]:-none} ${hide_files[*]:-})"
