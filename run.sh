#!/usr/bin/env bash
# The main job: set up, build, and run the tutorials (each checks its own result).
#   ./run.sh            all tutorials
#   ./run.sh --bench    the tutorials' benchmarks and tritium-bench
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$root/scripts/setup.sh"
bench=""
[ "${1:-}" = "--bench" ] && bench="--bench"
for t in "$root"/build/tutorials/[0-9][0-9]-*; do
  [ -x "$t" ] || continue
  echo "== $(basename "$t") $bench"
  "$t" $bench
done
if [ -n "$bench" ]; then
  "$root/build/bench/tritium-bench" --json "$root/build/bench-results.json"
fi
