#!/usr/bin/env bash
# The command-line programs refuse bad arguments (numbers out of range or not wholly numbers,
# unknown choices and options, missing values) with one line on stderr and exit status 2, turn a
# tritium::Error into one line and status 2, and answer --help with status 0.
#   cli_arguments.sh TRAIN_MNIST TRITIUM_TUNE TRITIUM_BENCH VECTOR_ADD_TUTORIAL
set -u
train=$1 tune=$2 bench=$3 tutorial=$4
failures=0

# expect STATUS REGEX command...: the status, the output matching REGEX, and for a refusal
# (status 2) one line of output.
expect() {
  local want=$1 pattern=$2
  shift 2
  local out status
  out=$("$@" 2>&1 </dev/null)
  status=$?
  local lines
  lines=$(printf '%s\n' "$out" | wc -l)
  if [[ $status -ne $want ]] || ! grep -qE -- "$pattern" <<<"$out" || { [[ $want -eq 2 ]] && [[ $lines -ne 1 ]]; }; then
    echo "FAIL: $* -> status $status (want $want), $lines lines, output:"
    printf '%s\n' "$out" | head -5 | sed 's/^/    /'
    failures=$((failures + 1))
  else
    echo "ok: $* -> $status: $(head -1 <<<"$out")"
  fi
}

expect 0 "usage: train-mnist" "$train" --help
expect 2 "--epochs: expected an integer in \[0, 10000\], got '99999999999'" "$train" --epochs 99999999999
expect 2 "--epochs: .*got '5x'" "$train" --epochs 5x
expect 2 "--batch-size: .*got '0'" "$train" --batch-size 0
expect 2 "--lr: .*got 'nan'" "$train" --lr nan
expect 2 "--lr: .*above 0" "$train" --lr 0
expect 2 "--seed: .*got '-1'" "$train" --seed -1
expect 2 "--backend: .*tpu" "$train" --backend tpu
expect 2 "--epochs needs a value" "$train" --epochs
expect 2 "unknown option '--epoch'" "$train" --epoch 3
expect 2 "train-mnist: error: .*no-such-dir" "$train" --data /no-such-dir --limit-batches 1
expect 2 "--model: expected one of mlp, cnn, got 'resnet'" "$train" --model resnet
expect 2 "--save needs a value" "$train" --save
expect 2 "train-mnist: error: .*/no-such-dir/model.safetensors" "$train" --model cnn --epochs 0 --load /no-such-dir/model.safetensors
expect 2 "--workers: expected an integer in \[0, 64\], got '-1'" "$train" --workers -1  # wt-data (issue 31)
expect 2 "--schedule: expected cosine or constant, got 'step'" "$train" --schedule step
# --profile / --log (profiler/, issue 31 items 6 and 8): a path that cannot be written fails before training
expect 2 "--profile needs a value" "$train" --profile
expect 2 "--log needs a value" "$train" --log
expect 2 "train-mnist: error: .*/no-such-dir/trace.json" "$train" --epochs 0 --profile /no-such-dir/trace.json
expect 2 "train-mnist: error: scalar log: cannot write /no-such-dir/log.jsonl" "$train" --epochs 0 --log /no-such-dir/log.jsonl
# issue 31 item 4 (wt-amp): mixed precision and gradient accumulation
expect 2 "--amp: expected bf16 or f16, got 'f32'" "$train" --amp f32
expect 2 "--accumulate: .*got '0'" "$train" --accumulate 0

expect 0 "usage: tritium-tune" "$tune" --help
expect 2 "--device: .*tpu" "$tune" --device tpu
expect 2 "--sizes: expected integers in \[1, 16384\] separated by commas, got '4096x'" "$tune" --sizes 4096x
expect 2 "--sizes: .*got '64,,128'" "$tune" --sizes 64,,128
expect 2 "--sizes: .*\[1, 1073741824\].*got '0'" "$tune" --kernel add --sizes 0
expect 2 "--kernel: expected one of matmul, add, got 'conv'" "$tune" --kernel conv
expect 2 "--dtype: .*got 'f8'" "$tune" --dtype f8
expect 2 "--rep-ms: .*got 'abc'" "$tune" --rep-ms abc
expect 2 "--warmup-ms: .*above 0" "$tune" --warmup-ms 0
expect 2 "unknown option '--bogus'" "$tune" --bogus

expect 0 "usage: tritium-bench" "$bench" --help
expect 2 "--device: .*tpu" "$bench" --device tpu
expect 2 "unknown option '--bogus'" "$bench" --bogus
expect 2 "--matmul SIZE: .*got '12x'" "$bench" --matmul 12x
expect 2 "--matmul SIZE: .*got '0'" "$bench" --matmul 0
expect 2 "--matmul dtype: .*got 'f8'" "$bench" --matmul 64 f8
expect 2 "--rounds: .*got '0'" "$bench" --block-ptr-matmul --device cpu --rounds 0
expect 2 "--configs: a config reads" "$bench" --block-ptr-matmul --device cpu --configs 64x64
expect 2 "--sizes: .*got '1x'" "$bench" --ops-matmul --device cpu --sizes 1x
expect 2 "--dtypes: .*got 'f8'" "$bench" --ops-matmul --device cpu --dtypes f16,f8
expect 0 "usage: tritium-bench --ops" "$bench" --ops --help
expect 2 "--filter: '\(' is not a regular expression" "$bench" --ops --filter '('
expect 2 "--elements: .*got '5'" "$bench" --ops --elements 5
expect 2 "--dtypes: .*got 'f8'" "$bench" --ops --dtypes f32,f8
expect 2 "--modes: .*got 'bwd'" "$bench" --ops --modes bwd
expect 2 "--clock cpu times CPU work" "$bench" --ops --device cuda --clock cpu
expect 2 "unknown option '--bogus'" "$bench" --ops --bogus
expect 0 "not benchmarked" "$bench" --ops --list
expect 0 "add +f32 +fwd\+bwd +\[1, 1024\] +[0-9.]+ +[0-9.]+" "$bench" --ops --device cpu --elements 1024 --filter '^add$' --dtypes f32 --quick

expect 0 "usage: .*--backend" "$tutorial" --help
expect 2 "--backend: .*tpu" "$tutorial" --backend tpu
expect 2 "--sizes: .*got '4096x'" "$tutorial" --sizes 4096x
expect 2 "--sizes: .*got '99999999999999999999'" "$tutorial" --sizes 99999999999999999999
expect 2 "unknown option '--bench-mark'" "$tutorial" --bench-mark

if [[ $failures -ne 0 ]]; then
  echo "$failures of the checks above failed"
  exit 1
fi
