#!/usr/bin/env bash
# session 44, call 2 (four GPUs): main with s44-attnfwd (TMA for computed descriptor shapes: tutorial 06's
# K/V; bf16 P without the NaN fix-up) and s44-convnn (division-free conv K loops, conv tf32 by default,
# tap-grouped weight gradients, 1x1 wgrad on matmul) merged.
# GPU 0: value suites on CUDA; GPU 1: tutorial 06 beside Triton / torch at N 1024/4096/16384, D 64/128,
# f16/bf16; GPU 2: conv2d beside cuDNN (tuned, then heuristic), the CNN beside PyTorch eager;
# GPU 3: train-mnist's first epoch cold, the debug mode's cost (tutorials 01/02/05), the GPT tf32 beside
# PyTorch eager and torch.compile.
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
END=${END:-540}
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
git log --oneline -1
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j64 --target tritium-bench 06-fused-attention 01-vector-add 02-fused-softmax 05-layer-norm train-mnist train-gpt > /tmp/b.log 2>&1 || { grep error /tmp/b.log | head -30; exit 1; }
echo "built tools $(el)"
(cmake --build /tmp/bg -j48 --target tritium-tests > /tmp/bt.log 2>&1; echo "tests built rc=$? $(el)"; grep -m5 error /tmp/bt.log) > $OUT/logs/tests_build.txt 2>&1 &
B=$!
export LD_LIBRARY_PATH=/tmp/bg
( export CUDA_VISIBLE_DEVICES=1 TRITIUM_CACHE_DIR=/tmp/acache
  timeout 60 /tmp/bg/tutorials/06-fused-attention --backend cuda > $OUT/logs/t06_check.txt 2>&1; echo "t06 check rc=$? $(tail -1 $OUT/logs/t06_check.txt) [$(el)]"
  for spec in "4096 64,128 f16 fwd,bwd" "4096 64,128 bf16 fwd" "1024 64,128 f16 fwd" "16384 64,128 f16 fwd" "1024,16384 128 bf16 fwd"; do
    set -- $spec; left=$(( END - 8 - $(el) )); [ $left -lt 40 ] && { echo "attn $spec NOT-RUN"; continue; }
    n=$(echo "$spec" | tr ' ,' '__')
    timeout $left python3 bench/compare_attention.py --bin /tmp/bg/tutorials --sizes $1 --dims $2 --dtypes $3 --modes $4 --rounds 2 --timeout $left > $OUT/logs/attn_$n.txt 2>&1; echo "attn $spec rc=$? [$(el)]"
  done ) > $OUT/logs/attn.txt 2>&1 &
