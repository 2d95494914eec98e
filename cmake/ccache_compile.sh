#!/bin/bash
# The compiler launcher: ccache, and after a precompiled header's compile a
# checksum of its inputs beside it (<header>.gch.sum, .pch.sum). GCC's .gch is
# not the same byte for byte from one compile of the same header to the next
# (Clang's .pch holds the build's absolute paths), and
# ccache keys every object that uses it on its hash, so a header compile
# that missed the cache (a fresh clone, an evicted entry) made every object
# after it miss too. With pch_external_checksum ccache hashes the .sum
# instead: the flags and the header's preprocessed text with every macro,
# paths relative to CCACHE_BASEDIR (the checkout).
# Usage: ccache_compile.sh CCACHE COMPILER ARGS...
ccache=$1
shift
# CMake hands Clang its precompiled header as -Xclang -include(-pch) -Xclang
# PATH, paths ccache does not make relative: made relative to the build
# folder here (the compile runs there), so a clone elsewhere hits the cache.
# The same walk finds the output (-o).
xclang=
out=
prev=
for arg in "$@"; do
  shift
  [ -n "$xclang" ] && arg=${arg#"$PWD"/}
  xclang=
  [ "$arg" = -Xclang ] && xclang=1
  [ "$prev" = -o ] && out=$arg
  prev=$arg
  set -- "$@" "$arg"
done
case $out in
  # Clang's header is never taken from the cache: it names its inputs by
  # absolute path, and Clang refuses it in a clone at another path.
  *.pch) "$@" || exit ;;
  *) "$ccache" "$@" || exit ;;
esac
case $out in
  *.gch | *.pch) ;;
  *) exit 0 ;;
esac
# The same compile, preprocessing only: without its outputs, its dependency
# file and Clang's -Xclang -emit-pch (which would win over -E).
skip=
xclang=
for arg in "$@"; do
  shift
  if [ -n "$skip" ]; then
    skip=
    continue
  fi
  if [ -n "$xclang" ]; then
    xclang=
    [ "$arg" = -emit-pch ] || set -- "$@" -Xclang "$arg"
    continue
  fi
  case $arg in
    -MD | -c) continue ;;
    -MT | -MF | -o)
      skip=1
      continue
      ;;
    -Xclang)
      xclang=1
      continue
      ;;
  esac
  set -- "$@" "$arg"
done
set -o pipefail
{
  printf '%s\n' "$@"
  "$@" -E -P -dD
} | sed "s|${CCACHE_BASEDIR:-/nonexistent}|.|g" | sha256sum >"$out.sum.tmp" || exit
mv "$out.sum.tmp" "$out.sum"
