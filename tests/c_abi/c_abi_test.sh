#!/usr/bin/env bash
# The C ABI convention (docs/c-abi.md), checked on the built libraries:
#  - each exports exactly the functions its version script lists (nm -D;
#    C++ members by their qualified names, a .map pattern `name*` standing
#    for every overload of `name`), and its header declares exactly the C
#    ones: the .map file is the one list;
#  - its SONAME carries a version (objdump -p);
#  - a C program with an older header's shorter fulgur_client_options runs
#    against the new libfulgur_client (old_options.c);
#  - with FULGUR_STATIC_LIBRARY set (libfulgur.a), no C API function is in
#    it: a program linking both would have two handle registries.
# Usage: c_abi_test.sh BUILD_DIR LIBRARY MAP HEADER [LIBRARY MAP HEADER ...]
# (the client library, when built, is given last). Writes only under a temporary folder.
set -euo pipefail
build="$1"
shift
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
includes=(-I"$build/include" -I"$build/generated/include")
failed=0
client=""
while (($# >= 3)); do
  library="$1" map="$2" header="$3"
  shift 3
  name="$(basename "$library")"
  name="${name%%.so*}"
  # The .map's entries (name; name*; "name(parameters)";), as names.
  listed="$(sed -n 's/^ *"\{0,1\}\([A-Za-z_:~][A-Za-z0-9_:~]*\)[^;]*;$/\1/p' "$map" | sort)"
  listed_c="$(grep -v ':' <<< "$listed" || true)"
  [[ -n "$listed_c" ]] || { echo "$name: $map lists no C function"; exit 1; }
  # Demangled, without parameters: a C++ member's overloads and its
  # constructor's and destructor's variants are one name.
  exported="$(nm -D --defined-only "$library" | awk '{ print $NF }' | c++filt | sed 's/(.*//' | sort -u)"
  declared="$(cc -E -P "${includes[@]}" "$header" | grep -oE '\bfulgur_[a-z0-9_]+ *\(' | tr -d ' (' | sort -u)"
  if [[ "$exported" != "$listed" ]]; then
    echo "$name: nm -D --defined-only differs from $map (< exported, > listed):"
    diff <(echo "$exported") <(echo "$listed") | grep '^[<>]' || true
    failed=1
  fi
  if [[ "$declared" != "$listed_c" ]]; then
    echo "$name: $(basename "$header") declares other functions than $map lists (< declared, > listed):"
    diff <(echo "$declared") <(echo "$listed_c") | grep '^[<>]' || true
    failed=1
  fi
  echo "$name: exports the $(wc -l <<< "$listed") functions of $(basename "$map") ($(nm -D --defined-only "$library" | wc -l) symbols)"
  soname="$(objdump -p "$library" | awk '$1 == "SONAME" { print $2 }')"
  if [[ "$soname" =~ ^$name\.so\.[0-9]+(\.[0-9]+)*$ ]]; then
    echo "$name: SONAME $soname"
  else
    echo "$name: SONAME '$soname' has no version (expected $name.so.N)"
    failed=1
  fi
  [[ "$name" == libfulgur_client ]] && client="$library"
done
if [[ -n "${FULGUR_STATIC_LIBRARY:-}" ]]; then
  copies="$(nm --defined-only "$FULGUR_STATIC_LIBRARY" 2> /dev/null | awk '$2 == "T" && $3 ~ /^fulgur_(online|client)_/ { print $3 }')"
  if [[ -n "$copies" ]]; then
    echo "$(basename "$FULGUR_STATIC_LIBRARY") carries a second copy of the C API: $(head -3 <<< "$copies" | tr '\n' ' ')"
    failed=1
  else
    echo "$(basename "$FULGUR_STATIC_LIBRARY"): no C API function (one copy, in the shared libraries)"
  fi
fi
if [[ -n "$client" ]]; then
  # Built and linked as a program outside the tree would be: cc, -l, a RUNPATH.
  lib_dir="$(cd "$(dirname "$client")" && pwd)"
  cc -std=c11 -Wall -Wextra -Werror "${includes[@]}" "$here/old_options.c" -L"$lib_dir" -lfulgur_client \
    -Wl,-rpath,"$lib_dir" -pthread -o "$work/old_options"
  (cd "$work" && timeout 120 ./old_options) || { echo "old_options failed (exit $?)"; failed=1; }
fi
exit "$failed"
