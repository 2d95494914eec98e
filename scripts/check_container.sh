#!/usr/bin/env bash
# Builds the CPU image of containers/Dockerfile.debian as a site would and
# runs the demo in it (docs/installing.md, "Containers"), with podman (the
# default) or Docker (CONTAINER_ENGINE=docker):
#
#   1. the engine and debootstrap from Debian (apt), where missing: podman
#      and runc, or docker.io (whose daemon must be running: dockerd as
#      root, or systemctl start docker);
#   2. a Debian 12 minbase root made with debootstrap and imported as
#      localhost/fulgur-base:bookworm (no registry needed);
#   3. the context: a clone of the repository at REF (default HEAD: commit
#      first, the working tree's changes are not in it) that looks like a
#      checkout that was built and run before (a stale build/CMakeCache.txt,
#      data/, the documented run's out/),
#      so the root's .dockerignore is what keeps them out;
#   4. `podman build` (`DOCKER_BUILDKIT=1 docker build`: Debian 12's
#      Docker 20.10 builds with its classic builder otherwise, which has no
#      RUN --mount) of containers/Dockerfile.debian on that base as
#      shipped (PyPI's torch wheel, CPU-only, no CUDA toolkit anywhere), with
#      this machine's CA bundle as the build secret "ca" (PIP_CERT to
#      override), the version label from REF's CMakeLists.txt;
#   5. the image: under 1.2 GB; user 1000:1000; labels version and licence;
#      no compiler, no -dev package, no /src, /opt/venv or caches (its files
#      as `create` + `export` give them); the CA secret in no layer (no file
#      with its bytes, not in the engine's `history`);
#   6. `run` as user 1000 on a read-only root without network
#      (--read-only --network none --user 1000:1000 --tmpfs /tmp, /work a
#      mounted folder): the default command trains and tests the digits,
#      which must reach test_acc >= 0.97 in /work/runs;
#   7. the GPU recipe containers/Dockerfile as far as it goes without a
#      registry: the build must stop at its first FROM (nvcr.io), nothing else.
#
#   scripts/check_container.sh [REF]    (as root; CONTAINER_ENGINE=docker
#                                        for Docker, default podman; KEEP=1
#                                        keeps the images, REUSE_BASE=1 reuses
#                                        a kept base image)
#
# Writes only under a temp dir and the engine's storage; removes its images
# at the end unless KEEP=1 (the engine's build cache stays: `podman image
# prune` / `docker builder prune` frees it). Not part of `make test`: it downloads a Debian root
# and the torch wheel and builds fulgur from cold (docs/installing.md has the
# times measured).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ref="${1:-HEAD}"
start=$SECONDS
log() { printf '[check_container %4ds] %s\n' $((SECONDS - start)) "$*"; }
fail() { echo "check_container: FAIL: $*" >&2; exit 1; }
[[ $EUID == 0 ]] || fail "run as root (debootstrap; a rootful engine)"
engine="${CONTAINER_ENGINE:-podman}"
# What differs between the engines; everything else is the same command.
case "$engine" in
  podman)
    packages=(podman runc debootstrap)
    build=(podman build --network host)
    build_steps='^(\[[0-9]+/[0-9]+\] )?(STEP|COMMIT)'
    no_pull=(--pull=never) ;;
  docker)
    packages=(docker.io debootstrap)
    build=(env DOCKER_BUILDKIT=1 docker build --progress=plain)
    build_steps='^#[0-9]+ (\[|DONE|CACHED|ERROR)'
    no_pull=() ;;  # docker build's --pull is a bool (always pull)
  *) fail "CONTAINER_ENGINE is '$engine': podman or docker" ;;
esac
commit="$(git -C "$root" rev-parse --verify --quiet "$ref^{commit}")" || fail "'$ref' names no commit"
version="$(git -C "$root" show "$commit:CMakeLists.txt" | sed -n 's/^project(fulgur VERSION \([0-9][0-9.]*\).*/\1/p')"
[[ -n "$version" ]] || fail "no project(fulgur VERSION ...) in $ref's CMakeLists.txt"
mirror="${FULGUR_CONTAINER_MIRROR:-http://deb.debian.org/debian}"
ca="${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}"
[[ -s "$ca" ]] || fail "no CA bundle at $ca (PIP_CERT)"
base=localhost/fulgur-base:bookworm
image=localhost/fulgur-debian:check
max_mb=1200

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  log "installing ${missing[*]} (apt)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" > /dev/null
fi
if [[ "$engine" == docker ]]; then
  server="$(docker version --format '{{.Server.Version}}' 2>/dev/null)" \
    || fail "no Docker daemon answers: start it as root (dockerd, or systemctl start docker)"
  log "$(docker --version), daemon $server"
