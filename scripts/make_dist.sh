#!/usr/bin/env bash
# Makes the release tarball fulgur-<version>.tar.gz and its sha256 from
# `git archive` of a commit, and for a release writes them into the recipes
# (docs/development.md, "Making a release"):
#
#   scripts/make_dist.sh [--ref REF] [OUTDIR]                        (make dist)
#   scripts/make_dist.sh --release X.Y.Z [--ref REF] [--home URL] [OUTDIR]
#                                               (make release VERSION=X.Y.Z)
#
#   REF      what to archive (default HEAD; with --release, the tag vX.Y.Z)
#   OUTDIR   where to write (default build/dist)
#   --release X.Y.Z
#            a release: X.Y.Z must be project(fulgur VERSION) at REF and the
#            CPU container's ARG FULGUR_VERSION; REF defaults to the tag
#            vX.Y.Z, which must exist (cut it first; --ref names a commit for
#            a candidate). Writes the tarball's sha256 and its download URL
#            into the recipes that fetch it: packaging/easybuild/
#            fulgur-X.Y.Z-*.eb (homepage, source_urls, checksums) and
#            packaging/spack/package.py (homepage, url, version("X.Y.Z",
#            sha256=...)), and the home into the containers' source labels.
#   --home URL
#            the project's home, https://github.com/<owner>/<repo>: the
#            tarball is published at URL/releases/download/vX.Y.Z/ (default:
#            the git remote "origin", else the home the recipes name now).
#   --update-recipes
#            the recipes' checksum only, as before (kept for old notes).
#
# <version> is project(fulgur VERSION ...) in REF's CMakeLists.txt, the one
# place the version lives. The tarball holds exactly the files git tracks at
# REF under the folder fulgur-<version>/ (what EasyBuild and Spack unpack);
# `git archive | gzip -n` gives the same bytes for the same commit on every
# run and machine with the same gzip, so the recipes' checksum can be checked
# again later. Writes OUTDIR/fulgur-<version>.tar.gz and
# OUTDIR/fulgur-<version>.tar.gz.sha256 (sha256sum's format) and prints the
# sha256. The recipes hold the checksum of a tagged release, so a release is
# written after tagging, on the tag, and committed after it (a recipe cannot
# hold the checksum of the commit that contains it).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ref=""
update=0
release=""
release_flag=0
home=""
out=""
while (($#)); do
  case "$1" in
    --ref) ref="${2:?--ref needs a value}"; shift 2 ;;
    --ref=*) ref="${1#--ref=}"; shift ;;
    --release) release="${2-}"; release_flag=1; update=1; shift; (($#)) && shift ;;
    --release=*) release="${1#--release=}"; release_flag=1; update=1; shift ;;
    --home) home="${2:?--home needs a URL}"; shift 2 ;;
    --home=*) home="${1#--home=}"; shift ;;
    --update-recipes) update=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "make_dist: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) [[ -z "$out" ]] || { echo "make_dist: one OUTDIR only" >&2; exit 2; }; out="$1"; shift ;;
  esac
done
out="${out:-$root/build/dist}"
if ((release_flag)); then
  [[ "$release" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] \
    || { echo "make_dist: VERSION '$release' (--release): not a version X.Y.Z (make release VERSION=X.Y.Z)" >&2; exit 2; }
  if [[ -z "$ref" ]]; then
    git -C "$root" rev-parse --verify --quiet "refs/tags/v$release" > /dev/null || {
      echo "make_dist: no tag v$release: cut it first on the release commit," >&2
      echo "  git tag -a v$release -m \"fulgur $release\" && git push origin v$release" >&2
      echo "  (docs/development.md, \"Making a release\"), or name a commit for a candidate: REF=<commit>" >&2
      exit 2; }
    ref="v$release"
  fi
fi
ref="${ref:-HEAD}"

commit="$(git -C "$root" rev-parse --verify --quiet "$ref^{commit}")" \
  || { echo "make_dist: '$ref' names no commit" >&2; exit 2; }
version="$(git -C "$root" show "$commit:CMakeLists.txt" | sed -n 's/^project(fulgur VERSION \([0-9][0-9.]*\).*/\1/p')"
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] \
  || { echo "make_dist: no project(fulgur VERSION X.Y.Z) in $ref's CMakeLists.txt" >&2; exit 2; }
# A tag that looks like a version must be this version.
if [[ "$ref" =~ ^v[0-9] && "$ref" != "v$version" ]]; then
  echo "make_dist: tag $ref but CMakeLists.txt at it says $version" >&2; exit 2
