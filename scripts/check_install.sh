#!/usr/bin/env bash
# Installs the built fulgur into a temporary prefix, then builds and runs an
# outside project against it, as a user would. One part per call: three
# tests of the suite (tests/CMakeLists.txt), each in a folder of its own, so
# that ctest runs their compiles (LibTorch's headers: about 25 CPU-s each)
# side by side instead of one test building two programs at -j2.
#   check_install.sh BUILD consumer  tests/install's consumer (find_package(fulgur)): versions,
#                                    strategies through TrainerOptions, a sharded checkpoint
#   check_install.sh BUILD mpi       tests/install's consumer_mpi: a program with its own MPI
#   check_install.sh BUILD online    the C and Fortran projects of the C APIs alone, and the ABI checks
set -euo pipefail
build="$(cd "$1" && pwd)"
part="${2:-}"
source_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
case "$part" in
  consumer | mpi | online) ;;
  *) echo "check_install.sh: part '$part': expected consumer, mpi or online"; exit 2 ;;
esac
work="$build/test-tmp/install-$part"
rm -rf "$work"
cmake --install "$build" --prefix "$work/prefix" > /dev/null
# The licence travels with every install.
cmp -s "$source_dir/LICENSE" "$work/prefix/share/licenses/fulgur/LICENSE" \
  || { echo "install: share/licenses/fulgur/LICENSE missing or not the source's LICENSE"; exit 1; }
# Paths relative to the checkout in ccache's keys, so a fresh clone elsewhere
# (CI) finds these compiles in the cache as fulgur's own do (CMakeLists.txt).
export CCACHE_BASEDIR="$source_dir" CCACHE_NOHASHDIR=1

# tests/install, configured in FOLDER and TARGET built there.
build_consumer() {
  local folder="$1" target="$2" torch_dir launcher
  torch_dir="$(grep '^Torch_DIR:' "$build/CMakeCache.txt" | cut -d= -f2-)"
  launcher="$(grep '^CCACHE_PROGRAM:' "$build/CMakeCache.txt" | cut -d= -f2-)"
  cmake -S "$source_dir/tests/install" -B "$folder" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$work/prefix" -DTorch_DIR="$torch_dir" \
    ${launcher:+-DCMAKE_CXX_COMPILER_LAUNCHER=$launcher} > "$folder.configure.log" 2>&1 \
    || { cat "$folder.configure.log"; exit 1; }
  cmake --build "$folder" --target "$target"
}

consumer_part() {
  build_consumer "$work/build" consumer
  # Versions: the configure above asked for 0.1 (FULGUR_REQUIRED_VERSION's
  # default); the installed header and the package agree; fulgurConfigVersion.cmake
  # (SameMinorVersion) refuses 9 and another minor version, naming both versions.
  out="$("$work/build/consumer" version)" || { echo "consumer version: $out"; exit 1; }
  echo "$out"
  installed="$(sed -n 's/^#define FULGUR_VERSION "\(.*\)"$/\1/p' "$work/prefix/include/fulgur/version.hpp")"
  [[ "$out" == "header $installed package $installed" ]] || { echo "consumer version: expected header and package $installed"; exit 1; }
  next_minor="$(awk -F. '{ print $1 "." $2 + 1 }' <<< "$installed")"
  for wanted in 9 "$next_minor"; do
    if cmake -S "$source_dir/tests/install" -B "$work/build-$wanted" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
         -DFULGUR_REQUIRED_VERSION="$wanted" > "$work/configure-$wanted.log" 2>&1; then
      echo "find_package(fulgur $wanted REQUIRED) found fulgur $installed; expected it to fail"; exit 1
    fi
    said="$(tr -s ' \n' ' ' < "$work/configure-$wanted.log")"  # CMake wraps its message
    grep -q "compatible with requested version \"$wanted\"" <<< "$said" && grep -q "version: $installed" <<< "$said" \
      || { cat "$work/configure-$wanted.log"; echo "find_package(fulgur $wanted): expected CMake's version error naming $wanted and $installed"; exit 1; }
    echo "find_package(fulgur $wanted REQUIRED) fails as it should: fulgur $installed is not compatible"
  done
  "$work/build/consumer"
  # A program of its own switches strategy and process count through TrainerOptions alone.
  for strategy in ddp horovod; do
    out="$(timeout 120 "$work/build/consumer" "$strategy" 2 2>&1)" || { echo "$out"; exit 1; }
    echo "$out"
    grep -q "rank=0 world=2 steps=200" <<< "$out" && grep -q "rank=1 world=2 steps=200" <<< "$out" \
      || { echo "consumer $strategy 2: expected both ranks of a world of 2 to take 200 steps"; exit 1; }
  done
  # After training: a sharded fsdp checkpoint of 2 ranks, loaded on one process
  # without a Trainer, as written and joined by the installed fulgur_consolidate.
  ckpt="$work/line.ckpt"
  out="$(timeout 120 "$work/build/consumer" fsdp 2 "$ckpt" 2>&1)" || { echo "$out"; exit 1; }
  ls "$work"/line.ckpt.*shard-1-of-2 > /dev/null || { echo "consumer fsdp 2: expected a sharded checkpoint"; exit 1; }
  "$work/prefix/bin/fulgur_consolidate" "$ckpt" "$work/whole.ckpt"
  for file in "$ckpt" "$work/whole.ckpt"; do
    out="$("$work/build/consumer" infer "$file" 2>&1)" || { echo "infer $file: $out"; exit 1; }
    echo "$out"
    grep -q "lr=0.1 y(0.5)=2.5" <<< "$out" || { echo "infer $file: expected lr=0.1 and y(0.5)=2.5"; exit 1; }
    grep -q "is a training checkpoint .*fulgur::load_from_checkpoint<Model>(path)" <<< "$out" \
      || { echo "infer $file: read_state_dict should name load_from_checkpoint"; exit 1; }
  done
}

