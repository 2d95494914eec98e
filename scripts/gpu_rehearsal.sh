#!/usr/bin/env bash
# Rehearses the GPU machine's build on this machine, without a GPU: a clean
# Debian 12 root (debootstrap minbase) holding only what that machine has --
# g++, cmake, ninja, python3 with torch 2.11.0 first on the PATH, the CUDA
# toolkit (the host's /usr/local/cuda, bound read-only) and no -dev package
# beyond .gpu-kit -- gets the working tree (the files git tracks or does not
# ignore, as the GPU machine gets them) and the kit, and runs
#
#   scripts/gpu_check.sh build <report>   (must succeed)
#   scripts/gpu_check.sh run <report>     (must say no GPU is visible and exit 0)
#
# Usage (as root): scripts/gpu_rehearsal.sh [--prepare | --reuse] [report-dir]
#   --prepare    only make the cached root (and the kit), run nothing
#   --reuse      keep the last rehearsal's tree and build folder: the files
#                are copied over them and the build is incremental
#   report-dir   where the report and the two phases' logs are copied
#                (default: /var/cache/fulgur-rehearsal/report)
#   GPU_CHECK_BUDGET  seconds each phase may take (default 5400 here: this
#                machine's 2 cores build far slower than the GPU machine's)
#
# The root is cached in $FULGUR_REHEARSAL_CACHE (default
# /var/cache/fulgur-rehearsal) and remade only when this script's list of
# what goes into it changes; delete the folder to force it. Its venv takes
# the packages of an existing venv holding torch 2.11.0 for the same Python
# ($FULGUR_REHEARSAL_SEED_VENV, default /tmp/v2.11.0: hard links, no
# download) or else installs torch 2.11.0 from PyPI (about 3 GB). The build
# folder is not kept: every rehearsal builds from nothing, as on a freshly
# lent GPU machine (unless --reuse). Mounts live in a private mount
# namespace and vanish with it.
set -euo pipefail
# One block, read whole before it runs: editing the file mid-run is harmless.
{
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${FULGUR_REHEARSAL_CACHE:-/var/cache/fulgur-rehearsal}"
seed_venv="${FULGUR_REHEARSAL_SEED_VENV:-/tmp/v2.11.0}"
mirror="${FULGUR_REHEARSAL_MIRROR:-http://deb.debian.org/debian}"
prepare_only=0
reuse=0
while [[ "${1:-}" == --* ]]; do
  case "$1" in
    --prepare) prepare_only=1 ;;
    --reuse) reuse=1 ;;
    *) echo "usage: scripts/gpu_rehearsal.sh [--prepare | --reuse] [report-dir]" >&2; exit 2 ;;
  esac
  shift
done
report="${1:-$cache/report}"
suite=bookworm
apt_packages=g++,cmake,ninja-build,python3,python3-venv,ca-certificates
torch_version=2.11.0
# The rest of the GPU machine's Python (none of it is needed to build).
pip_extra=(torchvision==0.26.0 pytorch-lightning==2.6.6 torchmetrics==1.9.0 numpy pillow h5py)
venv=/opt/torch-venv
# What the cached root was made from (the last word: the recipe's revision).
stamp="$suite $apt_packages torch==$torch_version ${pip_extra[*]} rev2"
rootfs="$cache/root"

die() { echo "gpu_rehearsal: $*" >&2; exit 1; }
[[ $EUID == 0 ]] || die "run as root (debootstrap, chroot and mounts)"
for tool in debootstrap unshare chroot git tar flock; do
  command -v "$tool" > /dev/null || die "$tool is missing (apt-get install debootstrap util-linux git tar)"
done
[[ -x /usr/local/cuda/bin/nvcc ]] || die "no CUDA toolkit at /usr/local/cuda (the torch wheel's TorchConfig needs nvcc)"
mkdir -p "$cache"
exec 9> "$cache/lock"
flock -n 9 || die "another rehearsal holds $cache/lock"

# Refuses to touch a folder that still has something mounted inside it.
assert_unmounted() {
  if awk -v p="$1" '$5 == p || index($5, p "/") == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo; then
    die "$1 still has mounts inside it; not touching it"
  fi
}

