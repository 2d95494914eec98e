#!/usr/bin/env bash
# Builds the checkpoint-loader fuzz target with clang's libFuzzer and runs it
# for a bounded time from a seed corpus of real checkpoints.
#   scripts/fuzz_checkpoint.sh BUILD_DIR [SECONDS]
# The loader sources are compiled into the target (instrumented); LibTorch
# is linked as it is.
set -euo pipefail
build=$(cd "${1:?build dir}" && pwd)
seconds=${2:-30}
root=$(cd "$(dirname "$0")/.." && pwd)
out="$build/fuzz"
mkdir -p "$out/corpus"
torch=$("$root/.venv/bin/python" -c "import torch, os; print(os.path.dirname(torch.__file__))")
version=$(sed -n 's/^project(fulgur VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")

sources=(tests/fuzz/checkpoint_load_fuzzer.cpp engine/checkpoint/checkpoint_io.cpp engine/checkpoint/zip_checksums.cpp)
if [ ! -x "$out/checkpoint_load_fuzzer" ] || [ -n "$(find "$root/engine/checkpoint" "$root/tests/fuzz" -newer "$out/checkpoint_load_fuzzer" -name '*.[ch]pp')" ]; then
  # The sources as one unit (they compile together in the library's unity
  # batches too): the LibTorch headers make each a half-minute compile, paid
  # once. Through ccache where there is one, the paths relative to the
  # checkout, so that a fresh clone hits the cache.
  printf '#include "%s"\n' "${sources[@]}" > "$out/checkpoint_load_fuzzer_unit.cpp"
  cache=$(command -v ccache || true)
  env CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1 CCACHE_SLOPPINESS=time_macros,include_file_mtime,include_file_ctime \
    ${cache} /usr/bin/clang++ -std=c++20 -O1 -gline-tables-only -fsanitize=fuzzer-no-link,address \
    -DFMT_HEADER_ONLY=1 -DFULGUR_VERSION="\"$version\"" \
    -I"$root" -I"$build/include" -isystem "$torch/include" -isystem "$torch/include/torch/csrc/api/include" \
    -c "$out/checkpoint_load_fuzzer_unit.cpp" -o "$out/checkpoint_load_fuzzer.o"
  /usr/bin/clang++ -fsanitize=fuzzer,address "$out/checkpoint_load_fuzzer.o" \
    -L"$torch/lib" -Wl,-rpath,"$torch/lib" -ltorch -ltorch_cpu -lc10 -lz -o "$out/checkpoint_load_fuzzer"
fi
# Seeds: a real checkpoint and a foreign torch.save archive.
"$build/bin/checkpoint_probe" write-sample "$out/corpus/sample.ckpt"
"$root/.venv/bin/python" -c "import torch; torch.save({'w': torch.ones(3)}, '$out/corpus/foreign.pt')"
# LibTorch is not built with ASan: leaks it keeps on purpose are not ours.
ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 \
  "$out/checkpoint_load_fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
  -artifact_prefix="$out/" "$out/corpus"
