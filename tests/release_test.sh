#!/usr/bin/env bash
# `make release` end to end in a throw-away clone (ctest release_test, a few
# seconds): the clone gets the working tree's release tooling and recipes
# (Makefile, scripts/, packaging/, containers/, CMakeLists.txt) committed, a
# tag v<version> of its own (the repository itself is never tagged), then
#
#   - bad input stops with one error naming it: a VERSION that is not
#     CMakeLists.txt's, no tag, a home that is not a GitHub project, a
#     container ARG FULGUR_VERSION out of step;
#   - `make release VERSION=<version> RELEASE_HOME=<home>` writes the tarball
#     and its .sha256 (sha256sum -c passes; every file of the tag, under
#     fulgur-<version>/, LICENSE in, no .git), and that sha256 and the
#     download URL <home>/releases/download/v<version>/ into both
#     easyconfigs and the Spack package (and the home into the containers'
#     source labels); scripts/check_spack_package.py passes on the result;
#   - the same tag gives the same bytes again (make dist).
#
# Writes only under a temp dir.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/fulgur-release-test.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "release_test: FAIL: $*" >&2; exit 1; }
ok() { echo "release_test: ok: $*"; }
git_c=(git -c user.name=release_test -c user.email=release_test@localhost -c advice.detachedHead=false)

repo="$tmp/repo"
git clone -q --no-hardlinks "$root" "$repo"
for p in Makefile CMakeLists.txt scripts packaging containers; do
  rm -rf "${repo:?}/$p"
  cp -a "$root/$p" "$repo/$p"
done
find "$repo/scripts" -name __pycache__ -prune -exec rm -rf {} +
"${git_c[@]}" -C "$repo" add -A Makefile CMakeLists.txt scripts packaging containers
"${git_c[@]}" -C "$repo" commit -q --allow-empty -m "release_test: the working tree's release tooling"
version="$(sed -n 's/^project(fulgur VERSION \([0-9.]*\).*/\1/p' "$repo/CMakeLists.txt")"
[[ -n "$version" ]] || fail "no project(fulgur VERSION) in CMakeLists.txt"
home=https://github.com/example-org/fulgur
name="fulgur-$version"

# expect_error <pattern> <make args...>: make fails, saying <pattern>.
expect_error() {
  local want="$1"; shift
  if make -s -C "$repo" release "$@" > "$tmp/err.log" 2>&1; then
    fail "make release $* succeeded; expected an error saying '$want'"
  fi
  grep -q -- "$want" "$tmp/err.log" || { cat "$tmp/err.log"; fail "make release $*: the error does not say '$want'"; }
  ok "make release $*: $(grep -m1 -- "$want" "$tmp/err.log")"
}
expect_error "no tag v$version" VERSION="$version"
expect_error "not a version X.Y.Z" VERSION=
expect_error "VERSION 9.9.9, but CMakeLists.txt" VERSION=9.9.9 REF=HEAD
expect_error "home 'http://example.org/fulgur'" VERSION="$version" REF=HEAD RELEASE_HOME=http://example.org/fulgur
sed -i 's/^ARG FULGUR_VERSION=.*/ARG FULGUR_VERSION=0.0.1/' "$repo/containers/Dockerfile.debian"
"${git_c[@]}" -C "$repo" commit -q -am "release_test: a container version out of step"
expect_error "containers/Dockerfile.debian at HEAD has ARG FULGUR_VERSION 0.0.1, not $version" VERSION="$version" REF=HEAD
"${git_c[@]}" -C "$repo" reset -q --hard HEAD~1
[[ -z "$(git -C "$repo" status --porcelain)" ]] || fail "a failed release left changes: $(git -C "$repo" status --porcelain)"
ok "no failed release changed a file"

"${git_c[@]}" -C "$repo" tag -a "v$version" -m "fulgur $version"
make -s -C "$repo" release VERSION="$version" RELEASE_HOME="$home" > "$tmp/release.log" 2>&1 \
  || { cat "$tmp/release.log"; fail "make release VERSION=$version failed"; }
