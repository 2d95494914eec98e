#!/usr/bin/env bash
# Brings a fresh Debian 12 machine to the point where fulgur builds and its
# tests run. Idempotent: every step checks whether it is already done.
#
#   scripts/setup.sh          apt packages + Python venv (+ demo data)
#
# The venv is large (the torch wheel is a CUDA build), so it lives outside the
# clone under $FULGUR_CACHE (default ~/.cache/fulgur), keyed by the hash of
# scripts/requirements.txt; .venv at the repository root is a symlink to it.
# scripts/requirements-extra.txt (wandb, matplotlib) is installed into that same venv when
# missing, so adding to it does not build a new venv.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${FULGUR_CACHE:-$HOME/.cache/fulgur}"
req="$root/scripts/requirements.txt"
req_extra="$root/scripts/requirements-extra.txt"

apt_packages=(
  build-essential cmake ninja-build ccache pkg-config
  libyaml-cpp-dev libfmt-dev doctest-dev
  libturbojpeg0-dev libjpeg62-turbo-dev libpng-dev zlib1g-dev
  libgloo-dev iproute2 openmpi-bin clang
  libhdf5-dev
  python3-venv
  libpython3.11-stdlib  # the transformer_lm example's corpus (pydoc_data/topics.py)
)

log() { printf '[setup] %s\n' "$*"; }

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

install_venv() {
  local key venv
  key="$(sha256sum "$req" | cut -c1-16)"
  venv="$cache/venv-$key"
  if [[ ! -f "$venv/.complete" ]]; then
    log "creating Python venv $venv (first time: downloads the torch wheel, several GB)"
    rm -rf "$venv"
    mkdir -p "$cache"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --upgrade pip
    "$venv/bin/pip" install -q --no-cache-dir -r "$req"
    touch "$venv/.complete"
  else
    log "Python venv present: $venv"
  fi
  ln -sfn "$venv" "$root/.venv"
}

# Installs requirements-extra.txt when one of its direct requirements is
# missing or at another version (pip show is local; pip install -r would ask the index).
install_extra() {
  local want missing=()
  while read -r want; do
    "$root/.venv/bin/pip" show "${want%%==*}" 2>/dev/null | grep -x "Version: ${want#*==}" >/dev/null || missing+=("$want")
  done < <(sed -n '/^# Their dependencies/q;/^[A-Za-z]/p' "$req_extra")
  if ((${#missing[@]} == 0)); then
    log "extra Python packages present"
    return
  fi
  log "installing extra Python packages into the venv: ${missing[*]}"
  "$root/.venv/bin/pip" install -q --no-cache-dir -r "$req_extra"
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

install_apt
install_venv
install_extra
make_demo_data
log "done"
