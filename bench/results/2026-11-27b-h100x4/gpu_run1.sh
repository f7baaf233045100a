#!/usr/bin/env bash
# session 43, call 1 (four GPUs): stop 42's compiler branches were never run on a GPU. GPU 0: the
# kernel suite's value checks and the layout suites; GPU 1: tutorial 06 beside Triton and SDPA
# (D64, D128); GPU 2: the dot ports beside their Triton originals, then tf32 Linear products;
# GPU 3: the long suites never run in full on CUDA (test_dot, test_attention, ...), two-GPU tests.
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
END=${END:-560}
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j64 --target tritium-kernels 06-fused-attention tritium-bench > /tmp/b.log 2>&1 || { grep error /tmp/b.log | head -30; exit 1; }
echo "built kernels/attention/bench $(el)"
(cmake --build /tmp/bg -j56 --target tritium-tests > /tmp/bt.log 2>&1; echo "tests built rc=$? $(el)"; grep -m5 error /tmp/bt.log) &
export LD_LIBRARY_PATH=/tmp/bg
( export CUDA_VISIBLE_DEVICES=1 TRITIUM_CACHE_DIR=/tmp/acache
  for d in 64 128; do
    left=$(( END - $(el) )); [ $left -lt 30 ] && { echo "d$d not run"; continue; }
    timeout $left python3 bench/compare_attention.py --bin /tmp/bg/tutorials --sizes 4096 --dims $d --dtypes f16 --modes fwd,bwd --rounds 2 --timeout 200 > $OUT/logs/attn_d$d.txt 2>&1; echo "attention d$d rc=$? [$(el)]"; tail -14 $OUT/logs/attn_d$d.txt
  done ) > $OUT/logs/attention_summary.txt 2>&1 &
A=$!
( export CUDA_VISIBLE_DEVICES=2 TRITIUM_CACHE_DIR=/tmp/kcache
  for k in grouped_gemm fused_moe implicit_gemm_conv; do
    left=$(( END - 120 - $(el) )); [ $left -lt 30 ] && { echo "$k not run"; continue; }
    timeout $left python3 bench/compare_kernels.py --bin /tmp/bg/kernels --kernels $k --rounds 1 --timeout 150 > $OUT/logs/k_$k.txt 2>&1; echo "kernel $k rc=$? [$(el)]"; tail -6 $OUT/logs/k_$k.txt
  done
  for l in 16384,384,1536 16384,1536,384; do
    left=$(( END - $(el) )); [ $left -lt 30 ] && { echo "linear $l not run"; continue; }
    timeout $left python3 bench/compare_ops_matmul.py --bench /tmp/bg/bench/tritium-bench --dtypes tf32,bf16 --linear $l > $OUT/logs/lin_$l.txt 2>&1; echo "linear $l rc=$? [$(el)]"; tail -8 $OUT/logs/lin_$l.txt
  done ) > $OUT/logs/kernels_summary.txt 2>&1 &
K=$!
( export CUDA_VISIBLE_DEVICES=0 TRITIUM_CACHE_DIR=/tmp/ccache0
  timeout 200 /tmp/bg/kernels/tritium-kernels --check all --backend cuda > $OUT/logs/check_all.txt 2>&1; echo "check all rc=$? [$(el)]"; grep -iE "fail|error|mismatch" $OUT/logs/check_all.txt | head -20; tail -3 $OUT/logs/check_all.txt ) > $OUT/logs/check_summary.txt 2>&1 &
C=$!
while pgrep -f "target tritium-tests" >/dev/null; do sleep 2; done
suite() { # GPU, suite
  local left=$(( END - $(el) )); [ $left -lt 10 ] && { echo "$2 NOT-RUN"; return; }
  local t0=$(date +%s)
  CUDA_VISIBLE_DEVICES=$1 TRITIUM_FIXTURES_DIR=$PWD/tests/fixtures TRITIUM_CACHE_DIR=/tmp/c-$2 timeout $left /tmp/bg/tests/tritium-tests --run_test=$2 --log_level=test_suite --report_level=short > $OUT/logs/t_$(echo $2 | tr / _).txt 2>&1
  echo "$2 gpu$1 rc=$? $(( $(date +%s) - t0 ))s"
}
export -f suite el; export T0 END OUT
( printf '%s\n' test_dot test_attention test_matmul test_matmul_family test_nn_gpt test_nn_transformer test_torch_parity | xargs -P 7 -I{} bash -c 'suite 3 {}'
  suite 3,0 test_dist_model_parallel; suite 3,0 test_streams; suite 3,0 test_autotune ) > $OUT/logs/suites3.txt 2>&1 &
S3=$!
wait $C
printf '%s\n' test_tf32_values test_layout_tf32 test_layout_dot_ports test_layouts test_layout_operand_values test_layout_wgmma test_layout_dot_kinds test_layout_epilogue test_layout_tma test_layout_data_movement test_contract_fma | xargs -P 11 -I{} bash -c 'suite 0 {}' > $OUT/logs/suites0.txt 2>&1
wait $S3 $A $K
echo "== checks"; cat $OUT/logs/check_summary.txt
echo "== suites"; cat $OUT/logs/suites0.txt $OUT/logs/suites3.txt
for f in $OUT/logs/t_*.txt; do grep -qE "error|failed" $f && { echo "-- $(basename $f)"; grep -E "error|failed" $f | head -8 | cut -c1-300; }; done
grep -h "TMA\|cp.async" $OUT/logs/t_test_tf32_values.txt | head -6
echo "== attention"; cat $OUT/logs/attention_summary.txt
echo "== kernels"; cat $OUT/logs/kernels_summary.txt
echo "end $(el)"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
