#!/usr/bin/env bash
# Checks packaging/easybuild/fulgur-<version>-<toolchain>[-CUDA-*].eb here,
# offline, against EasyBuild's own easyconfigs (docs/installing.md):
#
#   1. Lmod from Debian (apt, if missing) and EasyBuild (EB_VERSION, default
#      5.4.1) from PyPI in a scratch venv, with the easyconfigs release the
#      `easybuild-easyconfigs` package ships and pycodestyle for the style
#      check (EB_VENV=<venv> reuses one: its bin/eb is used as is);
#   2. the release tarball of REF (scripts/make_dist.sh) against the
#      recipes' checksum: where the tag v<version> exists, the easyconfigs'
#      and the Spack package's sha256 must be its tarball's; otherwise (no
#      release yet, or REF after it) the checks below run on copies whose
#      checksum is REF's tarball's, and the script says so;
#   3. Gloo-2.9.1-GCCcore-14.3.0.eb (Gloo's headers) takes the source
#      tarball of EasyBuild's PyTorch 2.9.1 (the same name and sha256);
#      `eb --check-contrib` on every easyconfig of packaging/easybuild
#      (style, sha256 checksums);
#   4. `eb --dry-run --robot` of each of fulgur's, with only the shipped
#      easyconfigs and packaging/easybuild on the robot path: every
#      dependency, down to the toolchain, must resolve to an easyconfig of
#      that release or to Gloo's beside fulgur's (nothing is missing);
#   5. the CUDA easyconfig's TORCH_CUDA_ARCH_LIST from
#      --cuda-compute-capabilities (8.0,9.0 here), and its sanity check
#      wanting lib/libfulgur_cuda.<SHLIB_EXT>.
#
#   scripts/check_easybuild.sh [REF]       (KEEP=1 keeps the temp dir)
#
# Builds nothing: building needs the foss/2025b toolchain and PyTorch 2.9.1
# built by EasyBuild first (hours; fulgur's CPU suite passes against
# LibTorch 2.9.1's wheel: docs/development.md). About 2 min 30 s with a fresh venv on a 2-core machine
# (pip), 15 s with EB_VENV.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ref="${1:-HEAD}"
eb_version="${EB_VERSION:-5.4.1}"
start=$SECONDS
log() { printf '[check_easybuild %4ds] %s\n' $((SECONDS - start)) "$*"; }
fail() { echo "check_easybuild: FAIL: $*" >&2; exit 1; }

