#!/usr/bin/env bash
# The main job: set up (install what is missing, build), then train an MLP (or, with --model cnn,
# a CNN) on Fashion-MNIST.
#   ./run.sh [train-mnist options]   train-mnist, 5 epochs by default (--help lists the options)
#   ./run.sh --model gpt [options]   train-gpt: a byte-level GPT on Debian's fortunes (docs/gpt.md)
#   ./run.sh tutorials               all tutorials (each checks its own result)
#   ./run.sh --bench                 the tutorials' benchmarks and tritium-bench
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$root/scripts/setup.sh"

run_tutorials() {
  for t in "$root"/build/tutorials/[0-9][0-9]-*; do
    [ -x "$t" ] || continue
    echo "== $(basename "$t") $*"
    "$t" "$@"
  done
}

case "${1:-}" in
  tutorials)
    run_tutorials
    ;;
  --bench)
    run_tutorials --bench
    "$root/build/bench/tritium-bench" --json "$root/build/bench-results.json"
    ;;
  *)
    # --model gpt (anywhere among the options) goes to train-gpt; everything else to train-mnist.
    prev=""
    for a in "$@"; do
      if [ "$prev" = "--model" ] && [ "$a" = "gpt" ]; then
        exec "$root/build/tools/train-gpt" "$@"
      fi
      prev="$a"
    done
    exec "$root/build/tools/train-mnist" "$@"
    ;;
esac
