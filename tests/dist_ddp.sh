#!/usr/bin/env bash
# Multi-process tests of dist/ and DistributedDataParallel on Gloo over loopback (issue 32).
#   dist_ddp.sh TRITIUM_RUN WORKER SCRATCH launcher|losses|failures|collectives|profile|mnist|gpt [TRAIN_MNIST|TRAIN_GPT]
# launcher:    tritium-run's variables, options (--help, range errors), a failing rank named, SIGTERM
#              passed on to every rank
# losses:      2 and 3 ranks with global batch 24 print the same losses as 1 rank (within 1e-5
#              over 20 steps), with one bucket and with many, and with no_sync accumulation
# failures:    a rank killed mid-run stops the job with a message naming it (launcher) and makes
#              the survivor exit with an error (no launcher), never a hang; bad variables (RANK >=
#              WORLD_SIZE, an unreachable master) are clear errors
# collectives: the free collectives and a sub-group across 3 processes; SyncBatchNorm on 2 and 3
#              ranks against BatchNorm on the whole batch
# profile:     2 ranks profile 4 DDP steps of 8 buckets and check their traces (tests/ddp_trace_check.h):
#              one all-reduce span per bucket per step, issued in its ddp:bucket range, one
#              beginning before the step's last backward node ends (in at least 2 of the 4 steps:
#              a loaded machine sometimes deschedules a rank's threads for longer than backward);
#              key_averages lists them
# mnist:       train-mnist under tritium-run on 2 ranks ends with the loss and accuracy of one
#              process at the same global batch (skipped, 77, without Fashion-MNIST)
# gpt:         train-gpt (a tiny model) under tritium-run: 2 ranks print the losses of 1 process
#              within 1e-5 (get_batch; the DataLoader's DistributedSampler across an epoch with
#              --accumulate under no_sync); a 2-rank run stopped and resumed under 2 ranks continues
#              bit for bit, resumed under 1 within 1e-5; rank 0 alone prints and writes --log;
#              a global batch the ranks do not divide is a clear error (skipped, 77, without the
#              fortunes)
set -u
run=$1 worker=$2 scratch=$3 part=$4
mkdir -p "$scratch"
fail() { echo "FAIL: $*"; exit 1; }
port() { "$worker" --free-port; }

# Runs a job, failing the test on a non-zero exit (the output is shown).
job() {
  local out=$1; shift
  timeout 60 "$@" >"$out" 2>&1 || { cat "$out"; fail "exit status $? from: $*"; }
}

# The "step K loss L" lines of two outputs agree within 1e-5, 20 of them.
same_losses() {
  local a=$1 b=$2
  paste <(grep '^step ' "$a") <(grep '^step ' "$b") | awk -v A="$a" -v B="$b" '
    { n++; d = $4 - $8; if (d < 0) d = -d; if (d > max) max = d; if ($2 != $6) bad = 1 }
    END { printf "%s vs %s: %d steps, max |loss difference| %.3g\n", A, B, n, max;
          exit (n != 20 || bad || max > 1e-5) }' || fail "losses differ: $a vs $b"
}

case $part in
launcher)
  "$run" --help | grep -q "usage: tritium-run" || fail "--help"
  "$run" --nproc-per-node 3 --nnodes 2 --node-rank 1 --master-addr 10.1.2.3 --master-port 1234 sh -c \
    'echo "$RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $GROUP_RANK $MASTER_ADDR $MASTER_PORT"' \
    | sort >"$scratch/vars.txt"
  printf '3 0 6 3 1 10.1.2.3 1234\n4 1 6 3 1 10.1.2.3 1234\n5 2 6 3 1 10.1.2.3 1234\n' | diff - "$scratch/vars.txt" ||
    fail "variables"
  bad() {  # tritium-run ARGS... must exit 2 with one line containing $1
    local expect=$1; shift
    "$run" "$@" >"$scratch/bad.txt" 2>&1
    local status=$?
    [ $status = 2 ] && grep -q -- "$expect" "$scratch/bad.txt" || { cat "$scratch/bad.txt"; fail "$* (status $status)"; }
  }
  bad "--nproc-per-node: expected an integer in \[1, 1024\], got '0'" --nproc-per-node 0 true
  bad "--nproc-per-node is required" true
  bad "--master-port: expected an integer in \[1, 65535\], got '65536'" --nproc-per-node 1 --master-port 65536 true
  bad "--node-rank: 2 is out of range for --nnodes 2" --nproc-per-node 1 --nnodes 2 --node-rank 2 true
  bad "--node-rank is required with --nnodes above 1" --nproc-per-node 1 --nnodes 2 true
  bad "no program to run" --nproc-per-node 1
  bad "unknown option '--bogus'" --bogus 1 true
  # A rank exiting with status 3 is named; the other (sleeping) rank is stopped.
  start=$(date +%s)
  "$run" --nproc-per-node 2 sh -c '[ "$RANK" = 1 ] && exit 3; sleep 60' >"$scratch/fail.txt" 2>&1
  status=$?
  [ $status = 1 ] && grep -q "rank 1 (local rank 1, pid [0-9]*) exited with status 3; stopping the other ranks" \
    "$scratch/fail.txt" || { cat "$scratch/fail.txt"; fail "failing rank (status $status)"; }
  [ $(( $(date +%s) - start )) -le 10 ] || fail "the sleeping rank was not stopped"
  # SIGTERM to the launcher reaches every rank (each prints on TERM and exits 0).
  "$run" --nproc-per-node 2 sh -c 'trap "echo rank $RANK got TERM; exit 0" TERM; while :; do sleep 0.1; done' \
    >"$scratch/term.txt" 2>&1 &
  launcher=$!
  sleep 1
  kill -TERM $launcher
  wait $launcher
  status=$?
  [ $status = 143 ] && [ "$(grep -c 'got TERM' "$scratch/term.txt")" = 2 ] ||
    { cat "$scratch/term.txt"; fail "SIGTERM (status $status)"; }
  ;;