version="$(git -C "$root" show "$ref:CMakeLists.txt" | sed -n 's/^project(fulgur VERSION \([0-9.]*\).*/\1/p')"
shopt -s nullglob
ecs=("$root"/packaging/easybuild/fulgur-"$version"-*.eb)
shopt -u nullglob
((${#ecs[@]})) || fail "no easyconfig packaging/easybuild/fulgur-$version-*.eb (project(VERSION) in CMakeLists.txt)"

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
  log "installing EasyBuild $eb_version (with its easyconfigs) and pycodestyle from PyPI into $work/eb-venv"
  python3 -m venv "$work/eb-venv"
  "$work/eb-venv/bin/pip" install -q --no-cache-dir "easybuild==$eb_version" pycodestyle
  eb_venv="$work/eb-venv"
fi
export EB_PYTHON="$eb_venv/bin/python"  # eb's launcher looks for a python otherwise
set +u; source /usr/share/lmod/lmod/init/bash; set -u
shipped="$(echo "$eb_venv"/easybuild/easyconfigs)"
[[ -d "$shipped/p/PyTorch" ]] || fail "no easyconfigs shipped in $eb_venv (looked for $shipped)"
log "$("$eb_venv/bin/eb" --version), Lmod $(module --version 2>&1 | sed -n 's/.*Version \([0-9.]*\).*/\1/p' | head -1), easyconfigs $shipped"

# 2. The release tarball and the recipes' checksum.
dist="$(bash "$root/scripts/make_dist.sh" --ref "$ref" "$work/sources" 2> /dev/null)"
sha="${dist%% *}"
log "make_dist: fulgur-$version.tar.gz of $ref ($(git -C "$root" rev-parse --short "$ref")): sha256 $sha"
mkdir -p "$work/ec"
if git -C "$root" rev-parse --verify --quiet "refs/tags/v$version" > /dev/null; then
  tag_sha="$(bash "$root/scripts/make_dist.sh" --ref "v$version" "$work/tag" 2> /dev/null | cut -d' ' -f1)"
  for f in "${ecs[@]}" "$root/packaging/spack/package.py"; do
    grep -q "$tag_sha" "$f" || fail "$f lacks the sha256 of release v$version ($tag_sha): run make release VERSION=$version"
  done
  log "PASS: the easyconfigs and the Spack package carry the sha256 of v$version's tarball ($tag_sha)"
  [[ "$tag_sha" == "$sha" ]] || log "note: $ref is not v$version; the checks below use $ref's checksum"
else
  log "note: no tag v$version yet: the recipes' checksum names no published release; the checks below use $ref's"
fi
for ec in "${ecs[@]}"; do
  grep -q "{'fulgur-$version.tar.gz': '[0-9a-f]\{64\}'}" "$ec" || fail "$ec: no checksums entry for fulgur-$version.tar.gz"
  sed "s/{'fulgur-$version.tar.gz': '[0-9a-f]\{64\}'}/{'fulgur-$version.tar.gz': '$sha'}/" "$ec" > "$work/ec/$(basename "$ec")"
done
# The other easyconfigs shipped beside fulgur's (Gloo's headers), as they are.
# Gloo's source is PyTorch's own tarball: its name and sha256 must be those
# of EasyBuild's PyTorch easyconfig of the same version.
for ec in "$root"/packaging/easybuild/*.eb; do
  [[ "$(basename "$ec")" == fulgur-* ]] && continue
  cp "$ec" "$work/ec/"
done
gloo_ec="$work/ec/Gloo-2.9.1-GCCcore-14.3.0.eb"
[[ -f "$gloo_ec" ]] || fail "no packaging/easybuild/Gloo-2.9.1-GCCcore-14.3.0.eb"
torch_sum="$(grep -o "{'pytorch-v2.9.1.tar.gz': '[0-9a-f]\{64\}'}" "$shipped/p/PyTorch/PyTorch-2.9.1-foss-2025b.eb")" \
  || fail "EasyBuild's PyTorch-2.9.1-foss-2025b.eb names no pytorch-v2.9.1.tar.gz checksum"
grep -qF "$torch_sum" "$gloo_ec" || fail "$(basename "$gloo_ec"): its source is not $torch_sum (EasyBuild's PyTorch 2.9.1)"
log "PASS: Gloo's easyconfig takes EasyBuild's PyTorch 2.9.1 source tarball ($torch_sum)"

as_root=(); [[ $(id -u) -ne 0 ]] || as_root=(--allow-use-as-root-and-accept-consequences)
eb_opts=("${as_root[@]}" --prefix="$work/eb" --installpath="$work/install" --sourcepath="$work/sources"
         --tmpdir="$work/eb-tmp" --modules-tool=Lmod --module-syntax=Lua --robot-paths="$work/ec:$shipped")
eb() { "$eb_venv/bin/eb" "$@"; }

# 3. The contribution check: style and checksums.
eb "${eb_opts[@]}" --check-contrib "$work"/ec/*.eb > "$work/check-contrib.log" 2>&1 \
  || { cat "$work/check-contrib.log"; fail "eb --check-contrib"; }
grep -E "^\[(PASS|FAIL)\]|^>>" "$work/check-contrib.log" | sed "s|$work/ec/||; s/^/  /"
log "PASS: eb --check-contrib on $(ls "$work"/ec/*.eb | wc -l) easyconfigs"

# 4. Every dependency resolves to an easyconfig of the shipped release.
for ec in "$work"/ec/fulgur-*.eb; do
  base="$(basename "$ec")"
  eb "${eb_opts[@]}" --dry-run --robot --cuda-compute-capabilities=8.0,9.0 "$ec" > "$work/dry-run-$base.log" 2>&1 \
    || { cat "$work/dry-run-$base.log"; fail "eb --dry-run --robot $base"; }
  listed="$(grep -c '^ \* \[' "$work/dry-run-$base.log")"
  foreign="$(grep '^ \* \[' "$work/dry-run-$base.log" | grep -v -e "$shipped/" -e "$work/ec/" || true)"
  [[ -z "$foreign" ]] || { echo "$foreign"; fail "$base: easyconfigs from outside the shipped release and packaging/easybuild (above)"; }
  deps=(PyTorch/2.9.1 CMake/3.31.8-GCCcore-14.3.0 yaml-cpp/0.8.0-GCCcore-14.3.0 fmt/11.2.0-GCCcore-14.3.0
        libjpeg-turbo/3.1.1-GCCcore-14.3.0 libpng/1.6.50-GCCcore-14.3.0 zlib/1.3.1-GCCcore-14.3.0
        HDF5/1.14.6-gompi-2025b foss/2025b Gloo/2.9.1-GCCcore-14.3.0)
  [[ "$base" == *-CUDA-* ]] && deps+=(PyTorch/2.9.1-foss-2025b-CUDA-12.9.1 CUDA/12.9.1 NCCL/2.27.7-GCCcore-14.3.0-CUDA-12.9.1)
  for dep in "${deps[@]}"; do
    grep -q "(module: $dep" "$work/dry-run-$base.log" || fail "$base: the dry run resolves no $dep"
  done
  log "PASS: eb --dry-run --robot $base: $listed easyconfigs, all from EasyBuild $eb_version's release or packaging/easybuild (module $(sed -n "s|^ \* \[.\] $ec (module: \(.*\))$|\1|p" "$work/dry-run-$base.log"))"
done

# 5. The CUDA easyconfig's architectures, as EasyBuild resolves its templates.
for ec in "$work"/ec/*-CUDA-*.eb; do
  "$eb_venv/bin/python" - "$ec" "${as_root[@]}" --modules-tool=Lmod --tmpdir="$work/eb-tmp" --prefix="$work/eb" \
      --cuda-compute-capabilities=8.0,9.0 > "$work/templates.log" 2>&1 <<'EOF' || { cat "$work/templates.log"; fail "$(basename "$ec"): templates"; }
import sys
from easybuild.tools.options import set_up_configuration
set_up_configuration(args=sys.argv[2:], silent=True)
from easybuild.framework.easyconfig.easyconfig import EasyConfig
ec = EasyConfig(sys.argv[1])
assert '-DTORCH_CUDA_ARCH_LIST="8.0;9.0"' in ec['configopts'], ec['configopts']
assert '-DFULGUR_WITH_CUDA=ON' in ec['configopts'], ec['configopts']
files = ec['sanity_check_paths']['files']
assert 'lib/libfulgur_cuda.so' in files, files
print('TORCH_CUDA_ARCH_LIST="8.0;9.0"; sanity check wants lib/libfulgur_cuda.so')
EOF
  log "PASS: $(basename "$ec"): $(tail -1 "$work/templates.log")"
done
log "PASS: ${#ecs[@]} easyconfigs: check-contrib and dry-run --robot offline against EasyBuild $eb_version's easyconfigs"
