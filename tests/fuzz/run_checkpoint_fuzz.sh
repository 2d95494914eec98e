#!/usr/bin/env bash
# Runs the checkpoint loader's fuzz target (built with the build, see
# tests/CMakeLists.txt) for a bounded time from a seed corpus of a real
# checkpoint and a foreign torch.save archive.
#   run_checkpoint_fuzz.sh BUILD_DIR SECONDS
set -euo pipefail
build="$1"
seconds="${2:-30}"
source_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$work/artifacts"
"$build/bin/checkpoint_probe" write-sample "$work/corpus/sample.ckpt"
"$source_dir/.venv/bin/python" -c "import sys, torch; torch.save({'w': torch.ones(3)}, sys.argv[1])" "$work/corpus/foreign.pt"
# LibTorch is not built with ASan: leaks it keeps on purpose are not ours.
# -timeout: one input taking over 10 s is a hang; any finding fails the test.
status=0
ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 \
  "$build/bin/checkpoint_load_fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
  -print_final_stats=1 -artifact_prefix="$work/artifacts/" "$work/corpus" > "$work/log" 2>&1 || status=$?
if [ "$status" -eq 0 ]; then tail -n 15 "$work/log"; else cat "$work/log"; fi
if ls "$work"/artifacts/* > /dev/null 2>&1; then
  mkdir -p "$build/fuzz-artifacts"
  cp "$work"/artifacts/* "$build/fuzz-artifacts/"
  echo "findings copied to $build/fuzz-artifacts"
fi
exit "$status"
