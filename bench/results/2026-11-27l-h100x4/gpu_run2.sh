#!/usr/bin/env bash
# session 47, call 2 (four GPUs), main with s47-gather, s47-math, s47-select merged and the lead's
# matmul heuristic (batch and split programs counted), 32-bit strided index math and one-launch
# layer_norm dw/db finish. GPU 0: the changed ops beside PyTorch (erfc, tan, argmax/argmin, max/min
# with dim, gather/scatter/index ops, median/kthvalue/sort/topk, the exp-based math), then the kernel
# suite's checks on CUDA. GPU 1-2: every test suite on CUDA (atomics, math::exp, radix select and the
# indexing kernel touch many). GPU 3: the GPT under the auto default (cold 20 steps, then 300 warm)
# beside PyTorch eager, tf32 and bf16, a profile of auto bf16, the MLP's first epoch, and the atomics
# kernels beside Triton.
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
END=${END:-560}
export T0 END OUT; export -f el
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
( sleep $END; echo "WATCHDOG at $(el)"; pkill -9 -f tritium-tests; pkill -9 -f compare_; pkill -9 -f tritium-kernels; pkill -9 -f tritium-bench; pkill -9 -f train-; pkill -9 -f torch_gpt ) > $OUT/logs/watchdog.txt 2>&1 &
W=$!
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j48 --target train-gpt train-mnist tritium-bench tritium-kernels > /tmp/b.log 2>&1 || { grep -B2 -A8 error /tmp/b.log | head -40; exit 1; }
echo "built tools $(el)"
(cmake --build /tmp/bg -j40 --target tritium-tests > /tmp/bt.log 2>&1; echo "tests built rc=$? $(el)"; grep -m5 error /tmp/bt.log) > $OUT/logs/tests_build.txt 2>&1 &
export LD_LIBRARY_PATH=/tmp/bg
suite() { # GPU, suite
  local left=$(( END - 5 - $(el) )); [ $left -lt 10 ] && { echo "$2 NOT-RUN"; return; }
  local t0=$(date +%s)
  CUDA_VISIBLE_DEVICES=$1 TRITIUM_FIXTURES_DIR=$PWD/tests/fixtures TRITIUM_CACHE_DIR=/tmp/c-$2 timeout -k 5 $left /tmp/bg/tests/tritium-tests --run_test=$2 --log_level=test_suite --report_level=short > $OUT/logs/t_$2.txt 2>&1
  echo "$2 gpu$1 rc=$? $(( $(date +%s) - t0 ))s"
}
export -f suite
ops() { # name filter
  local left=$(( END - 10 - $(el) )); [ $left -lt 20 ] && { echo "ops $1 NOT-RUN"; return; }
  CUDA_VISIBLE_DEVICES=0 TRITIUM_CACHE_DIR=/tmp/ocache TRITIUM_AUTOTUNE=tune timeout $left python3 bench/compare_ops.py --bin /tmp/bg/bench/tritium-bench --device cuda --rounds 1 --quick --filter "$2" --dtypes f32,bf16 --json $OUT/logs/ops_$1.json > $OUT/logs/ops_$1.txt 2>&1
  echo "ops $1 rc=$? [$(el)]"
}
( ops math '^(erfc|erf|erfinv|tan|sinh|cosh|expm1|exp|mish|gelu|sigmoid|silu)( |$)'
  ops reduce '^(argmax|argmin|max\.dim|min\.dim)( |$)'
  ops index '^(gather|scatter|scatter\.value|scatter_add|scatter_reduce|index_select|index_add|contiguous)( |$)'
  ops select '^(median|median\.dim|kthvalue|sort|topk|argsort)( |$)'
  left=$(( END - 8 - $(el) ))
  CUDA_VISIBLE_DEVICES=0 TRITIUM_CACHE_DIR=/tmp/kchk timeout $left /tmp/bg/kernels/tritium-kernels --check all --backend cuda > $OUT/logs/kernel_checks.txt 2>&1; echo "kernel checks rc=$? [$(el)]"
) > $OUT/logs/g0.txt 2>&1 &
( export CUDA_VISIBLE_DEVICES=3
  G="/tmp/bg/tools/train-gpt --device cuda --corpus .carry/fortunes --eval-every 1000 --generate 0"
  for mode in tf32 bf16; do
    flag=$([ $mode = tf32 ] && echo "--tf32" || echo "--amp bf16")
    TRITIUM_CACHE_DIR=/tmp/ga-$mode timeout 90 $G $flag --steps 20 > $OUT/logs/gpt_auto_cold_$mode.txt 2>&1; echo "gpt auto cold $mode rc=$? [$(el)]"
    TRITIUM_CACHE_DIR=/tmp/ga-$mode timeout 90 $G $flag --steps 300 > $OUT/logs/gpt_auto_$mode.txt 2>&1; echo "gpt auto $mode rc=$? [$(el)]"
    P="bench/torch_gpt_reference.py --device cuda --corpus .carry/fortunes --eval-every 1000 --steps 300 $flag"
    timeout 90 python3 $P > $OUT/logs/torch_gpt_$mode.txt 2>&1; echo "torch eager $mode rc=$? [$(el)]"
  done
  TRITIUM_CACHE_DIR=/tmp/ga-bf16 timeout 60 $G --amp bf16 --steps 9 --profile $OUT/logs/prof_auto_bf16.json > $OUT/logs/gpt_auto_prof_bf16.txt 2>&1; echo "gpt auto prof bf16 rc=$? [$(el)]"
  TRITIUM_CACHE_DIR=/tmp/mn timeout 60 /tmp/bg/tools/train-mnist --backend cuda --data .carry/fashion-mnist --epochs 2 > $OUT/logs/mnist_cold_auto.txt 2>&1; echo "mnist cold auto rc=$? [$(el)]"
  left=$(( END - 10 - $(el) ))
  TRITIUM_CACHE_DIR=/tmp/kc3 TRITIUM_AUTOTUNE=tune timeout $left python3 bench/compare_kernels.py --bin /tmp/bg/kernels --kernels grpo_loss,histc,modulated_rms_norm,embedding --rounds 1 --timeout $left > $OUT/logs/kern_atomics.txt 2>&1; echo "kernels rc=$? [$(el)]"
) > $OUT/logs/g3.txt 2>&1 &
G3=$!
while ! grep -q "tests built" $OUT/logs/tests_build.txt 2>/dev/null; do sleep 2; done
cat $OUT/logs/tests_build.txt
all=$(grep -ho "BOOST_AUTO_TEST_SUITE([a-z0-9_]*" tests/*.cpp | sed 's/.*(//' | sort -u)
first="test_matmul_family test_nn_transformer test_matmul test_nn_gpt test_attention test_amp_autocast test_ops_sort test_tensor_indexing"
rest=$(for s in $all; do [[ " $first test_torch_parity test_dot " == *" $s "* ]] || echo $s; done)
echo test_torch_parity > /tmp/l1; echo test_dot > /tmp/l2
i=0; for s in $first $rest; do echo $s >> /tmp/l$((1 + i % 2)); i=$((i + 1)); done
for g in 1 2; do ( xargs -P 10 -I{} bash -c "suite $g {}" < /tmp/l$g ) > $OUT/logs/s$g.txt 2>&1 & done
while pgrep -f "xargs -P 10" >/dev/null || kill -0 $G3 2>/dev/null || pgrep -f "compare_ops|tritium-kernels --check" >/dev/null; do sleep 2; [ $(el) -gt $(( END + 15 )) ] && break; done
kill $W 2>/dev/null
cat $OUT/logs/s1.txt $OUT/logs/s2.txt | sort -t' ' -k3 > $OUT/logs/summary.txt
echo "== not rc=0:"; grep -v "rc=0 " $OUT/logs/summary.txt
echo "== rc=0: $(grep -c "rc=0 " $OUT/logs/summary.txt) of $(echo "$all" | wc -l)"
for f in $OUT/logs/t_*.txt; do grep -E "error: in|fatal error|violation" $f | grep -v "skipped because" | grep -q . && { echo "-- $(basename $f)"; grep -E "error: in|fatal error|violation" $f | grep -v "skipped because" | head -4 | cut -c1-300; }; done
echo "== gpu0"; cat $OUT/logs/g0.txt
for f in $OUT/logs/ops_*.txt; do grep -E "^\|" $f | cut -c1-120; grep "below 0.8" $f; done
grep -vE " OK$|^time " $OUT/logs/kernel_checks.txt | head -8 | cut -c1-250; echo "kernel checks OK lines: $(grep -c " OK" $OUT/logs/kernel_checks.txt)"
echo "== gpu3"; cat $OUT/logs/g3.txt
for f in $OUT/logs/gpt_auto_*.txt $OUT/logs/torch_gpt_*.txt; do echo "-- $(basename $f): $(grep -iE "final|steady" $f | tail -2 | tr '\n' ' ' | cut -c1-250)"; done
grep -iE "^epoch" $OUT/logs/mnist_cold_auto.txt | head -3
grep -E "ratio|[0-9]\.[0-9]{3}$" $OUT/logs/kern_atomics.txt | cut -c1-110
cat $OUT/logs/watchdog.txt
echo "end $(el)"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
