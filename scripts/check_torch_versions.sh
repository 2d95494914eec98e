#!/usr/bin/env bash
# Builds fulgur against several LibTorch releases and runs the CPU suite
# against each: the supported range in docs/development.md. Not part of CI
# (each version is a cold build and a full ctest, about 40 minutes on 2 cores).
#
#   scripts/check_torch_versions.sh [version...]     (default: 2.11.0 2.15.0)
#   TESTS='-R ddp|fsdp' scripts/check_torch_versions.sh 2.11.0   (a ctest subset)
#
# Each torch wheel (with its dependencies) goes into a venv of its own under
# $FULGUR_CACHE (default ~/.cache/fulgur) as torch-<version>; each build into
# build-torch-<version>/ (its log: check.log there). The tests' Python peers still come from .venv.
# Prints one line per version: configured, built, and the ctest summary.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${FULGUR_CACHE:-$HOME/.cache/fulgur}"
versions=("$@")
((${#versions[@]})) || versions=(2.11.0 2.15.0)
bash "$root/scripts/setup.sh" > /dev/null  # apt packages, .venv and the demo data the tests read

status=0
for version in "${versions[@]}"; do
  venv="$cache/torch-$version"
  if [[ ! -f "$venv/.complete" ]]; then
    echo "[torch $version] creating $venv"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --no-cache-dir "torch==$version"
    touch "$venv/.complete"
  fi
  torch_dir="$("$venv/bin/python" -W ignore -c 'import torch.utils; print(torch.utils.cmake_prefix_path)' 2>/dev/null)/Torch"
  build="$root/build-torch-$version"
  mkdir -p "$build"
  log="$build/check.log"
  echo "[torch $version] building into $build (log: $log)"
  # nvImageCodec (the device-decode tests' CPU backend) comes from the tests' venv, not the version's.
  nvimgcodec="$root/.venv/lib/python3.11/site-packages/nvidia/nvimgcodec"
  if ! { cmake -S "$root" -B "$build" -G Ninja -DTorch_DIR="$torch_dir" \
           -DFULGUR_NVIMGCODEC_INCLUDE_DIR="$nvimgcodec/include" && cmake --build "$build" -j"${JOBS:-2}"; } \
      > "$log" 2>&1; then
    echo "[torch $version] BUILD FAILED:"; grep -m 20 -E "error|Error" "$log" || tail -30 "$log"
    status=1
    continue
  fi
  # shellcheck disable=SC2086  # TESTS holds ctest arguments
  if (cd "$build" && FULGUR_NVIMGCODEC_DIR="$nvimgcodec" ctest -j"${JOBS:-2}" --timeout 900 ${TESTS:-} >> "$log" 2>&1); then
    echo "[torch $version] $(grep -E 'tests passed' "$log" | tail -1)"
  else
    echo "[torch $version] TESTS FAILED: $(grep -E 'tests passed|tests failed' "$log" | tail -1)"
    grep -E '^\s+[0-9]+ - ' "$log" | tail -20
    status=1
  fi
done
exit $status