fi
if ((release_flag)); then
  [[ "$release" == "$version" ]] \
    || { echo "make_dist: VERSION $release, but CMakeLists.txt at $ref says project(fulgur VERSION $version)" >&2; exit 2; }
  # The containers' version labels (a recipe that is not there is not checked).
  for f in containers/Dockerfile.debian containers/Dockerfile containers/fulgur.def; do
    git -C "$root" cat-file -e "$commit:$f" 2> /dev/null || continue
    text="$(git -C "$root" show "$commit:$f")"
    if [[ "$f" == *.def ]]; then
      key="org.opencontainers.image.version"; got="$(sed -n 's/^ *org\.opencontainers\.image\.version  *//p' <<< "$text")"
    else
      key="ARG FULGUR_VERSION"; got="$(sed -n 's/^ARG FULGUR_VERSION=//p' <<< "$text")"
    fi
    [[ "$got" == "$version" ]] || {
      echo "make_dist: $f at $ref has $key ${got:-(none)}, not $version" >&2
      echo "  (set it with project(VERSION): docs/development.md, \"Making a release\", step 1)" >&2; exit 2; }
  done
  # The home: --home, else the remote "origin", else what the Spack package names now.
  if [[ -z "$home" ]]; then
    home="$(git -C "$root" remote get-url origin 2> /dev/null || true)"
    home="$(sed -E 's#^git@github\.com:#https://github.com/#; s#^ssh://git@github\.com/#https://github.com/#; s#\.git$##' <<< "$home")"
    [[ -n "$home" ]] || home="$(sed -n 's/^    homepage = "\(.*\)"$/\1/p' "$root/packaging/spack/package.py")"
  fi
  [[ "$home" =~ ^https://github\.com/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$ ]] || {
    echo "make_dist: home '$home' (--home, RELEASE_HOME or the remote origin): not https://github.com/<owner>/<repo>," >&2
    echo "  whose release assets are at <home>/releases/download/v$version/" >&2; exit 2; }
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
  pkg="$root/packaging/spack/package.py"
  # Every line to rewrite must be there, in every file, before any is written.
  for ec in "${ecs[@]}"; do
    grep -q "{'$name.tar.gz': '[0-9a-f]\{64\}'}" "$ec" \
      || { echo "make_dist: $ec has no checksums line {'$name.tar.gz': '<sha256>'}" >&2; exit 1; }
    if ((release_flag)); then
      for key in homepage source_urls; do
        grep -q "^$key = " "$ec" || { echo "make_dist: $ec has no line '$key = ...'" >&2; exit 1; }
      done
    fi
  done
  grep -q "version(\"$version\", sha256=\"[0-9a-f]\{64\}\")" "$pkg" \
    || { echo "make_dist: $pkg has no line version(\"$version\", sha256=\"<sha256>\")" >&2; exit 1; }
  if ((release_flag)); then
    for key in homepage url; do
      grep -q "^    $key = \"" "$pkg" || { echo "make_dist: $pkg has no line '    $key = \"...\"'" >&2; exit 1; }
    done
  fi
  download="$home/releases/download/v$version"
  for ec in "${ecs[@]}"; do
    sed -i "s/{'$name.tar.gz': '[0-9a-f]\{64\}'}/{'$name.tar.gz': '$sha'}/" "$ec"
    if ((release_flag)); then
      sed -i -e "s#^homepage = .*#homepage = '$home'#" \
             -e "s#^source_urls = .*#source_urls = ['$home/releases/download/v%(version)s/']#" "$ec"
      echo "make_dist: $ec: checksum $sha, source_urls $download/" >&2
    else
      echo "make_dist: $ec: checksum $sha" >&2
    fi
  done
  sed -i "s/version(\"$version\", sha256=\"[0-9a-f]\{64\}\")/version(\"$version\", sha256=\"$sha\")/" "$pkg"
  if ((release_flag)); then
    sed -i -e "s#^    homepage = \".*#    homepage = \"$home\"#" \
           -e "s#^    url = \".*#    url = \"$download/$name.tar.gz\"#" "$pkg"
    for f in "$root"/containers/Dockerfile "$root"/containers/Dockerfile.debian "$root"/containers/fulgur.def; do
      [[ -f "$f" ]] && sed -i -E "s#(org\.opencontainers\.image\.source[= ]\"?)https://[^\" ]*#\1$home#" "$f"
    done
    echo "make_dist: $pkg: url $download/$name.tar.gz, version(\"$version\", sha256=\"$sha\"); containers' source label $home" >&2
  else
    echo "make_dist: $pkg: version(\"$version\", sha256=\"$sha\")" >&2
  fi
fi
