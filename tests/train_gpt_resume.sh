#!/usr/bin/env bash
# train-gpt's resumable runs (docs/gpt.md, "Checkpoints and resuming"): a run stopped after K steps
# with --save and continued with --resume prints, step for step, the same losses (all 17 digits)
# as the run that was never stopped, for a plain f32 run, a bf16-autocast run with dropout and
# gradient accumulation, an f16 one (GradScaler), one with checkpointed blocks (each saving every
# step too) and DataLoader runs (--workers) stopped mid-epoch and across an epoch; refused checkpoints
# (truncated, garbled, another architecture, other training options, missing)
# end with one line on stderr and exit status 2; --log writes JSON lines and the SVG.
#   train_gpt_resume.sh TRAIN_GPT SCRATCH_DIR
set -u
gpt=$1 scratch=$2
if [ ! -d /usr/share/games/fortunes ]; then
  echo "skipped: the fortunes are not installed (apt-get install fortunes)"
  exit 77
fi
failures=0
mkdir -p "$scratch"
tiny=(--layers 2 --width 16 --heads 2 --context 12 --batch-size 3 --steps 7 --warmup 2 --eval-every 100
      --eval-batches 1 --generate 0 --print-losses)

losses() { grep -E '^loss [0-9]+ ' <<<"$1"; }

# resume_case NAME K OPTIONS...: run all steps (7 unless OPTIONS say); run K steps and save;
# resume to the end; compare.
resume_case() {
  local name=$1 k=$2
  shift 2
  local full part rest ck="$scratch/$name.safetensors"
  full=$("$gpt" "${tiny[@]}" "$@" 2>/dev/null) || { echo "FAIL $name: the uninterrupted run failed"; failures=$((failures + 1)); return; }
  part=$("$gpt" "${tiny[@]}" "$@" --stop-after "$k" --save "$ck" --save-every 1 2>/dev/null) || { echo "FAIL $name: the first part failed"; failures=$((failures + 1)); return; }
  rest=$("$gpt" "${tiny[@]}" "$@" --resume "$ck" 2>/dev/null) || { echo "FAIL $name: the resumed run failed"; failures=$((failures + 1)); return; }
  local want got
  want=$(losses "$full")
  got=$(printf '%s\n%s\n' "$(losses "$part")" "$(losses "$rest")")
  if [[ -z "$want" ]] || [[ "$want" != "$got" ]]; then
    echo "FAIL $name: the losses differ"
    diff <(echo "$want") <(echo "$got") | head -10 | sed 's/^/    /'
    failures=$((failures + 1))
  elif ! grep -q "resumed $ck after step $k" <<<"$rest"; then
    echo "FAIL $name: the resumed run does not say where it resumed"
    failures=$((failures + 1))
  else
    echo "ok: $name: $(wc -l <<<"$want") losses equal bit for bit, stopped after step $k"
  fi
}

resume_case plain 3
resume_case bf16_dropout_accumulate 4 --amp bf16 --dropout 0.2 --accumulate 2
# Checkpointed blocks change no value either: its losses equal the plain run's too.
resume_case f16_grad_scaler 3 --amp f16
resume_case checkpointed 2 --checkpoint --dropout 0.1
# The DataLoader (--workers): a corpus of 9 training fortunes (45 bytes: 33 windows, 11 batches of
# 3 per epoch) and one held out, so 7 steps of 2 batches cross an epoch; stopped mid-epoch (after
# 8 batches), and at the epoch's end (after its 11th batch, of 13 steps of one batch).
tiny_corpus="$scratch/tiny-corpus"
mkdir -p "$tiny_corpus"
{ for i in 1 2 3 4 5 6 7 8 9; do printf 'ab%d\n%%\n' "$i"; done; printf 'a longer held-out fortune\n%%\n'; } >"$tiny_corpus/tiny"
resume_case loader_mid_epoch 4 --corpus "$tiny_corpus" --workers 2 --accumulate 2
resume_case loader_epoch_end 11 --corpus "$tiny_corpus" --workers 0 --steps 13 --dropout 0.1
plain=$(losses "$("$gpt" "${tiny[@]}" --dropout 0.1 2>/dev/null)")
ckpt=$(losses "$("$gpt" "${tiny[@]}" --dropout 0.1 --checkpoint 2>/dev/null)")
if [[ -n "$plain" && "$plain" == "$ckpt" ]]; then echo "ok: --checkpoint gives the same losses"
else echo "FAIL: --checkpoint changes the losses"; failures=$((failures + 1)); fi

