#!/usr/bin/env bash
# session 46, call 1 (two GPUs), main at 8cda768. GPU 0: the two CUDA host crashes of stop 45
# (test_attention/matches_float64_at_any_length, test_nn_gpt/names_shapes_and_tied_head): compile log,
# native backtrace through an LD_PRELOAD SIGSEGV shim (segv_trace.c), resolved with addr2line; then
# kernels. GPU 1: the kernels stop 45's helpers changed, beside Triton (steady speed: TRITIUM_AUTOTUNE=tune).
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
END=${END:-470}
export T0 END OUT; export -f el
D=bench/results/2026-11-27k-h100x2
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
( sleep $END; echo "WATCHDOG at $(el)"; pkill -9 -f tritium-tests; pkill -9 -f compare_; pkill -9 -f tritium-kernels; pkill -9 -f tritium-bench ) > $OUT/logs/watchdog.txt 2>&1 &
W=$!
gcc -shared -fPIC -o /tmp/segv.so $D/segv_trace.c || echo "shim build failed"
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS=-g1 -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j32 --target tritium-tests tritium-kernels tritium-bench > /tmp/b.log 2>&1 || { grep error /tmp/b.log | head -30; }
echo "built $(el)"
export LD_LIBRARY_PATH=/tmp/bg
kern() { # gpu, kernels...
  export CUDA_VISIBLE_DEVICES=$1 TRITIUM_CACHE_DIR=/tmp/kc$1 TRITIUM_AUTOTUNE=tune; shift
  for group in "$@"; do
    local left=$(( END - 8 - $(el) )); [ $left -lt 30 ] && { echo "kernels $group NOT-RUN"; continue; }
    timeout $left python3 bench/compare_kernels.py --bin /tmp/bg/kernels --kernels $group --rounds 1 --timeout $left > $OUT/logs/kern_${group//,/_}.txt 2>&1
    echo "kernels $group rc=$? [$(el)]"
  done
}
export -f kern
kern 1 sparsemax,poly_norm attn_res,silu_mul_quant_fp8 rope_embedding,cumsum rms_norm,embedding splitk_matmul,persistent_matmul > $OUT/logs/kern1.txt 2>&1 &
K1=$!
resolve() { # backtrace lines "obj(+0xoff)[..]" or "obj(sym+0xoff)[..]" -> function and line
  grep -E '^\S+\((\+|_Z|[a-z]).*\)\[0x' "$1" | head -40 | while read -r l; do
    obj=${l%%(*}; inner=${l#*(}; inner=${inner%%)*}
    if [[ $inner == +* ]]; then echo "$(addr2line -f -C -i -e "$obj" "${inner#+}" 2>/dev/null | paste -sd' ' | cut -c1-260)  [$(basename $obj)]"
    else echo "$(echo "$inner" | c++filt | cut -c1-200) [$(basename $obj)]"; fi
  done
}
( export CUDA_VISIBLE_DEVICES=0
  for t in test_attention/matches_float64_at_any_length test_nn_gpt/names_shapes_and_tied_head; do
    n=${t%%/*}
    TRITIUM_LOG=compile TRITIUM_FIXTURES_DIR=$PWD/tests/fixtures TRITIUM_CACHE_DIR=/tmp/cd-$n LD_PRELOAD=/tmp/segv.so timeout -k 3 90 /tmp/bg/tests/tritium-tests --run_test=$t --catch_system_errors=no --log_level=all > $OUT/logs/crash_$n.txt 2>&1
    echo "== $t rc=$? [$(el)]"
    grep -vE "===|^[0-9a-f]+-[0-9a-f]+ " $OUT/logs/crash_$n.txt | grep -vE "Entering|Leaving|skipped because" | grep -B2 -A1 -m3 "signal" | cut -c1-300
    grep -E "compil|kernel" $OUT/logs/crash_$n.txt | tail -5 | cut -c1-300
    resolve $OUT/logs/crash_$n.txt
    if command -v gdb >/dev/null; then TRITIUM_CACHE_DIR=/tmp/cd2-$n timeout -k 3 90 gdb -q -batch -ex run -ex bt --args /tmp/bg/tests/tritium-tests --run_test=$t --catch_system_errors=no 2>&1 | grep -E "^#" | head -16 | cut -c1-300; else echo "no gdb"; fi
  done
  kern 0 implicit_gemm_conv,grpo_loss layer_norm,fused_add_rms_norm
) > $OUT/logs/g0.txt 2>&1 &
G0=$!
while kill -0 $G0 2>/dev/null || kill -0 $K1 2>/dev/null; do sleep 2; [ $(el) -gt $(( END + 15 )) ] && break; done
kill $W 2>/dev/null
echo "== gpu0"; cat $OUT/logs/g0.txt
echo "== kernels"; cat $OUT/logs/kern1.txt $OUT/logs/watchdog.txt
for f in $OUT/logs/kern_*.txt; do grep -iE "geomean|worst|error|fail" $f | head -4 | sed "s|^|$(basename $f): |" | cut -c1-250; done
echo "end $(el)"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