losses)
  train=(--mode train --steps 20 --global-batch 24)
  job "$scratch/w1.txt" "$run" --nproc-per-node 1 --master-port "$(port)" "$worker" "${train[@]}"
  grep -q "world 1, 1 buckets" "$scratch/w1.txt" || fail "expected one bucket: $(head -1 "$scratch/w1.txt")"
  job "$scratch/w2.txt" "$run" --nproc-per-node 2 --master-port "$(port)" "$worker" "${train[@]}"
  same_losses "$scratch/w1.txt" "$scratch/w2.txt"
  # Tiny caps: a bucket per parameter or two, launched as their gradients arrive.
  job "$scratch/w3.txt" "$run" --nproc-per-node 3 --master-port "$(port)" "$worker" "${train[@]}" \
    --bucket-cap-mb 0.00001 --first-bucket-cap-mb 0.00001
  grep -q "world 3, 4 buckets" "$scratch/w3.txt" || fail "expected 4 buckets: $(head -1 "$scratch/w3.txt")"
  same_losses "$scratch/w1.txt" "$scratch/w3.txt"
  # Two micro-batches per step, the first under no_sync.
  job "$scratch/w2acc.txt" "$run" --nproc-per-node 2 --master-port "$(port)" "$worker" "${train[@]}" --accumulate 2
  same_losses "$scratch/w1.txt" "$scratch/w2acc.txt"
  # A layer only rank 0 uses: find_unused_parameters lets the others finish their reduction.
  job "$scratch/unused.txt" "$run" --nproc-per-node 2 --master-port "$(port)" "$worker" --mode train --steps 3 \
    --find-unused
  grep -q "^step 2 loss" "$scratch/unused.txt" || fail "find_unused run: $(cat "$scratch/unused.txt")"
  ;;
