#!/usr/bin/env python3
"""A matmul written with pointer blocks and with block pointers, Tritium beside Triton, one run.

f16, M = N = K in --sizes, tutorial 03's first config (128 x 256 x 64, 8 warps, 3 stages, groups of
8) for all four kernels: Tritium's from `tritium-bench --block-ptr-matmul` (bench/block_ptr_matmul.cpp,
tritium::do_bench median), Triton's tutorial kernel (pointers) and bench/triton_kernels.py's
matmul_kernel_block_ptr, timed with triton.testing.do_bench (median). The Tritium process and the
Triton timings alternate for --rounds rounds; medians and ratios at the end.

    python3 bench/compare_block_ptr.py --bench BUILD/bench/tritium-bench [--sizes 4096,8192] [--rounds 3]
"""
import argparse
import statistics
import subprocess

import torch
import triton

from triton_kernels import matmul_kernel, matmul_kernel_block_ptr

CFG = dict(BLOCK_SIZE_M=128, BLOCK_SIZE_N=256, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, num_warps=8, num_stages=3)


def triton_runs(n):
    a = torch.randn(n, n, device="cuda", dtype=torch.float16)
    b = torch.randn(n, n, device="cuda", dtype=torch.float16)
    c1, c2 = torch.empty_like(a), torch.empty_like(a)
    grid = (triton.cdiv(n, 128) * triton.cdiv(n, 256),)
    ptrs = lambda: matmul_kernel[grid](a, b, c1, n, n, n, n, 1, n, 1, n, 1, ACTIVATION="", **CFG)
    bp = lambda: matmul_kernel_block_ptr[grid](a, b, c2, n, n, n, **CFG)
    ptrs(), bp()
    assert torch.equal(c1, c2), "Triton's two kernels disagree"
    return ptrs, bp


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True, help="the tritium-bench binary")
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    samples = {}
    for r in range(args.rounds):
        out = subprocess.run([args.bench, "--block-ptr-matmul", "--sizes", args.sizes, "--rounds", "1"],
                             capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            _, form, n, rate, _unit, _config = line.split()
            samples.setdefault(("tritium", form, int(n)), []).append(float(rate))
        for n in sizes:
            for form, fn in zip(("pointers", "block_ptr"), triton_runs(n)):
                ms = triton.testing.do_bench(fn, return_mode="median")
                samples.setdefault(("triton", form, n), []).append(2 * n ** 3 / (ms * 1e-3) / 1e12)
    print(f"{'size':>6s} {'form':10s} {'Tritium':>9s} {'Triton':>9s} {'ratio':>7s}   (TFLOP/s, medians of {args.rounds})")
    for n in sizes:
        for form in ("pointers", "block_ptr"):
            ours = statistics.median(samples[("tritium", form, n)])
            theirs = statistics.median(samples[("triton", form, n)])
            print(f"{n:6d} {form:10s} {ours:9.1f} {theirs:9.1f} {ours / theirs:7.3f}")


if __name__ == "__main__":
    main()