( export CUDA_VISIBLE_DEVICES=2 TRITIUM_CACHE_DIR=/tmp/ccache2
  timeout 200 python3 bench/compare_ops.py --bin /tmp/bg/bench/tritium-bench --device cuda --rounds 1 --quick --filter '^conv2d' --dtypes bf16,f32 --json $OUT/logs/conv2d.json > $OUT/logs/conv2d.txt 2>&1; echo "conv2d tuned rc=$? $(grep geomean $OUT/logs/conv2d.txt) [$(el)]"
  TRITIUM_AUTOTUNE=heuristic TRITIUM_CACHE_DIR=/tmp/ccache2h timeout 120 python3 bench/compare_ops.py --bin /tmp/bg/bench/tritium-bench --device cuda --rounds 1 --quick --filter '^conv2d' --dtypes bf16,f32 --json $OUT/logs/conv2d_h.json > $OUT/logs/conv2d_h.txt 2>&1; echo "conv2d heuristic rc=$? $(grep geomean $OUT/logs/conv2d_h.txt) [$(el)]"
  left=$(( END - 8 - $(el) )); [ $left -gt 60 ] && { timeout $(( left / 2 )) /tmp/bg/tools/train-mnist --model cnn --backend cuda --epochs 5 --data .carry/fashion-mnist > $OUT/logs/cnn.txt 2>&1; echo "cnn rc=$? [$(el)]"; tail -7 $OUT/logs/cnn.txt; }
  left=$(( END - 5 - $(el) )); [ $left -gt 30 ] && { timeout $left python3 bench/torch_mnist_reference.py .carry/fashion-mnist 5 cnn cuda > $OUT/logs/cnn_torch.txt 2>&1; echo "cnn torch rc=$? [$(el)]"; tail -6 $OUT/logs/cnn_torch.txt; }
) > $OUT/logs/conv.txt 2>&1 &
( export CUDA_VISIBLE_DEVICES=3
  for mode in tune heuristic; do
    rm -rf /tmp/mcache; TRITIUM_AUTOTUNE=$mode TRITIUM_CACHE_DIR=/tmp/mcache timeout 60 /tmp/bg/tools/train-mnist --backend cuda --epochs 2 --data .carry/fashion-mnist > $OUT/logs/mnist_cold_${mode}.txt 2>&1
    echo "mnist cold $mode rc=$? [$(el)]"; grep -i "epoch" $OUT/logs/mnist_cold_${mode}.txt | head -3
  done
  G="/tmp/bg/tools/train-gpt --device cuda --corpus .carry/fortunes --eval-every 1000 --generate 0 --tf32"
  P="bench/torch_gpt_reference.py --device cuda --corpus .carry/fortunes --eval-every 1000 --steps 300 --tf32"
  TRITIUM_CACHE_DIR=/tmp/gcache timeout 110 $G --steps 20 > $OUT/logs/gpt_cold.txt 2>&1; echo "gpt tf32 cold rc=$? [$(el)]"
  TRITIUM_CACHE_DIR=/tmp/gcache timeout 60 $G --steps 300 > $OUT/logs/gpt.txt 2>&1; echo "gpt tf32 rc=$?: $(grep -i final $OUT/logs/gpt.txt | tail -1) [$(el)]"
  TRITIUM_CACHE_DIR=/tmp/gcache timeout 60 $G --steps 12 --profile $OUT/logs/gpt_trace.json > $OUT/logs/gpt_prof.txt 2>&1; echo "gpt profile rc=$? [$(el)]"
  left=$(( END - 100 - $(el) )); [ $left -gt 40 ] && { timeout $left python3 $P > $OUT/logs/torch_gpt.txt 2>&1; echo "torch eager rc=$?: $(grep steady $OUT/logs/torch_gpt.txt) [$(el)]"; }
  left=$(( END - 5 - $(el) )); [ $left -gt 40 ] && { timeout $left python3 $P --compile > $OUT/logs/torch_gpt_compile.txt 2>&1; echo "torch compile rc=$?: $(grep steady $OUT/logs/torch_gpt_compile.txt) [$(el)]"; }
) > $OUT/logs/misc.txt 2>&1 &
wait $B
suite() { # GPU, suite
  local left=$(( END - $(el) )); [ $left -lt 10 ] && { echo "$2 NOT-RUN"; return; }
  local t0=$(date +%s)
  TRITIUM_LOG=compile CUDA_VISIBLE_DEVICES=$1 TRITIUM_FIXTURES_DIR=$PWD/tests/fixtures TRITIUM_CACHE_DIR=/tmp/c-$(echo $2 | tr / _) timeout $left /tmp/bg/tests/tritium-tests --run_test=$2 --log_level=test_suite --report_level=short > $OUT/logs/t_$(echo $2 | tr / _).txt 2>&1
  echo "$2 gpu$1 rc=$? $(( $(date +%s) - t0 ))s"
}
export -f suite el; export T0 END OUT
SUITES0="test_block_ptr test_layout_tma test_layout_attention_fwd test_layout_attention_bwd test_attention test_cuda_codegen test_nn_conv test_nn_conv_codegen test_nn_walkthrough test_layouts test_layout_operand_values test_layout_wgmma test_debug_mode test_matmul test_dot"
( printf '%s\n' $SUITES0 | xargs -P 16 -I{} bash -c 'suite 0 {}'
  TRITIUM_GRADCHECK_OPS=conv2d,conv1d,conv_transpose2d suite 0 test_op_registry/every_differentiable_op_passes_gradcheck
  for t in 01-vector-add 02-fused-softmax 05-layer-norm; do for d in 0 1; do
    left=$(( END - 5 - $(el) )); [ $left -lt 20 ] && continue
    CUDA_VISIBLE_DEVICES=0 TRITIUM_DEBUG=$d TRITIUM_CACHE_DIR=/tmp/dcache timeout $left /tmp/bg/tutorials/$t --backend cuda --bench > $OUT/logs/debug_${t}_$d.txt 2>&1; echo "$t debug=$d rc=$? [$(el)]"
  done; done ) > $OUT/logs/suites0.txt 2>&1
wait
echo "== suites"; cat $OUT/logs/tests_build.txt $OUT/logs/suites0.txt; grep -h "totals" $OUT/logs/t_*.txt | cut -c1-200 | head -20
for f in $OUT/logs/t_*.txt; do grep -E "error|failed" $f | grep -v "skipped because" | grep -q . && { echo "-- $(basename $f)"; grep -E "error|failed" $f | grep -v "skipped because" | head -8 | cut -c1-300; }; done
echo "== attention"; cat $OUT/logs/attn.txt; for f in $OUT/logs/attn_*.txt; do echo "-- $f"; sed -n '/^TFLOP/,$p' $f | head -24; done
echo "== conv"; cat $OUT/logs/conv.txt; grep "conv2d" $OUT/logs/conv2d.txt | grep -E "bf16" | head -20
echo "== misc"; cat $OUT/logs/misc.txt
for f in $OUT/logs/debug_*.txt; do echo "-- $f"; tail -6 $f; done
grep -A18 -i "top\|kernel" $OUT/logs/gpt_prof.txt | head -45
echo "end $(el)"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