else
  log "$(podman --version)"
fi
exists() { "$engine" image inspect "$1" > /dev/null 2>&1; }

work="$(mktemp -d "${TMPDIR:-/tmp}/fulgur-container.XXXXXX")"
box="fulgur-check-$$"
cleanup() {
  "$engine" rm -f "$box" > /dev/null 2>&1 || true
  rm -rf "$work"
  [[ "${KEEP:-0}" == 1 ]] || "$engine" rmi -f "$image" "$base" > /dev/null 2>&1 || true
}
trap cleanup EXIT

if [[ "${REUSE_BASE:-0}" == 1 ]] && exists "$base"; then
  log "reusing $base (REUSE_BASE=1)"
else
  log "debootstrap bookworm (minbase) from $mirror"
  debootstrap --variant=minbase bookworm "$work/rootfs" "$mirror" > "$work/debootstrap.log" 2>&1 \
    || { tail -30 "$work/debootstrap.log"; fail "debootstrap failed"; }
  log "$engine import -> $base"
  tar -C "$work/rootfs" -c . | "$engine" import - "$base" > "$work/import.log" 2>&1 || { cat "$work/import.log"; fail "$engine import failed"; }
  rm -rf "$work/rootfs"
fi

log "context: a clone at $ref ($(git -C "$root" rev-parse --short "$commit"), version $version) with a stale build/, data/ and out/"
git clone -q --no-hardlinks "$root" "$work/context"
git -C "$work/context" checkout -q --detach "$commit"
mkdir -p "$work/context/build" "$work/context/data" "$work/context/out/runs"
printf 'CMAKE_HOME_DIRECTORY:INTERNAL=/somewhere/else\n' > "$work/context/build/CMakeCache.txt"

log "$engine build (log: $work/build.log)"
t0=$SECONDS
"${build[@]}" -f "$work/context/containers/Dockerfile.debian" --build-arg BASE="$base" \
  --build-arg FULGUR_VERSION="$version" --secret id=ca,src="$ca" --network host \
  -t "$image" "$work/context" > "$work/build.log" 2>&1 \
  || { tail -40 "$work/build.log"; cp "$work/build.log" "${TMPDIR:-/tmp}/fulgur-container-build.log"; fail "$engine build failed (log: ${TMPDIR:-/tmp}/fulgur-container-build.log)"; }
build_s=$((SECONDS - t0))
exists "$image" || { tail -20 "$work/build.log"; fail "$engine build made no image $image"; }
{ grep -E "$build_steps" "$work/build.log" || true; } | cut -c1-120 | sed 's/^/  /'
log "built in $((build_s / 60)) min $((build_s % 60)) s"

# The image as a site receives it.
size_b="$("$engine" image inspect "$image" --format '{{.Size}}')"
size_mb=$((size_b / 1000000))
log "size: $size_mb MB"
((size_mb < max_mb)) || fail "image is $size_mb MB, the goal is under $max_mb MB"
user="$("$engine" image inspect "$image" --format '{{.Config.User}}')"
[[ "$user" == "1000:1000" ]] || fail "image user is '$user', not 1000:1000"
label() { "$engine" image inspect "$image" --format "{{index .Config.Labels \"org.opencontainers.image.$1\"}}"; }
[[ "$(label version)" == "$version" ]] || fail "label org.opencontainers.image.version is '$(label version)', not $version"
[[ "$(label licenses)" == "Apache-2.0" ]] || fail "label org.opencontainers.image.licenses is '$(label licenses)', not Apache-2.0"
log "user $user; labels version $(label version), licenses $(label licenses)"

# podman's default limits (nofile 1048576, nproc its own maximum) are more
# than some VMs let runc set ("error setting rlimit type 7: operation not
# permitted"); these are ample for the demo (and the same for docker).
limits=(--ulimit nofile=16384:16384 --ulimit nproc=16384:16384)
"$engine" run --rm --pull=never --network none "${limits[@]}" --entrypoint dpkg-query "$image" -W -f='${Package}\n' \
  > "$work/packages.txt" 2> "$work/dpkg.log" || { cat "$work/dpkg.log"; fail "dpkg-query in the image failed"; }