failures)
  # Under the launcher: rank 1 dies at step 5; tritium-run names it and stops rank 0.
  start=$(date +%s)
  timeout 60 "$run" --nproc-per-node 2 --master-port "$(port)" --grace-period 2 "$worker" --mode train --steps 1000 \
    --die-rank 1 --die-step 5 --timeout-ms 5000 >"$scratch/killed.txt" 2>&1
  status=$?
  took=$(( $(date +%s) - start ))
  [ "$status" = 1 ] || { cat "$scratch/killed.txt"; fail "tritium-run exited with $status, expected 1"; }
  grep -q "rank 1 (local rank 1, pid [0-9]*) was killed by signal 9" "$scratch/killed.txt" ||
    { cat "$scratch/killed.txt"; fail "no line naming rank 1"; }
  [ "$took" -le 20 ] || fail "the job took ${took}s to stop"
  # Without the launcher: the survivor itself ends with an error naming the collective.
  p=$(port)
  common=(--mode train --steps 1000 --die-rank 1 --die-step 5 --timeout-ms 5000)
  start=$(date +%s)
  RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$p timeout 60 "$worker" "${common[@]}" >/dev/null 2>&1 &
  RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$p timeout 60 "$worker" "${common[@]}" \
    >"$scratch/survivor.txt" 2>&1
  status=$?
  wait
  took=$(( $(date +%s) - start ))
  [ "$status" = 2 ] || { cat "$scratch/survivor.txt"; fail "the survivor exited with $status, expected 2"; }
  grep -q "tritium-dist-worker: error: .*(gloo) failed on rank 0 of 2" "$scratch/survivor.txt" ||
    { cat "$scratch/survivor.txt"; fail "the survivor's error does not name the collective"; }
  [ "$took" -le 20 ] || fail "the survivor took ${took}s to stop"
  # RANK >= WORLD_SIZE.
  RANK=2 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$(port) "$worker" --mode collectives >"$scratch/bad.txt" 2>&1
  [ $? = 2 ] && grep -q "RANK=2 is out of range: WORLD_SIZE=2" "$scratch/bad.txt" || { cat "$scratch/bad.txt"; fail "RANK=2"; }
  # A master nobody serves (rank 1 of 2, rank 0 never starts): an error within the timeout.
  start=$(date +%s)
  RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$(port) timeout 30 "$worker" --mode collectives \
    --timeout-ms 1500 >"$scratch/unreachable.txt" 2>&1
  status=$?
  took=$(( $(date +%s) - start ))
  [ "$status" = 2 ] && grep -q "could not reach the store at 127.0.0.1:[0-9]* within 1500 ms" "$scratch/unreachable.txt" ||
    { cat "$scratch/unreachable.txt"; fail "unreachable master (status $status)"; }
  [ "$took" -le 10 ] || fail "the unreachable master took ${took}s"
  # Replicas that differ (rank 1's hidden layer is wider): DDP refuses before training.
  job_status=0
  timeout 60 "$run" --nproc-per-node 2 --master-port "$(port)" "$worker" --mode train --steps 2 --mismatch \
    >"$scratch/mismatch.txt" 2>&1 || job_status=$?
  [ "$job_status" = 1 ] && grep -q "the replicas differ: rank 0 has 4 parameters of 731 elements, rank 1 has 4 of 753" \
    "$scratch/mismatch.txt" || { cat "$scratch/mismatch.txt"; fail "mismatched replicas (status $job_status)"; }
  # A missing variable.
  env -u RANK WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=1234 "$worker" --mode collectives >"$scratch/missing.txt" 2>&1
  grep -q "the environment variable RANK is not set" "$scratch/missing.txt" || { cat "$scratch/missing.txt"; fail "missing RANK"; }
  ;;
collectives)
  job "$scratch/collectives.txt" "$run" --nproc-per-node 3 --master-port "$(port)" "$worker" --mode collectives
  [ "$(grep -c 'collectives ok' "$scratch/collectives.txt")" = 3 ] || { cat "$scratch/collectives.txt"; fail "collectives"; }
  # SyncBatchNorm over 2 and 3 ranks equals BatchNorm over the whole batch.
  for n in 2 3; do
    job "$scratch/syncbn$n.txt" "$run" --nproc-per-node $n --master-port "$(port)" "$worker" --mode syncbn
    [ "$(grep -c 'syncbn ok' "$scratch/syncbn$n.txt")" = $n ] || { cat "$scratch/syncbn$n.txt"; fail "syncbn $n"; }
  done
  ;;
profile)
  job "$scratch/profile.txt" "$run" --nproc-per-node 2 --master-port "$(port)" "$worker" --mode profile --steps 4 \
    --trace "$scratch/trace"
  cat "$scratch/profile.txt"
  [ "$(grep -c 'profile ok: 4 steps, 8 buckets, 32 all-reduce spans' "$scratch/profile.txt")" = 2 ] || fail "profile"
  [ -s "$scratch/trace.rank0.json" ] && [ -s "$scratch/trace.rank1.json" ] || fail "no trace files"
  ;;
mnist)
  mnist=$5
  [ -e /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] ||
    { echo "skipped: Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)"; exit 77; }
  args=(--epochs 1 --limit-batches 6 --batch-size 48 --workers 0 --seed 2)
  job "$scratch/mnist1.txt" "$mnist" "${args[@]}"
  job "$scratch/mnist2.txt" "$run" --nproc-per-node 2 --master-port "$(port)" "$mnist" "${args[@]}"
  grep -q "data parallel over 2 ranks (gloo), 24 samples per rank" "$scratch/mnist2.txt" || fail "not data parallel"
  one=$(grep -o "train loss [0-9.]*, test accuracy [0-9.]*%" "$scratch/mnist1.txt")
  two=$(grep -o "train loss [0-9.]*, test accuracy [0-9.]*%" "$scratch/mnist2.txt")
  echo "1 rank: $one; 2 ranks: $two"
  [ -n "$one" ] && [ "$one" = "$two" ] || fail "2 ranks differ from 1"
  [ "$(grep -c '^final:' "$scratch/mnist2.txt")" = 1 ] || fail "rank 1 printed too"
  ;;