# --save-every: the file of the last save before the end resumes too (saved after step 6 of 7).
ck="$scratch/every.safetensors"
"$gpt" "${tiny[@]}" --save-every 3 --stop-after 6 --save "$ck" >/dev/null 2>&1
out=$("$gpt" "${tiny[@]}" --resume "$ck" 2>/dev/null)
if grep -q "resumed $ck after step 6" <<<"$out" && [[ "$(losses "$out")" == "$(losses "$("$gpt" "${tiny[@]}" 2>/dev/null)" | tail -1)" ]]; then
  echo "ok: --save-every's checkpoint resumes"
else echo "FAIL: --save-every's checkpoint"; failures=$((failures + 1)); fi

# --log: a JSON line per step with the scalars, the held-out loss, and the SVG.
log="$scratch/run.jsonl"
"$gpt" "${tiny[@]}" --log "$log" --memory-summary >"$scratch/log.out" 2>&1
if [[ $(grep -c '"loss"' "$log") -eq 7 ]] && grep -q '"held_out_loss"' "$log" && grep -q '"tokens_per_s"' "$log" &&
   grep -q '"max_memory_allocated"' "$log" && grep -q '<svg' "$log.svg" && grep -q "memory after the first step" "$scratch/log.out"; then
  echo "ok: --log and --memory-summary"
else echo "FAIL: --log / --memory-summary"; head -3 "$log" | sed 's/^/    /'; failures=$((failures + 1)); fi

# expect_refusal REGEX command...: status 2, one line, matching REGEX.
expect_refusal() {
  local pattern=$1
  shift
  local out status
  out=$("$@" 2>&1 </dev/null)
  status=$?
  if [[ $status -ne 2 ]] || [[ $(printf '%s\n' "$out" | wc -l) -ne 1 ]] || ! grep -qE -- "$pattern" <<<"$out"; then
    echo "FAIL: $* -> status $status, output:"
    printf '%s\n' "$out" | head -5 | sed 's/^/    /'
    failures=$((failures + 1))
  else
    echo "ok: refused: $out"
  fi
}
good="$scratch/plain.safetensors"
head -c 200 "$good" >"$scratch/truncated.safetensors"
cp "$good" "$scratch/garbled.safetensors"
printf 'garbage!garbage!garbage!' | dd of="$scratch/garbled.safetensors" bs=1 seek=8 conv=notrunc 2>/dev/null
expect_refusal "truncated.safetensors" "$gpt" "${tiny[@]}" --resume "$scratch/truncated.safetensors"
expect_refusal "garbled.safetensors" "$gpt" "${tiny[@]}" --resume "$scratch/garbled.safetensors"
expect_refusal "a checkpoint of layers=2,width=16,.*but the options give layers=2,width=32" \
  "$gpt" "${tiny[@]}" --width 32 --resume "$good"
expect_refusal "a run of .*lr=0.002.*but the options give .*lr=0.001" "$gpt" "${tiny[@]}" --lr 1e-3 --resume "$good"
expect_refusal "missing.safetensors" "$gpt" "${tiny[@]}" --resume "$scratch/missing.safetensors"
expect_refusal "--save-every: give --save PATH too" "$gpt" "${tiny[@]}" --save-every 2
expect_refusal "--resume and --load: give one" "$gpt" "${tiny[@]}" --resume "$good" --load "$good"
# --load reads the model of a resumable checkpoint (and evaluates it).
if "$gpt" "${tiny[@]}" --steps 0 --load "$good" 2>/dev/null | grep -q "final: held-out loss"; then echo "ok: --load reads its model"
else echo "FAIL: --load of a resumable checkpoint"; failures=$((failures + 1)); fi

echo "$failures failed"
[ "$failures" -eq 0 ]
