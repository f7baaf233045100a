#!/usr/bin/env python3
"""Tritium beside Triton and PyTorch on the GPU machine, in one run, with ratios.

Workloads: vector add (float32, 2^24 and 2^27 elements; GB/s counting 3 arrays) and the host
overhead of a cached launch of an empty 4-argument kernel (microseconds per launch). Tritium's
figures come from `tritium-bench --device cuda --json` (same process layout: one warm kernel,
many launches); Triton's and PyTorch's are measured here with triton.testing.do_bench (CUDA
events, median).

    python3 bench/compare_gpu.py --build build-gpu
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def measure_reference():
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

    @triton.jit
    def empty_kernel(a, b, c, n):
        pass

    ref = {"vector_add": {}, "launch_overhead_us": {}}
    for e in (24, 27):
        n = 1 << e
        x = torch.rand(n, device="cuda")
        y = torch.rand(n, device="cuda")
        out = torch.empty_like(x)
        grid = lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)
        ms_triton = triton.testing.do_bench(lambda: add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024), return_mode="median")
        assert torch.allclose(out, x + y)
        ms_torch = triton.testing.do_bench(lambda: torch.add(x, y, out=out), return_mode="median")
        gbs = lambda ms: 3 * 4 * n / (ms * 1e-3) / 1e9
        ref["vector_add"][e] = {"triton": gbs(ms_triton), "torch": gbs(ms_torch)}

    a = torch.empty(16, device="cuda")
    empty_kernel[(1,)](a, a, a, 16)
    torch.cuda.synchronize()
    reps = 20000
    t0 = time.perf_counter()
    for _ in range(reps):
        empty_kernel[(1,)](a, a, a, 16)
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    ref["launch_overhead_us"]["triton"] = (t1 - t0) / reps * 1e6
    return ref


def measure_tritium(exe):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "tritium.json")
        r = subprocess.run([exe, "--device", "cuda", "--json", path], capture_output=True, text=True)
        if r.returncode != 0:
            print("tritium-bench --device cuda failed:\n" + r.stdout[-2000:] + r.stderr[-2000:])
            return None
        with open(path) as f:
            return json.load(f)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default="build-gpu")
    p.add_argument("--bench-exe", help="tritium-bench to run (default: BUILD/bench/tritium-bench)")
    args = p.parse_args()
    ref = measure_reference()
    ours = measure_tritium(args.bench_exe or os.path.join(args.build, "bench", "tritium-bench"))

    def ours_vadd(e):
        if not ours:
            return None
        for row in ours.get("vector_add", []):
            if row["elements"] == 1 << e:
                return row["tritium_gbs"]
        return None

    print(f"{'workload':34} {'Tritium':>10} {'Triton':>10} {'PyTorch':>10} {'vs Triton':>10}")
    for e in (24, 27):
        t = ours_vadd(e)
        tr, to = ref["vector_add"][e]["triton"], ref["vector_add"][e]["torch"]
        ratio = f"{t / tr:.3f}" if t else "n/a"
        print(f"{'vector add 2^%d f32 (GB/s)' % e:34} {t if t else float('nan'):10.1f} {tr:10.1f} {to:10.1f} {ratio:>10}")
    lo = ours.get("launch_overhead_grid1_us") if ours else None
    bare = ours.get("bare_launch_us") if ours else None
    tl_us = ref["launch_overhead_us"]["triton"]
    print(f"{'cached launch, empty kernel (us)':34} {lo if lo else float('nan'):10.2f} {tl_us:10.2f} {'':>10} "
          f"{(f'{lo / tl_us:.3f}' if lo else 'n/a'):>10}")
    if bare:
        print(f"{'bare cuLaunchKernel (us)':34} {bare:10.2f}   (Tritium / bare = {lo / bare:.2f}, target <= 1.5)")
    return 0 if ours else 1


if __name__ == "__main__":
    sys.exit(main())