dist="$repo/build/dist"
[[ -f "$dist/$name.tar.gz" && -f "$dist/$name.tar.gz.sha256" ]] || fail "no $name.tar.gz and .sha256 in build/dist"
(cd "$dist" && sha256sum --quiet -c "$name.tar.gz.sha256") || fail "$name.tar.gz.sha256 does not match the tarball"
sha="$(cut -d' ' -f1 "$dist/$name.tar.gz.sha256")"
[[ "$sha" =~ ^[0-9a-f]{64}$ ]] || fail "the .sha256 holds '$sha'"
tar -tzf "$dist/$name.tar.gz" | sed 's#/$##' | sort > "$tmp/listing"
grep -v -q "^$name\(/\|$\)" "$tmp/listing" && fail "entries outside $name/: $(grep -v "^$name\(/\|$\)" "$tmp/listing" | head -3)"
grep -q "^$name/LICENSE$" "$tmp/listing" || fail "no $name/LICENSE in the tarball"
grep -q "/\.git\(/\|$\)" "$tmp/listing" && fail "the tarball has a .git"
files="$(git -C "$repo" ls-tree -r --name-only "v$version" | wc -l)"
in_tar="$(tar -tzf "$dist/$name.tar.gz" | grep -c -v '/$')"
[[ "$files" == "$in_tar" ]] || fail "the tarball has $in_tar files, the tag $files"
ok "$name.tar.gz: $in_tar files (the tag's), LICENSE in, no .git; sha256 $sha"

download="$home/releases/download/v$version"
shopt -s nullglob
ecs=("$repo"/packaging/easybuild/"$name"-*.eb)
((${#ecs[@]} >= 2)) || fail "fewer than two easyconfigs packaging/easybuild/$name-*.eb"
for ec in "${ecs[@]}"; do
  b="$(basename "$ec")"
  grep -q "^checksums = \[{'$name.tar.gz': '$sha'}\]$" "$ec" || fail "$b: checksums is not $sha: $(grep '^checksums' "$ec")"
  grep -q "^source_urls = \['$home/releases/download/v%(version)s/'\]$" "$ec" || fail "$b: $(grep '^source_urls' "$ec")"
  grep -q "^homepage = '$home'$" "$ec" || fail "$b: $(grep '^homepage' "$ec")"
  grep -q "^sources = \[SOURCE_TAR_GZ\]$" "$ec" || fail "$b: sources is not [SOURCE_TAR_GZ] ($name.tar.gz)"
done
ok "easyconfigs: checksums $sha, source_urls $download/ (SOURCE_TAR_GZ: $name.tar.gz)"
pkg="$repo/packaging/spack/package.py"
grep -q "^    version(\"$version\", sha256=\"$sha\")$" "$pkg" || fail "package.py: $(grep 'version(' "$pkg" | head -2)"
grep -q "^    url = \"$download/$name.tar.gz\"$" "$pkg" || fail "package.py: $(grep '^    url' "$pkg")"
grep -q "^    homepage = \"$home\"$" "$pkg" || fail "package.py: $(grep '^    homepage' "$pkg")"
python3 "$repo/scripts/check_spack_package.py" > "$tmp/spack.log" 2>&1 || { tail -20 "$tmp/spack.log"; fail "check_spack_package.py fails on the released package.py"; }
ok "package.py: url $download/$name.tar.gz, version(\"$version\", sha256=\"$sha\"); check_spack_package.py passes"
for f in containers/Dockerfile containers/Dockerfile.debian containers/fulgur.def; do
  grep -q "org.opencontainers.image.source[= ]\"\?$home\"\?$" "$repo/$f" || fail "$f: $(grep 'image.source' "$repo/$f")"
done
ok "containers: source label $home"
# Only the recipes changed; the tarball (of the tag) holds the recipes of before.
changed="$(git -C "$repo" status --porcelain | awk '{ print $2 }' | grep -v -E '^(packaging/easybuild/.*\.eb|packaging/spack/package\.py|containers/.*)$' || true)"
[[ -z "$changed" ]] || fail "make release changed files beyond the recipes: $changed"

make -s -C "$repo" dist DIST_ARGS="--ref v$version $tmp/again" > /dev/null 2>&1 || fail "make dist of v$version failed"
again="$(cut -d' ' -f1 "$tmp/again/$name.tar.gz.sha256")"
[[ "$again" == "$sha" ]] || fail "the tag's tarball differs on a second run: $again, then $sha"
ok "v$version's tarball again: the same sha256"
echo "release_test: PASS"
