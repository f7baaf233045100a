#!/usr/bin/env bash
# train-gpt's refusals: bad options and bad inputs (a missing corpus, a checkpoint of another
# architecture, a missing checkpoint) end with one line on stderr naming the problem and exit
# status 2; --help answers with status 0.
#   train_gpt_cli.sh TRAIN_GPT SCRATCH_DIR
set -u
gpt=$1 scratch=$2
failures=0
mkdir -p "$scratch"

# expect STATUS REGEX command...: the status, the output matching REGEX, and for a refusal one line.
expect() {
  local want=$1 pattern=$2
  shift 2
  local out status lines
  out=$("$@" 2>&1 </dev/null)
  status=$?
  lines=$(printf '%s\n' "$out" | wc -l)
  if [[ $status -ne $want ]] || ! grep -qE -- "$pattern" <<<"$out" || { [[ $want -eq 2 ]] && [[ $lines -ne 1 ]]; }; then
    echo "FAIL: $* -> status $status (want $want), $lines lines, output:"
    printf '%s\n' "$out" | head -5 | sed 's/^/    /'
    failures=$((failures + 1))
  else
    echo "ok: $* -> $status: $(head -1 <<<"$out")"
  fi
}

tiny=(--layers 1 --width 16 --heads 2 --context 8 --batch-size 2 --eval-batches 1 --generate 0)
expect 0 "usage: train-gpt" "$gpt" --help
expect 2 "--width \(130\) must be divisible by --heads \(4\)" "$gpt" --width 130 --heads 4
expect 2 "--prompt: 9 bytes, longer than the context \(8\)" "$gpt" --context 8 --prompt "123456789"
expect 2 "--top-p: expected a number in \(0, 1\]" "$gpt" --top-p 0
expect 2 "--model: train-gpt trains the gpt model, got 'cnn'" "$gpt" --model cnn
expect 2 "--steps: .*got '-3'" "$gpt" --steps -3
expect 2 "--dropout: expected a probability below 1" "$gpt" --dropout 1
expect 2 "--checkpoint-blocks 5: the model has 4 blocks" "$gpt" --checkpoint-blocks 5
expect 2 "train-gpt: error: .*no fortune databases at /no-such-dir: install Debian's fortunes package" \
  "$gpt" --corpus /no-such-dir
if [ -d /usr/share/games/fortunes ]; then
  expect 0 "saved the checkpoint" "$gpt" "${tiny[@]}" --steps 0 --save "$scratch/tiny.safetensors"
  expect 2 "a checkpoint of layers=1,width=16,heads=2,context=8,vocab=256, but the options give layers=1,width=32" \
    "$gpt" "${tiny[@]}" --width 32 --steps 0 --load "$scratch/tiny.safetensors"
  expect 2 "train-gpt: error: .*missing.safetensors" "$gpt" "${tiny[@]}" --steps 0 --load "$scratch/missing.safetensors"
fi
echo "$failures failed"
[ "$failures" -eq 0 ]
