#!/usr/bin/env bash
# Builds the Debian container of containers/Dockerfile.debian here and runs
# the demo in it (docs/installing.md):
#
#   1. podman and runc from Debian (apt, if missing), debootstrap too;
#   2. a Debian 12 minbase root made with debootstrap under a temp dir and
#      imported with `podman import` as localhost/fulgur-base:bookworm;
#   3. `podman build` of containers/Dockerfile.debian on that base (the
#      repository's files that git tracks or does not ignore, as the context;
#      the host's /usr/local/cuda mounted read-only for the build only);
#   4. `podman run` of the image: exports the digits, trains and tests
#      (scripts/demo.sh), which must reach test_acc >= 0.97.
#
#   scripts/check_container.sh          (as root; KEEP=1 keeps the images,
#                                        REUSE_BASE=1 reuses a kept base image)
#
# Writes only under a temp dir and podman's storage; removes its images at
# the end unless KEEP=1. Not part of `make test` (it downloads a Debian root,
# the torch wheel and builds fulgur from cold: 6 min 25 s on a quiet 2-core
# machine, 12 to 19 min beside other builds).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
start=$SECONDS
log() { printf '[check_container %4ds] %s\n' $((SECONDS - start)) "$*"; }
fail() { echo "check_container: $*" >&2; exit 1; }
[[ $EUID == 0 ]] || fail "run as root (debootstrap; rootful podman)"
mirror="${FULGUR_CONTAINER_MIRROR:-http://deb.debian.org/debian}"
base=localhost/fulgur-base:bookworm
image=localhost/fulgur-debian:check
[[ -x /usr/local/cuda/bin/nvcc ]] || fail "no /usr/local/cuda/bin/nvcc: the torch wheel's CMake files need nvcc to configure"

missing=()
for p in podman runc debootstrap; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  log "installing ${missing[*]} (apt)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" > /dev/null
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/fulgur-container.XXXXXX")"
cleanup() {
  rm -rf "$work"
  [[ "${KEEP:-0}" == 1 ]] || podman rmi -f "$image" "$base" > /dev/null 2>&1 || true
}
trap cleanup EXIT

if [[ "${REUSE_BASE:-0}" == 1 ]] && podman image exists "$base"; then
  log "reusing $base (REUSE_BASE=1)"
else
  log "debootstrap bookworm (minbase) from $mirror"
  debootstrap --variant=minbase bookworm "$work/rootfs" "$mirror" > "$work/debootstrap.log" 2>&1 \
    || { tail -30 "$work/debootstrap.log"; fail "debootstrap failed"; }
  log "podman import -> $base"
  tar -C "$work/rootfs" -c . | podman import - "$base" > "$work/import.log" 2>&1 || { cat "$work/import.log"; fail "podman import failed"; }
  rm -rf "$work/rootfs"
fi

# The build context: what git tracks or does not ignore (no build/, .venv, data/).
log "context: the repository's files (git ls-files)"
mkdir -p "$work/context"
git -C "$root" ls-files -z --cached --others --exclude-standard \
  | tar -C "$root" --null -T - -c --ignore-failed-read 2> /dev/null | tar -C "$work/context" -x
# pip in the build trusts what this machine trusts (a proxy's CA, say).
ca="${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}"
log "podman build (log: $work/build.log)"
podman build -f "$work/context/containers/Dockerfile.debian" --build-arg BASE="$base" \
  --ignorefile "$work/context/containers/Dockerfile.dockerignore" --network host \
  --volume /usr/local/cuda:/usr/local/cuda:ro --volume "$ca:/etc/ssl/host-ca.crt:ro" \
  -t "$image" "$work/context" > "$work/build.log" 2>&1 \
  || { tail -40 "$work/build.log"; cp "$work/build.log" "${TMPDIR:-/tmp}/fulgur-container-build.log"; fail "podman build failed (log: ${TMPDIR:-/tmp}/fulgur-container-build.log)"; }
podman image exists "$image" || { tail -20 "$work/build.log"; fail "podman build made no image $image"; }
grep -E "^STEP|^COMMIT|Successfully tagged" "$work/build.log" | cut -c1-120 | sed 's/^/  /'
log "image $(podman image inspect "$image" --format '{{.Id}}' | cut -c1-12), $(podman image inspect "$image" --format '{{.Size}}' | awk '{ printf "%.0f MB", $1 / 1e6 }')"

log "podman run: export the digits, train and test (scripts/demo.sh)"
# podman's default limits (nofile 1048576, nproc its own maximum) are more
# than this VM lets runc set ("error setting rlimit type 7: operation not
# permitted"); these are ample for the demo.
podman run --rm --pull=never --network none --ulimit nofile=16384:16384 --ulimit nproc=16384:16384 "$image" bash -c "build/bin/cinic10 --version && python scripts/export_digits.py data/digits-cinic && scripts/demo.sh build" \
  | tee "$work/run.log" | grep -E "^fulgur [0-9]|^demo:|^test:|images" || true
test_acc="$(sed -n 's/^demo: test_acc \([0-9.]*\).*/\1/p' "$work/run.log")"
[[ -n "$test_acc" ]] || { tail -30 "$work/run.log"; fail "the demo did not finish (above)"; }
awk -v a="$test_acc" 'BEGIN { exit !(a >= 0.97) }' || fail "test_acc $test_acc below 0.97"
log "PASS: image built on a local debootstrap base; the demo in it reached test_acc $test_acc"
