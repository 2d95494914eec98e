#!/usr/bin/env bash
# Runs one of the build's libFuzzer targets for a bounded time from a seed
# corpus of valid and damaged inputs; any finding fails, and is copied to
# BUILD_DIR/fuzz-artifacts.
#   run_fuzz.sh BUILD_DIR image_decode_fuzz|checkpoint_load_fuzzer [SECONDS]
set -euo pipefail
build="$1"
target="${2:-}"
seconds="${3:-30}"
source_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$work/artifacts"
case "$target" in
  image_decode_fuzz)
    # Every colour type the golden images' set-up wrote (a fixture,
    # tests/CMakeLists.txt), halves and headers of them.
    ls "$build"/image-golden/*.png > /dev/null 2>&1 \
      || { echo "run_fuzz.sh: no images in $build/image-golden (ctest's image_golden_setup makes them)"; exit 1; }
    for image in "$build"/image-golden/*.png "$build"/image-golden/*.jpg; do
      name="$(basename "$image")"
      cp "$image" "$work/corpus/$name"
      size="$(stat -c %s "$image")"
      head -c $((size / 2)) "$image" > "$work/corpus/half_$name"
      head -c 64 "$image" > "$work/corpus/header_$name"
    done
    printf 'plain text, not an image\n' > "$work/corpus/text.jpg"
    : > "$work/corpus/empty.png"
    rss_mb=2048
    ;;
  checkpoint_load_fuzzer)
    # A real checkpoint and a foreign torch.save archive.
    "$build/bin/checkpoint_probe" write-sample "$work/corpus/sample.ckpt"
    "$source_dir/.venv/bin/python" -c "import sys, torch; torch.save({'w': torch.ones(3)}, sys.argv[1])" \
      "$work/corpus/foreign.pt"
    # LibTorch is not built with ASan: leaks it keeps on purpose are not ours.
    export ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1
    rss_mb=4096
    ;;
  *) echo "run_fuzz.sh: target '$target': expected image_decode_fuzz or checkpoint_load_fuzzer"; exit 2 ;;
esac
# -timeout: one input taking over 10 s is a hang.
status=0
"$build/bin/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb="$rss_mb" -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" "$work/corpus" > "$work/log" 2>&1 || status=$?
if [ "$status" -eq 0 ]; then tail -n 15 "$work/log"; else cat "$work/log"; fi
if ls "$work"/artifacts/* > /dev/null 2>&1; then
  mkdir -p "$build/fuzz-artifacts"
  cp "$work"/artifacts/* "$build/fuzz-artifacts/"
  echo "findings copied to $build/fuzz-artifacts"
fi
exit "$status"