# Runs a command in the root, in a private mount namespace with /proc, /sys,
# /dev and the CUDA toolkit (read-only) mounted, and an environment like the
# GPU machine's: the venv's python3 first on the PATH, then nvcc,
# CXX=/usr/bin/g++.
in_dir() {
  unshare --mount --propagation private -- /bin/bash -euo pipefail -c '
    r="$1"; shift
    mount -t proc proc "$r/proc"
    mount -t sysfs -o ro sysfs "$r/sys"
    mount --bind /dev "$r/dev"
    mkdir -p "$r/usr/local/cuda"
    mount --bind /usr/local/cuda "$r/usr/local/cuda"
    mount -o remount,bind,ro "$r/usr/local/cuda"
    exec chroot "$r" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb CXX=/usr/bin/g++ \
      PATH='"$venv"'/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
  ' in_dir "$@"
}
in_root() { in_dir "$rootfs" "$@"; }

make_root() {
  local new="$cache/root.new"
  assert_unmounted "$new"
  rm -rf "$new"
  echo "gpu_rehearsal: debootstrap $suite (minbase + $apt_packages) into $new"
  debootstrap --variant=minbase --include="$apt_packages" "$suite" "$new" "$mirror" > "$cache/debootstrap.log" 2>&1 ||
    { tail -30 "$cache/debootstrap.log"; die "debootstrap failed (log: $cache/debootstrap.log)"; }
  cp /etc/resolv.conf "$new/etc/resolv.conf"
  # pip trusts what this machine trusts (a proxy's certificate authority, say).
  cp "${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}" "$new/etc/ssl/host-ca-certificates.crt"
  in_dir "$new" /usr/bin/python3 -m venv "$venv"
  local py
  py="$(in_dir "$new" /usr/bin/python3 -c 'import sys; print(f"python{sys.version_info[0]}.{sys.version_info[1]}")')"
  local site="$new$venv/lib/$py/site-packages"
  if [[ -d "$seed_venv/lib/$py/site-packages/torch-$torch_version.dist-info" ]]; then
    echo "gpu_rehearsal: the venv takes torch $torch_version and its dependencies from $seed_venv"
    local item
    for item in "$seed_venv/lib/$py/site-packages"/*; do
      case "$(basename "$item")" in
        pip | pip-* | setuptools | setuptools-* | _distutils_hack | pkg_resources | distutils-precedence.pth | __pycache__) ;;
        *) cp -al "$item" "$site/" 2> /dev/null || cp -a "$item" "$site/" ;;
      esac
    done
  else
    echo "gpu_rehearsal: no $seed_venv with torch $torch_version for $py; installing it from PyPI"
    in_dir "$new" /usr/bin/env PIP_CERT=/etc/ssl/host-ca-certificates.crt "$venv/bin/pip" install -q --no-cache-dir \
      "torch==$torch_version" || die "pip install torch==$torch_version failed"
  fi
  in_dir "$new" /usr/bin/env PIP_CERT=/etc/ssl/host-ca-certificates.crt "$venv/bin/pip" install -q --no-cache-dir \
    "torch==$torch_version" "${pip_extra[@]}" || die "pip install ${pip_extra[*]} failed"
  # No -dev package beyond the compiler's own: the kit must bring the rest.
  local extra_dev
  extra_dev="$(chroot "$new" dpkg-query -W -f '${Package}\n' | grep -E -- '-dev$' |
               grep -vxE 'libc6-dev|libstdc\+\+-12-dev|libgcc-12-dev|linux-libc-dev|libcrypt-dev|libnsl-dev|libtirpc-dev|libpython3.*-dev|libexpat1-dev' || true)"
  local kit_dev
  kit_dev="$(chroot "$new" dpkg-query -W -f '${Package}\n' |
             grep -xE 'libyaml-cpp-dev|libpng-dev|zlib1g-dev|libjpeg.*-dev|libturbojpeg.*-dev|doctest-dev|libgloo-dev|libfmt-dev|libhdf5.*-dev|ccache' || true)"
  [[ -z "$kit_dev" ]] || die "the root holds packages the GPU machine lacks: $kit_dev"
  [[ -z "$extra_dev" ]] || echo "gpu_rehearsal: note: the root also holds $extra_dev"
  echo "$stamp" > "$new/.fulgur-rehearsal"
  assert_unmounted "$rootfs"
  rm -rf "$rootfs"
  mv "$new" "$rootfs"
}

started=$SECONDS
if [[ "$(cat "$rootfs/.fulgur-rehearsal" 2> /dev/null)" != "$stamp" ]]; then
  make_root
  echo "gpu_rehearsal: root ready in $((SECONDS - started)) s"
else
  echo "gpu_rehearsal: cached root $rootfs"
fi
in_root python3 -c 'import sys, torch; print("gpu_rehearsal: python", sys.version.split()[0], "torch", torch.__version__)' 2>&1 |
  grep -v -i numpy || true

# The kit: made again when scripts/gpu_kit.sh changed after it.
if [[ ! -f "$root/.gpu-kit/env.sh" || "$root/scripts/gpu_kit.sh" -nt "$root/.gpu-kit/MANIFEST" ]]; then
  "$root/scripts/gpu_kit.sh" | grep '^gpu_kit:'
fi
((prepare_only)) && exit 0

grep -qE '^ *build\)|build\|run' "$root/scripts/gpu_check.sh" ||
  die "scripts/gpu_check.sh has no build/run phases yet"

# The tree as the GPU machine gets it: tracked and untracked-but-not-ignored
# files from the working tree (no .git), plus the kit.
src=/src/fulgur
assert_unmounted "$rootfs/src"
if ((reuse)); then
  rm -rf "$rootfs/src/report" "$rootfs/src/incoming"
else
  rm -rf "$rootfs/src"
fi
mkdir -p "$rootfs$src"
copy_to="$rootfs$src"
((reuse)) && copy_to="$rootfs/src/incoming" && mkdir -p "$copy_to"
(
  cd "$root"
  git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
    [[ -e "$f" || -L "$f" ]] && printf '%s\0' "$f"
  done | tar --null -T - -cf - .gpu-kit
) | tar -xf - -C "$copy_to"
if ((reuse)); then
  # Only files whose content changed are replaced, with the time of now, so
  # that the kept build sees them as newer than what it built before.
  (
    cd "$copy_to"
    find . \( -type f -o -type l \) -print0 | while IFS= read -r -d '' f; do
      if ! cmp -s "$f" "$rootfs$src/$f"; then
        mkdir -p "$(dirname "$rootfs$src/$f")"
        cp -P --remove-destination "$f" "$rootfs$src/$f"
      fi
    done
  )
  rm -rf "$copy_to"
fi
echo "gpu_rehearsal: copied the tree ($(du -sh "$rootfs$src" | cut -f1)) into $rootfs$src"

phase() {
  local name="$1" t0=$SECONDS rc=0
  echo "gpu_rehearsal: == gpu_check.sh $name"
  in_root /usr/bin/env GPU_CHECK_BUDGET="$budget" nice -n 19 /bin/bash -c "cd $src && scripts/gpu_check.sh $name /src/report" \
    > "$cache/$name.log" 2>&1 || rc=$?
  tail -25 "$cache/$name.log" | sed 's/^/    /'
  echo "gpu_rehearsal: gpu_check.sh $name exit $rc after $((SECONDS - t0)) s"
  return $rc
}
# This machine's cores build far slower than the GPU machine's: the build
# gets a longer bound than gpu_check.sh's own (470 s).
budget="${GPU_CHECK_BUDGET:-5400}"
rc=0
phase build || rc=$?
# Without a GPU the run phase checks nothing but that it says so; it runs
# even after a failed build.
run_rc=0
phase run || run_rc=$?
if ((run_rc == 0)) && ! grep -qiE 'no (nvidia )?gpu|gpu.*not visible|no cuda' "$cache/run.log"; then
  echo "gpu_rehearsal: the run phase exited 0 but did not say that no GPU is visible" >&2
  run_rc=1
fi
((rc != 0)) || rc=$run_rc
rm -rf "$report"
mkdir -p "$report"
[[ -d "$rootfs/src/report" ]] && cp -a "$rootfs/src/report/." "$report/"
cp "$cache"/build.log "$report/rehearsal-build.log" 2> /dev/null || true
cp "$cache"/run.log "$report/rehearsal-run.log" 2> /dev/null || true
echo "gpu_rehearsal: report in $report; total $((SECONDS - started)) s; exit $rc"
exit $rc
}
