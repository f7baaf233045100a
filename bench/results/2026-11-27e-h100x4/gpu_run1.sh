#!/usr/bin/env bash
# session 44, call 1 (four GPUs), main at the start of the stop: measurements only.
# GPUs 0-2: `tritium-bench --ops` beside PyTorch, every op (issue 29; first full table on a GPU since
# stop 37), one compare_ops run per initial letter so a cut-off keeps what finished.
# GPU 3: conv2d beside cuDNN (issue 30's ResNet-50 shapes), FlagGems' conv kernel under ncu (issue 27),
# then the persistent matmul port beside tutorial 09 (never timed).
set -uo pipefail
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT/logs
export CUDA_CACHE_DISABLE=1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
END=${END:-540}
nvidia-smi --query-gpu=name --format=csv,noheader | uniq -c
git log --oneline -1
cmake -S . -B /tmp/bg -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRITIUM_CPU_BACKEND=OFF >/tmp/cfg.log 2>&1
cmake --build /tmp/bg -j64 --target tritium-bench tritium-kernels > /tmp/b.log 2>&1 || { grep error /tmp/b.log | head -30; exit 1; }
echo "built $(el)"
export LD_LIBRARY_PATH=/tmp/bg
ops() { # GPU, letters
  export CUDA_VISIBLE_DEVICES=$1 TRITIUM_CACHE_DIR=/tmp/ocache$1
  for l in $2; do
    local left=$(( END - 8 - $(el) )); [ $left -lt 20 ] && { echo "ops ^$l NOT-RUN"; continue; }
    local f='^'$l; [ $l = c ] && f='^c(?!onv)'
    timeout $left python3 bench/compare_ops.py --bin /tmp/bg/bench/tritium-bench --device cuda --rounds 1 --quick --filter "$f" --json $OUT/logs/ops_$l.json > $OUT/logs/ops_$l.txt 2>&1
    echo "ops ^$l rc=$? [$(el)] $(grep -i geomean $OUT/logs/ops_$l.txt | tail -1)"
  done
}
export -f ops el; export T0 END OUT
ops 0 "a b c" > $OUT/logs/ops0.txt 2>&1 &
ops 1 "d e f g h i k l n" > $OUT/logs/ops1.txt 2>&1 &
ops 2 "m p r s t u v w" > $OUT/logs/ops2.txt 2>&1 &
( export CUDA_VISIBLE_DEVICES=3 TRITIUM_CACHE_DIR=/tmp/kcache
  timeout 200 python3 bench/compare_ops.py --bin /tmp/bg/bench/tritium-bench --device cuda --rounds 1 --quick --filter '^conv2d' --dtypes bf16,f32 --json $OUT/logs/conv2d.json > $OUT/logs/conv2d.txt 2>&1
  echo "conv2d rc=$? [$(el)]"
  if command -v ncu >/dev/null; then
    M=gpu__time_duration.sum,dram__bytes_read.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,launch__registers_per_thread,launch__shared_mem_per_block_dynamic,launch__grid_size,launch__block_size,smsp__sass_inst_executed_op_global_ld.sum,smsp__sass_inst_executed_op_ldgsts.sum,smsp__inst_executed_pipe_tensor.sum
    timeout 150 ncu --clock-control none --profile-from-start off --metrics $M python3 bench/ncu_triton_conv.py > $OUT/logs/ncu_conv_triton.txt 2>&1; echo "ncu triton rc=$? [$(el)]"
    TRITIUM_CACHE_DIR=/tmp/kncu timeout 100 /tmp/bg/kernels/tritium-kernels --bench implicit_gemm_conv --backend cuda > $OUT/logs/conv_bench.txt 2>&1
    TRITIUM_CACHE_DIR=/tmp/kncu timeout 90 ncu --clock-control none --kernel-name regex:conv2d_forward --launch-count 2 --metrics $M /tmp/bg/kernels/tritium-kernels --bench implicit_gemm_conv --backend cuda > $OUT/logs/ncu_conv_ours.txt 2>&1; echo "ncu ours rc=$? [$(el)]"
  fi
  left=$(( END - 8 - $(el) )); [ $left -gt 60 ] && { timeout $left python3 bench/compare_kernels.py --bin /tmp/bg/kernels --kernels persistent_matmul --rounds 1 --timeout $left > $OUT/logs/persistent.txt 2>&1; echo "persistent rc=$? [$(el)]"; tail -8 $OUT/logs/persistent.txt; }
) > $OUT/logs/k3.txt 2>&1 &
wait
echo "== ops"; cat $OUT/logs/ops0.txt $OUT/logs/ops1.txt $OUT/logs/ops2.txt
echo "== conv, ncu, persistent"; cat $OUT/logs/k3.txt; grep -iE "geomean|below" $OUT/logs/conv2d.txt | tail -3
for f in ncu_conv_triton ncu_conv_ours; do echo "-- $f"; grep -E "kept config|conv2d_forward|gpu__time|dram__bytes|sectors|requests|warps_active|inst_executed|registers|shared_mem|grid_size|block_size" $OUT/logs/$f.txt | head -40; done
echo "end $(el)"
cd $OUT && tar czf logs.tgz logs && rm -rf logs
