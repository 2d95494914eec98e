#!/usr/bin/env bash
# Brings a fresh Debian 12 machine to the point where fulgur builds and its
# tests run. Idempotent: every step checks whether it is already done.
#
#   scripts/setup.sh demo     apt packages + the demo's venv + the demo data (make demo)
#   scripts/setup.sh          all of that + what the tests and benchmarks add (make test)
#
# The venv lives outside the clone under $FULGUR_CACHE (default
# ~/.cache/fulgur), keyed by the hash of scripts/requirements-demo.txt; .venv
# at the repository root is a symlink to it. The second stage installs
# scripts/requirements.txt into the same venv (again when that file changes).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${FULGUR_CACHE:-$HOME/.cache/fulgur}"
req_demo="$root/scripts/requirements-demo.txt"
req_test="$root/scripts/requirements.txt"
uv_version=0.13.9  # the installer of both stages (pip installs it first)
stage="${1:-all}"
[[ "$stage" == demo || "$stage" == all ]] || { echo "usage: scripts/setup.sh [demo]" >&2; exit 2; }

apt_packages=(
  build-essential cmake ninja-build ccache pkg-config
  libyaml-cpp-dev libfmt-dev doctest-dev
  libturbojpeg0-dev libjpeg62-turbo-dev libpng-dev zlib1g-dev
  libgloo-dev iproute2 openmpi-bin clang
  libhdf5-dev
  gfortran  # the Fortran module's test (online/fulgur_online.f90)
  libopenmpi-dev  # examples/insitu: the simulation's own MPI (halo exchange)
  libzmq3-dev  # ensembles: the client library and the server (docs/ensemble.md)
  python3-venv
  libpython3.11-stdlib  # the transformer_lm example's corpus (pydoc_data/topics.py)
)

log() { printf '[setup] %s\n' "$*"; }

# uv installs the wheels in parallel (32 s where pip took 45 s for the demo's
# 1.5 GB on 2 cores); pip installs uv into the venv first. --compile-bytecode:
# Python starts without compiling torch's files each time (uv compiles only
# what it installs, so both stages ask for it).
uv_install() {
  local venv="$1" requirements="$2"
  [[ -x "$venv/bin/uv" ]] || "$venv/bin/pip" install -q --no-cache-dir "uv==$uv_version"
  "$venv/bin/uv" pip install -q --no-cache --no-deps --compile-bytecode --python "$venv/bin/python" -r "$requirements"
}

install_apt() {
  local missing=()
  for p in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]} == 0)); then
    log "apt packages present"
    return
  fi
  log "installing apt packages: ${missing[*]}"
  local sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Both files pin every package, so pip installs exactly them (--no-deps).
install_venv() {
  local key venv
  key="$(sha256sum "$req_demo" | cut -c1-16)"
  venv="$cache/venv-$key"
  if [[ ! -f "$venv/.complete" ]]; then
    log "creating Python venv $venv (the demo's part: the torch wheel, ~1.5 GB)"
    rm -rf "$venv"
    mkdir -p "$cache"
    python3 -m venv "$venv"
    uv_install "$venv" "$req_demo"
    touch "$venv/.complete"
  else
    log "Python venv present: $venv"
  fi
  ln -sfn "$venv" "$root/.venv"
}

install_test_packages() {
  local marker
  marker="$root/.venv/.tests-$(sha256sum "$req_test" | cut -c1-16)"
  if [[ -f "$marker" ]]; then
    log "test packages present"
    return
  fi
  log "installing the tests' Python packages into the venv (~3.5 GB)"
  uv_install "$root/.venv" "$req_test"  # 19-24 s; pip took ~70 s
  rm -f "$root"/.venv/.tests-*
  touch "$marker"
}

make_demo_data() {
  local out="$root/data/digits-cinic"
  if [[ -f "$out/.complete" ]]; then
    log "demo data present: $out"
    return
  fi
  log "exporting scikit-learn digits to $out"
  "$root/.venv/bin/python" "$root/scripts/export_digits.py" "$out"
}

# The venv needs none of the apt packages but python3-venv, and both steps
# mostly wait on downloads and unpacking: side by side when python3-venv is
# installed already.
if dpkg-query -W -f='${Status}' python3-venv 2>/dev/null | grep -q "install ok installed"; then
  install_venv &
  venv_pid=$!
  # apt failed: the venv's step stops too, with the pip or uv it is running.
  trap 'pkill -P "$venv_pid" 2>/dev/null; kill "$venv_pid" 2>/dev/null' EXIT
  install_apt
  wait "$venv_pid"
  trap - EXIT
else
  install_apt
  install_venv
fi
[[ "$stage" == demo ]] || install_test_packages
make_demo_data
log "done"