gpt)
  gpt=$5
  [ -d /usr/share/games/fortunes ] || { echo "skipped: the fortunes are not installed (apt-get install fortunes)"; exit 77; }
  tiny=(--layers 2 --width 32 --heads 2 --context 16 --batch-size 8 --steps 6 --warmup 2 --eval-every 100
        --eval-batches 1 --generate 0 --print-losses)
  # within A B COUNT [TOLERANCE]: the "loss K L" lines of two outputs, COUNT of them, agree.
  within() {
    paste <(grep '^loss ' "$1") <(grep '^loss ' "$2") | awk -v A="$1" -v B="$2" -v N="$3" -v T="${4:-1e-5}" '
      { n++; d = $3 - $6; if (d < 0) d = -d; if (d > max) max = d; if ($2 != $5) bad = 1 }
      END { printf "%s vs %s: %d steps, max |loss difference| %.3g\n", A, B, n, max; exit (n != N || bad || max > T) }' ||
      fail "losses differ: $1 vs $2"
  }
  job "$scratch/gpt1.txt" "$gpt" "${tiny[@]}"
  job "$scratch/gpt2.txt" "$run" --nproc-per-node 2 --master-port "$(port)" "$gpt" "${tiny[@]}" --log "$scratch/gpt2.jsonl"
  grep -q "data parallel over 2 ranks (gloo), 4 sequences per rank and batch" "$scratch/gpt2.txt" || fail "not data parallel"
  within "$scratch/gpt1.txt" "$scratch/gpt2.txt" 6
  [ "$(grep -c '^final:' "$scratch/gpt2.txt")" = 1 ] || fail "rank 1 printed too"
  [ "$(grep -c '"loss"' "$scratch/gpt2.jsonl")" = 6 ] || fail "--log: expected rank 0's 6 loss lines"
  # The DataLoader: 47 training windows of a tiny corpus, 5 global batches of 8 an epoch, so 6
  # steps of 2 accumulated batches (the first under no_sync) cross two epochs.
  corpus="$scratch/tiny-corpus"
  mkdir -p "$corpus"
  { for i in 1 2 3 4 5 6 7 8 9; do printf 'abc%d\n%%\n' "$i"; done
    printf 'a held-out fortune that is long enough\n%%\n'; } >"$corpus/tiny"
  loader=(--corpus "$corpus" --workers 0 --accumulate 2)
  job "$scratch/loader1.txt" "$gpt" "${tiny[@]}" "${loader[@]}"
  job "$scratch/loader2.txt" "$run" --nproc-per-node 2 --master-port "$(port)" "$gpt" "${tiny[@]}" "${loader[@]}"
  within "$scratch/loader1.txt" "$scratch/loader2.txt" 6
  # Resume: stopped after step 3 under 2 ranks, resumed under 2 (bit for bit) and under 1.
  ck="$scratch/gpt2.safetensors"
  job "$scratch/part.txt" "$run" --nproc-per-node 2 --master-port "$(port)" "$gpt" "${tiny[@]}" --stop-after 3 --save "$ck"
  job "$scratch/rest2.txt" "$run" --nproc-per-node 2 --master-port "$(port)" "$gpt" "${tiny[@]}" --resume "$ck"
  grep -q "resumed $ck after step 3" "$scratch/rest2.txt" || fail "the resumed run does not say where it resumed"
  cat "$scratch/part.txt" "$scratch/rest2.txt" >"$scratch/resumed2.txt"
  diff <(grep '^loss ' "$scratch/gpt2.txt") <(grep '^loss ' "$scratch/resumed2.txt") ||
    fail "resumed under 2 ranks: the losses differ from the uninterrupted 2-rank run"
  job "$scratch/rest1.txt" "$gpt" "${tiny[@]}" --resume "$ck"
  within <(grep '^loss [456] ' "$scratch/gpt2.txt") "$scratch/rest1.txt" 3
  # A global batch the ranks do not divide.
  timeout 60 "$run" --nproc-per-node 3 --master-port "$(port)" "$gpt" "${tiny[@]}" >"$scratch/bad.txt" 2>&1
  grep -q "batch-size 8 is the global batch: it must be divisible by the 3 ranks" "$scratch/bad.txt" ||
    { cat "$scratch/bad.txt"; fail "--batch-size 8 on 3 ranks"; }
  ;;
*) fail "unknown part $part" ;;
esac
echo "dist_ddp $part: ok"
