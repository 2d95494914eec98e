# Sourced by run.sh and parity.sh: the checkout, the build folder ($1 or
# build/), the venv's Python, the generated CINIC-format folder (made once)
# and a temporary folder removed on exit.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
python="$root/.venv/bin/python"
data="${VS_LIGHTNING_DATA:-$build/bench-data/vs-lightning}"
[[ -f "$data/.complete" ]] || "$python" "$root/bench/vs_lightning/make_data.py" "$data" 400 60 60 > /dev/null
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