packages="$(wc -l < "$work/packages.txt")"
((packages > 50)) || fail "dpkg-query in the image listed $packages packages"
dev="$(grep -E -e '-dev$' -e '^(gcc|g\+\+|cpp|clang|make|cmake|binutils)(-[0-9.]+)?$' "$work/packages.txt" || true)"
[[ -z "$dev" ]] || fail "the runtime image has build packages: $(echo $dev)"
# The image's files as a site receives them (both engines: create, export).
mnt="$work/image"
mkdir "$mnt"
"$engine" create --name "$box" "$image" > /dev/null
"$engine" export "$box" | tar -x -C "$mnt"
"$engine" rm -f "$box" > /dev/null
for f in usr/bin/gcc usr/bin/g++ usr/bin/cc usr/bin/c++ usr/bin/ld usr/bin/cmake usr/bin/make usr/bin/nvcc src opt/venv root/.cache; do
  [[ ! -e "$mnt/$f" && ! -L "$mnt/$f" ]] || fail "the runtime image has /$f"
done
ca_size="$(stat -c %s "$ca")"; ca_sum="$(sha256sum < "$ca" | cut -d' ' -f1)"
while IFS= read -r -d '' f; do
  [[ "$(sha256sum < "$f" | cut -d' ' -f1)" != "$ca_sum" ]] || fail "the runtime image holds the CA secret's bytes: ${f#"$mnt"}"
done < <(find "$mnt" -xdev -type f -size "${ca_size}c" -print0)
cudalibs="$(find "$mnt/opt/fulgur" -name 'libtorch_cuda*' -o -name 'libcudnn*' -o -name 'libcublas*' -o -name 'libnccl*' | head -3)"
[[ -z "$cudalibs" ]] || fail "the runtime image has LibTorch's CUDA half: $cudalibs"
rm -rf "$mnt"
"$engine" history --no-trunc --format '{{.Size}}  {{.CreatedBy}}' "$image" > "$work/history.txt"
sed 's/^/  /' "$work/history.txt" | cut -c1-150
if grep -q -e "$ca" -e 'secrets/ca' -e 'COPY \. /src' -e PIP_CERT "$work/history.txt"; then
  fail "the runtime image's history names the CA secret or the build stage: $(grep -e "$ca" -e 'secrets/ca' -e 'COPY \. /src' -e PIP_CERT "$work/history.txt" | head -2)"
fi
log "$packages Debian packages, no compiler or -dev package; no build tree, venv or cache; no CA bytes in any layer, none in the history"

log "$engine run as user 1000 on a read-only root, no network: the default command trains and tests the digits"
mkdir -p "$work/out" && chown 1000:1000 "$work/out"
t0=$SECONDS
"$engine" run --rm --pull=never --read-only --network none --tmpfs /tmp --user 1000:1000 \
  --volume "$work/out:/work" "${limits[@]}" "$image" \
  > "$work/run.log" 2>&1 || { tail -30 "$work/run.log"; fail "the run failed"; }
run_s=$((SECONDS - t0))
grep -E "^fulgur|test_acc" "$work/run.log" | sed 's/^/  /' || true
metrics="$(ls "$work"/out/runs/fulgur_logs/version_*/metrics.csv 2>/dev/null | tail -1)"
[[ -n "$metrics" ]] || { tail -30 "$work/run.log"; fail "the run wrote no metrics.csv under the mounted /work"; }
owner="$(stat -c %u "$metrics")"
[[ "$owner" == 1000 ]] || fail "metrics.csv is owned by uid $owner, not 1000"
test_acc="$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "test_acc") col = i; next }
                      col && $col != "" { v = $col } END { print v }' "$metrics")"
awk -v a="$test_acc" 'BEGIN { exit !(a >= 0.97) }' || fail "test_acc '$test_acc' below 0.97"
log "run: test_acc $test_acc in $run_s s, written by uid 1000 into the mounted folder only"

# The GPU recipe needs NGC's registry for its first FROM: it must get that
# far (the recipe parses, its build args resolve) and stop there.
log "GPU recipe containers/Dockerfile: as far as a registry is needed"
if "${build[@]}" "${no_pull[@]}" -f "$work/context/containers/Dockerfile" -t localhost/fulgur-gpu:check \
     "$work/context" > "$work/gpu.log" 2>&1; then
  "$engine" rmi -f localhost/fulgur-gpu:check > /dev/null 2>&1 || true
  fail "the GPU recipe built without NGC's registry?"
fi
grep -q "nvcr.io" "$work/gpu.log" || { tail -10 "$work/gpu.log"; fail "the GPU recipe stopped before its FROM nvcr.io (above)"; }
log "GPU recipe stops at its FROM: $(grep -m1 -o 'nvcr.io[^ "]*' "$work/gpu.log") (no registry here)"

log "PASS ($engine): containers/Dockerfile.debian as shipped: built in $((build_s / 60)) min $((build_s % 60)) s, $size_mb MB, user 1000, version $version; read-only, no network: test_acc $test_acc"
