#!/usr/bin/env python3
"""Tutorial 03 (matrix multiplication) beside Triton and cuBLAS on the GPU machine, in one run.

Workload: C = A @ B for square M = N = K in {256, 512, 1024, 2048, 4096, 8192}, A and B random
normal in f16 (and bf16, and fp8 e4m3), C in f16 (Triton's tutorial kernel always writes f16;
cuBLAS writes the input dtype, f16 for fp8). fp8 as in Triton's tutorial: B = B.T before the
conversion, so B is K-major. TFLOP/s = 2 * M * N * K / time.

  Tritium  the tutorial's own table: `03-matrix-multiplication --bench --backend cuda` (its
           autotuner over Triton's get_cuda_autotune_config(), tritium::do_bench median).
  Triton   the tutorial's kernel (bench/triton_kernels.py) with the same @triton.autotune configs and
           key, through the tutorial's matmul() wrapper; triton.testing.do_bench median.
  cuBLAS   torch.matmul(a, b), same timer; fp8: torch._scaled_mm(a, b, scale 1, scale 1, out f16).

Both timers flush the L2 cache between repetitions and time matmul() as a whole (the output is
allocated inside, as in Triton's tutorial benchmark); autotuning happens before timing. The
Tritium process and the Triton / cuBLAS timings alternate for --rounds rounds; the table gives
medians and the spread of the per-round ratios.

    python3 bench/compare_matmul.py --bin BUILD/tutorials        (a directory holding the binary)
    python3 bench/compare_matmul.py --bin BUILD/tutorials/03-matrix-multiplication
    options: --dtypes f16,bf16,f8e4m3  --sizes 256,512,...  --rounds 3  --timeout SECONDS
"""
import argparse
import math
import os
import re
import statistics
import subprocess
import sys

import torch
import triton

from triton_kernels import get_cuda_autotune_config, matmul_kernel as tutorial_matmul_kernel

BINARY = "03-matrix-multiplication"
DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f8e4m3": torch.float8_e4m3fn}
TABLE_COLUMNS = ["f16", "bf16", "f8e4m3"]  # the tutorial's CUDA table, in order


def inputs(n, d):
    """A, B as the benchmarks use them: fp8 B is the transpose of a row-major matrix (K-major)."""
    a = torch.randn((n, n), device="cuda", dtype=torch.float16).to(DTYPES[d])
    b = torch.randn((n, n), device="cuda", dtype=torch.float16)
    b = b.T.to(DTYPES[d]) if d.startswith("f8") else b.to(DTYPES[d])
    return a, b


def cublas(a, b):
    if a.dtype == torch.float8_e4m3fn:
        one = torch.ones((), device="cuda", dtype=torch.float32)
        return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.float16)
    return torch.matmul(a, b)


# ---- Triton's tutorial kernel (python/tutorials/03-matrix-multiplication.py, Triton 3.6) ----------

matmul_kernel = triton.autotune(configs=get_cuda_autotune_config(), key=["M", "N", "K"])(tutorial_matmul_kernel)

def triton_matmul(a, b, activation=""):
    assert a.shape[1] == b.shape[0], "Incompatible dimensions"
    assert a.is_contiguous(), "Matrix A must be contiguous"
    M, K = a.shape
    K, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=torch.float16)
    grid = lambda META: (triton.cdiv(M, META["BLOCK_SIZE_M"]) * triton.cdiv(N, META["BLOCK_SIZE_N"]), )
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                        c.stride(1), ACTIVATION=activation)
    return c


# ---- Tritium's table --------------------------------------------------------------------------------

# A row of the tutorial's CUDA table: "M N K f16-TFLOP/s bf16-TFLOP/s e4m3-TFLOP/s [tuned config ...]".
NUMBER = r"(?:[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|nan|inf)"
ROW = re.compile(rf"^\s*(\d+)\s+(\d+)\s+(\d+)\s+({NUMBER})\s+({NUMBER})\s+({NUMBER})(?:\s+(.*?))?\s*$", re.IGNORECASE)


def parse_tritium_table(text):
    """{(n, dtype): (tflops, config)} from the tutorial's output; other lines are ignored."""
    rows = {}
    for line in text.splitlines():
        m = ROW.match(line)
        if not m or not (m.group(1) == m.group(2) == m.group(3)):
            continue
        n, config = int(m.group(1)), (m.group(7) or "").strip()
        for i, d in enumerate(TABLE_COLUMNS):
            rows[(n, d)] = (float(m.group(4 + i)), config if i == 0 else "")
    return rows


