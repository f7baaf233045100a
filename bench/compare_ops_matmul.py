#!/usr/bin/env python3
"""The op library's matmul (ops::matmul, autotuned per shape) beside cuBLAS through torch.matmul,
in one run, with ratios. Square problems; f16, bf16, f32 (exact: torch with allow_tf32 off,
Tritium's default "highest") and tf32 (torch allow_tf32 on, Tritium's
set_float32_matmul_precision("high")). TFLOP/s = 2 N^3 / median time (triton.testing.do_bench
for torch; Tritium's do_bench, the same method, for ours).

    python3 bench/compare_ops_matmul.py --bench build-gpu/bench/tritium-bench [--sizes 1024,2048,4096]
    python3 bench/compare_ops_matmul.py --bench ... --linear 16384,384,1536   # a Linear layer's 3 products
    python3 bench/compare_ops_matmul.py --bench ... --linear 16384,384,1536 --split-k 0,1,2,4,8
        # the same, once per TRITIUM_MATMUL_SPLIT_K value (0: the heuristic, 1: no split), column S
        # the split each product took
"""
import argparse
import os
import subprocess
import sys


def torch_tflops(dtype, n):
    import torch
    import triton

    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    tdt = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "tf32": torch.float32}[dtype]
    a = torch.randn((n, n), device="cuda", dtype=tdt)
    b = torch.randn((n, n), device="cuda", dtype=tdt)
    ms = triton.testing.do_bench(lambda: torch.matmul(a, b), return_mode="median")
    return 2 * n ** 3 / (ms * 1e-3) / 1e12


def torch_linear_tflops(dtype, m, k, n):
    import torch
    import triton

    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    tdt = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "tf32": torch.float32}[dtype]
    x = torch.randn((m, k), device="cuda", dtype=tdt)
    w = torch.randn((n, k), device="cuda", dtype=tdt)
    dy = torch.randn((m, n), device="cuda", dtype=tdt)
    out = {}
    for name, a, b in (("fwd", x, w.t()), ("dgrad", dy, w), ("wgrad", dy.t(), x)):
        ms = triton.testing.do_bench(lambda: torch.matmul(a, b), return_mode="median")
        out[name] = 2 * m * n * k / (ms * 1e-3) / 1e12
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", required=True, help="the tritium-bench binary")
    ap.add_argument("--sizes", default="1024,2048,4096")
    ap.add_argument("--dtypes", default="f16,bf16,f32,tf32")
    ap.add_argument("--timeout", type=float, default=400)
    ap.add_argument("--linear", default="", help="M,K,N: a Linear layer's three products instead of squares")
    ap.add_argument("--split-k", default="", help="with --linear: TRITIUM_MATMUL_SPLIT_K values to run, e.g. 0,1,4")
    args = ap.parse_args()
    if not os.path.exists(args.bench):
        sys.exit(f"no such binary: {args.bench}")
    extra = ["--linear", args.linear] if args.linear else []

    def run_bench(split_k):
        env = dict(os.environ)
        if split_k is not None:
            env["TRITIUM_MATMUL_SPLIT_K"] = split_k
        run = subprocess.run([args.bench, "--ops-matmul", "--device", "cuda", "--sizes", args.sizes,
                              "--dtypes", args.dtypes] + extra, capture_output=True, text=True,
                             timeout=args.timeout, env=env)
        if run.returncode != 0:
            print(run.stdout + run.stderr)
            sys.exit(f"tritium-bench --ops-matmul failed ({run.returncode})")
        ours = {}
        for line in run.stdout.splitlines():
            parts = line.split()
            if len(parts) == 4 and parts[0] == "ops-matmul":
                ours[(parts[1], int(parts[2]))] = float(parts[3])
            if len(parts) == 8 and parts[0] == "ops-linear":
                ours[(parts[1], parts[2])] = (float(parts[6]), int(parts[7]))
        return ours

    if args.linear:
        m, k, n = (int(v) for v in args.linear.split(","))
        splits = args.split_k.split(",") if args.split_k else [None]
        runs = [(s, run_bench(s)) for s in splits]
        print(f"Linear M={m} K={k} N={n}: TFLOP/s, ops::matmul vs torch.matmul on the same views "
              f"(S: the K splits taken; TRITIUM_MATMUL_SPLIT_K in brackets)")
        print(f"{'dtype':>5s} {'prod':>6s} {'env':>5s} {'S':>3s} {'Tritium':>9s} {'cuBLAS':>9s} {'ratio':>7s}")
        for d in args.dtypes.split(","):
            ref = torch_linear_tflops(d, m, k, n)
            for name in ("fwd", "dgrad", "wgrad"):
                for s, ours in runs:
                    t, used = ours.get((d, name), (float("nan"), 0))
                    env = "-" if s is None else s
                    print(f"{d:>5s} {name:>6s} {env:>5s} {used:3d} {t:9.1f} {ref[name]:9.1f} {t / ref[name]:7.3f}")
        return
    ours = run_bench(None)
    print(f"{'dtype':>5s} {'N':>6s} {'Tritium':>9s} {'cuBLAS':>9s} {'ratio':>7s}   (TFLOP/s, ops::matmul vs torch.matmul)")
    for d in args.dtypes.split(","):
        for n in (int(s) for s in args.sizes.split(",")):
            t = ours.get((d, n))
            ref = torch_tflops(d, n)
            print(f"{d:>5s} {n:6d} {t if t else float('nan'):9.1f} {ref:9.1f} {(t / ref) if t else float('nan'):7.3f}")


if __name__ == "__main__":
    main()