mpi_part() {
  # A program with its own MPI (tests/install/consumer_mpi.cpp, the link line
  # of docs/distributed.md) trains on its communicator under mpirun. The test
  # exists where fulgur was built with MPI (FULGUR_WITH_MPI).
  build_consumer "$work/build" consumer_mpi
  out="$(timeout 120 env -u MASTER_ADDR -u MASTER_PORT mpirun --allow-run-as-root --oversubscribe -np 2 \
    "$work/build/consumer_mpi" 2>&1)" || { echo "$out"; exit 1; }
  echo "$out"
  grep -q "rank=0 world=2 steps=200" <<< "$out" && grep -q "rank=1 world=2 steps=200" <<< "$out" \
    || { echo "consumer_mpi: expected both ranks of the communicator to take 200 steps"; exit 1; }
}

online_part() {
  # A C and a Fortran project with their own compilers and the C API's library
  # alone (find_package(fulgur COMPONENTS online)), with no nvcc on the PATH:
  # they configure quietly, never loading LibTorch's CMake files.
  # The PATH without the CUDA toolkit: its folders left out, and a folder that
  # holds an nvcc besides other programs (a wrapper in /usr/local/bin) mirrored without it.
  no_cuda_path=""
  mirrors=0
  IFS=: read -ra path_dirs <<< "$PATH"
  for dir in "${path_dirs[@]}"; do
    [[ "$dir" == *cuda* ]] && continue
    if [[ -e "$dir/nvcc" ]]; then
      mirrors=$((mirrors + 1))
      mirror="$work/path-$mirrors"
      mkdir -p "$mirror"
      for program in "$dir"/*; do [[ "${program##*/}" == nvcc ]] || ln -s "$program" "$mirror/"; done
      dir="$mirror"
    fi
    no_cuda_path="${no_cuda_path:+$no_cuda_path:}$dir"
  done
  if env PATH="$no_cuda_path" sh -c "command -v nvcc" > /dev/null; then echo "nvcc is still on the trimmed PATH"; exit 1; fi
  env -u CUDACXX PATH="$no_cuda_path" cmake -S "$source_dir/tests/install_online" -B "$work/build-online" -G Ninja \
    -DCMAKE_PREFIX_PATH="$work/prefix" -DFULGUR_TESTS_DIR="$source_dir/tests" > "$work/configure-online.log" 2>&1 \
    || { cat "$work/configure-online.log"; echo "the C/Fortran consumer did not configure without nvcc"; exit 1; }
  # (The work folder's own path is left out: a build folder may be named after a torch version.)
  if sed "s|$work||g" "$work/configure-online.log" | grep -qiE "cuda|nvcc|torch|warning"; then
    cat "$work/configure-online.log"; echo "the C/Fortran consumer's configure mentioned CUDA, LibTorch or a warning"; exit 1
  fi
  env PATH="$no_cuda_path" cmake --build "$work/build-online" -j2
  "$work/build-online/c_consumer"
  mkdir -p "$work/fortran" && "$work/build-online/fortran_consumer" "$work/fortran"
  "$work/build-online/client_consumer"  # the ensemble client's C API (the Fortran one is built above)
  # And without CMake: cc and gfortran against the installed library and header.
  cc "$source_dir/tests/online/capi/online_c_api_test.c" -I"$work/prefix/include" -L"$work/prefix/lib" -lfulgur_online \
    -Wl,-rpath,"$work/prefix/lib" -lm -pthread -o "$work/c_plain"
  "$work/c_plain"
  mkdir -p "$work/mod"
  gfortran "$work/prefix/include/fulgur/core/fulgur_c_base.f90" "$work/prefix/include/fulgur/online/fulgur_online.f90" \
    "$source_dir/tests/online/capi/online_fortran_test.f90" \
    -J"$work/mod" -L"$work/prefix/lib" -lfulgur_online -Wl,-rpath,"$work/prefix/lib" -o "$work/fortran_plain"
  mkdir -p "$work/fortran-plain" && "$work/fortran_plain" "$work/fortran-plain"
  # The installed C libraries keep the C ABI convention (docs/c-abi.md): the
  # ABI test's checks (exactly the version scripts' functions exported, a
  # versioned SONAME, an older header's options struct) on the installed files.
  abi_args=("$work/prefix/lib/libfulgur_online.so" "$source_dir/online/fulgur_online.map"
            "$work/prefix/include/fulgur/online/fulgur_online.h")
  if [[ -e "$work/prefix/lib/libfulgur_client.so" ]]; then
    abi_args+=("$work/prefix/lib/libfulgur_client.so" "$source_dir/ensemble/fulgur_client.map"
               "$work/prefix/include/fulgur/ensemble/fulgur_client.h")
  fi
  bash "$source_dir/tests/c_abi/c_abi_test.sh" "$work/prefix" "${abi_args[@]}"
}

"${part}_part"