def run_tritium(path, timeout, sizes, show_checks=True):
    """Runs the tutorial (its self-check, then --bench over the same sizes); returns (ok, rows)."""
    cmd = [path, "--bench", "--backend", "cuda", "--sizes", ",".join(str(n) for n in sizes)]
    print(f"running {' '.join(cmd)}", flush=True)
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        print(f"{BINARY} timed out after {timeout} s; rows printed so far are used\n{out[-3000:]}")
        return False, parse_tritium_table(out)
    if r.returncode != 0:
        print(f"{BINARY} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    elif show_checks:  # the self-check lines, so the log shows what was verified
        for line in r.stdout.splitlines():
            if line.startswith("matmul"):
                print("  " + line)
    return r.returncode == 0, parse_tritium_table(r.stdout)


# ---- main -------------------------------------------------------------------------------------------

def tflops(n, ms):
    return 2 * n * n * n * 1e-12 / (ms * 1e-3)


def fmt(x, width, digits=1):
    return f"{x:{width}.{digits}f}" if x is not None and math.isfinite(x) else f"{'-':>{width}s}"


def ratio(x, y):
    return x / y if x is not None and y and math.isfinite(x) and math.isfinite(y) else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help=f"the {BINARY} binary, or a directory holding it")
    ap.add_argument("--dtypes", default="f16,bf16,f8e4m3", help="comma-separated: f16, bf16, f8e4m3")
    ap.add_argument("--sizes", default="256,512,1024,2048,4096,8192", help="M = N = K values (all three: Tritium, Triton, cuBLAS)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds allowed to the Tritium binary")
    ap.add_argument("--rounds", type=int, default=3, help="alternations of the Tritium process and Triton/cuBLAS")
    args = ap.parse_args()
    path = os.path.join(args.bin, BINARY) if os.path.isdir(args.bin) else args.bin
    dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    for d in dtypes:
        if d not in DTYPES:
            ap.error(f"unknown dtype {d!r} (use f16, bf16 or f8e4m3)")
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]

    print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, triton {triton.__version__}")
    # Triton's unit test: its kernel against cuBLAS at 512^3.
    ok = True
    torch.manual_seed(0)
    for d in dtypes:
        a, b = inputs(512, d)
        out = triton_matmul(a, b).float()
        if d == "f16":  # the tutorial's test
            same = torch.allclose(out, torch.matmul(a, b).float(), atol=1e-2, rtol=0)
        else:  # cuBLAS rounds to bf16, Triton to f16: so compare with an f32 product instead
            atol = 1e-1 if d.startswith("f8") else 1e-2  # fp8 tensor cores add with ~14 bits
            same = torch.allclose(out, torch.matmul(a.float(), b.float()), atol=atol, rtol=1e-2)
            same &= torch.allclose(cublas(a, b).float(), torch.matmul(a.float(), b.float()), atol=atol, rtol=1e-2)
        print(f"Triton's kernel vs torch.matmul, 512^3 {d}: {'match' if same else 'DIFFER'}")
        ok &= same

    # Rounds: the Tritium process, then Triton and cuBLAS in this one, again and again, so that
    # each side sees the same spread of clocks and temperatures (one round apiece moved a ratio by
    # up to 15 % between runs); the table reports medians over the rounds.
    quantiles = [0.5, 0.2, 0.8]  # as the tutorial; the median is reported
    bench = lambda f: triton.testing.do_bench(f, quantiles=quantiles)[0]
    samples = {}  # (d, n) -> [(Tritium, Triton, cuBLAS) per round]
    configs = {}
    for r in range(args.rounds):
        print(f"\nround {r + 1} of {args.rounds}", flush=True)
        good, ours = run_tritium(path, args.timeout, sizes, show_checks=r == 0)
        ok &= good
        if not ours:
            print("no rows parsed from the Tritium table")
            ok = False
        for d in dtypes:
            for n in sizes:
                a, b = inputs(n, d)
                tri = tflops(n, bench(lambda: triton_matmul(a, b)))  # the first call autotunes
                cub = tflops(n, bench(lambda: cublas(a, b)))
                mine, my_config = ours.get((n, d), (None, ""))
                tri_config = str(matmul_kernel.best_config) if getattr(matmul_kernel, "best_config", None) else "-"
                configs[(d, n)] = (my_config or configs.get((d, n), ("-", ""))[0], tri_config)
                ok_value = lambda v: v if v is not None and math.isfinite(v) else None
                samples.setdefault((d, n), []).append((ok_value(mine), ok_value(tri), ok_value(cub)))
                print(f"  {d:>5s} {n:6d}  Tritium {fmt(mine, 7)}  Triton {fmt(tri, 7)}  cuBLAS {fmt(cub, 7)}", flush=True)
                del a, b
                torch.cuda.empty_cache()

    med = lambda v: statistics.median(v) if v else None
    print(f"\nTFLOP/s, M = N = K, medians of {args.rounds} round(s); C in f16 for Tritium and Triton, in the input"
          f" dtype for cuBLAS; [lo-hi] = the per-round ratios")
    print(f"{'dtype':>5s} {'N':>6s} {'Tritium':>9s} {'Triton':>9s} {'cuBLAS':>9s} {'T/Triton':>9s} {'T/cuBLAS':>9s}"
          f" {'Triton/cuBLAS':>14s}  {'T/Triton per round':>20s} {'T/cuBLAS per round':>20s}  Tritium config | Triton config")
    for (d, n), rounds in samples.items():
        mine, tri, cub = (med([x[i] for x in rounds if x[i]]) for i in range(3))
        def spread(i, j):  # the ratio within each round, side i over side j
            rs = [x[i] / x[j] for x in rounds if x[i] and x[j]]
            return f"{min(rs):.3f}-{max(rs):.3f}" if rs else "-"
        print(f"{d:>5s} {n:6d} {fmt(mine, 9)} {fmt(tri, 9)} {fmt(cub, 9)} {fmt(ratio(mine, tri), 9, 3)}"
              f" {fmt(ratio(mine, cub), 9, 3)} {fmt(ratio(tri, cub), 14, 3)}  {spread(0, 1):>20s}"
              f" {spread(0, 2):>20s}  {configs[(d, n)][0] or '-'} | {configs[(d, n)][1]}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
