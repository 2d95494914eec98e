#!/usr/bin/env bash
# Makes the release tarball fulgur-<version>.tar.gz and its sha256 from
# `git archive` of a commit (docs/development.md, "Making a release"):
#
#   scripts/make_dist.sh [--ref REF] [--update-recipes] [OUTDIR]
#
#   REF      what to archive (default HEAD; for a release, the tag vX.Y.Z)
#   OUTDIR   where to write (default build/dist)
#   --update-recipes
#            also write the tarball's sha256 into the recipes that fetch it:
#            packaging/easybuild/fulgur-<version>-*.eb (checksums) and
#            packaging/spack/package.py (version("<version>", sha256=...)).
#
# <version> is project(fulgur VERSION ...) in REF's CMakeLists.txt, the one
# place the version lives. The tarball holds exactly the files git tracks at
# REF under the folder fulgur-<version>/ (what EasyBuild and Spack unpack);
# `git archive | gzip -n` gives the same bytes for the same commit on every
# run and machine with the same gzip, so the recipes' checksum can be checked
# again later. Writes OUTDIR/fulgur-<version>.tar.gz and
# OUTDIR/fulgur-<version>.tar.gz.sha256 (sha256sum's format) and prints the
# sha256. The recipes hold the checksum of a tagged release, so
# --update-recipes is run after tagging, on the tag, and committed after it
# (a recipe cannot hold the checksum of the commit that contains it).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ref=HEAD
update=0
out=""
while (($#)); do
  case "$1" in
    --ref) ref="${2:?--ref needs a value}"; shift 2 ;;
    --ref=*) ref="${1#--ref=}"; shift ;;
    --update-recipes) update=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "make_dist: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) [[ -z "$out" ]] || { echo "make_dist: one OUTDIR only" >&2; exit 2; }; out="$1"; shift ;;
  esac
done
out="${out:-$root/build/dist}"

commit="$(git -C "$root" rev-parse --verify --quiet "$ref^{commit}")" \
  || { echo "make_dist: '$ref' names no commit" >&2; exit 2; }
version="$(git -C "$root" show "$commit:CMakeLists.txt" | sed -n 's/^project(fulgur VERSION \([0-9][0-9.]*\).*/\1/p')"
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] \
  || { echo "make_dist: no project(fulgur VERSION X.Y.Z) in $ref's CMakeLists.txt" >&2; exit 2; }
# A tag that looks like a version must be this version.
if [[ "$ref" =~ ^v[0-9] && "$ref" != "v$version" ]]; then
  echo "make_dist: tag $ref but CMakeLists.txt at it says $version" >&2; exit 2
fi

name="fulgur-$version"
mkdir -p "$out"
tarball="$out/$name.tar.gz"
tmp="$(mktemp "$out/.$name.XXXXXX")"
trap 'rm -f "$tmp"' EXIT
git -C "$root" archive --format=tar --prefix="$name/" "$commit" | gzip -n -9 > "$tmp"
chmod 644 "$tmp"
mv "$tmp" "$tarball"
sha="$(sha256sum "$tarball" | cut -d' ' -f1)"
echo "$sha  $name.tar.gz" > "$tarball.sha256"
echo "make_dist: $tarball ($(git -C "$root" rev-parse --short "$commit"), $(du -k "$tarball" | cut -f1) KiB)" >&2
echo "$sha  $name.tar.gz"

if ((update)); then
  shopt -s nullglob
  ecs=("$root"/packaging/easybuild/"$name"-*.eb "$root"/packaging/easybuild/"$name".e[b])
  ((${#ecs[@]})) || { echo "make_dist: no easyconfig packaging/easybuild/$name[-*].eb" >&2; exit 1; }
  for ec in "${ecs[@]}"; do
    grep -q "{'$name.tar.gz': '[0-9a-f]\{64\}'}" "$ec" \
      || { echo "make_dist: $ec has no checksums line {'$name.tar.gz': '<sha256>'}" >&2; exit 1; }
    sed -i "s/{'$name.tar.gz': '[0-9a-f]\{64\}'}/{'$name.tar.gz': '$sha'}/" "$ec"
    echo "make_dist: $ec: checksum $sha" >&2
  done
  pkg="$root/packaging/spack/package.py"
  grep -q "version(\"$version\", sha256=\"[0-9a-f]\{64\}\")" "$pkg" \
    || { echo "make_dist: $pkg has no line version(\"$version\", sha256=\"<sha256>\")" >&2; exit 1; }
  sed -i "s/version(\"$version\", sha256=\"[0-9a-f]\{64\}\")/version(\"$version\", sha256=\"$sha\")/" "$pkg"
  echo "make_dist: $pkg: version(\"$version\", sha256=\"$sha\")" >&2
fi
