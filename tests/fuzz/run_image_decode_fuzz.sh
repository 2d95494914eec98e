#!/usr/bin/env bash
# Runs the decoder fuzz target for a bounded time on a seed corpus of valid
# images (every colour type the golden script writes) and damaged ones.
#   run_image_decode_fuzz.sh BUILD_DIR SECONDS
set -euo pipefail
build="$1"
seconds="${2:-45}"
source_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$source_dir/.venv/bin/python" "$source_dir/tests/golden/make_image_golden.py" "$work/images" > /dev/null
mkdir -p "$work/corpus" "$work/artifacts"
for image in "$work"/images/*.png "$work"/images/*.jpg; do
  name="$(basename "$image")"
  cp "$image" "$work/corpus/$name"
  size="$(stat -c %s "$image")"
  head -c $((size / 2)) "$image" > "$work/corpus/half_$name"
  head -c 64 "$image" > "$work/corpus/header_$name"
done
printf 'plain text, not an image\n' > "$work/corpus/text.jpg"
: > "$work/corpus/empty.png"
# -timeout: one input taking over 10 s is a hang; -error_exitcode: any finding fails the test.
"$build/bin/image_decode_fuzz" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" "$work/corpus" 2>&1 | tail -n 15
status="${PIPESTATUS[0]}"
if ls "$work"/artifacts/* > /dev/null 2>&1; then
  mkdir -p "$build/fuzz-artifacts"
  cp "$work"/artifacts/* "$build/fuzz-artifacts/"
  echo "findings copied to $build/fuzz-artifacts"
fi
exit "$status"
