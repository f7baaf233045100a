#!/usr/bin/env python3
"""Tutorial 06 (fused attention) beside Triton's tutorial 06 and torch's SDPA on the GPU machine.

Workload: Triton's perf_report - BATCH 4, 32 heads, head dim 64 and 128, N_CTX in 1024 ... 16384,
q, k, v random normal; forward causal and not, backward causal (as Triton benchmarks it); f16 and
bf16. TFLOP/s = 4 * BATCH * H * N_CTX^2 * HEAD_DIM (halved when causal, times 2.5 backward) / time.

  Tritium  the tutorial's own table: `06-fused-attention --bench --backend cuda` (its autotuner
           over Triton's configs, tritium::do_bench median).
  Triton   bench/triton_attention.py (the tutorial's kernels and autograd wrapper, host tensor
           descriptors on Hopper); triton.testing.do_bench median.
  torch    torch.nn.functional.scaled_dot_product_attention with the flash backend, same timer.

The Tritium process and the Triton / torch timings alternate for --rounds rounds; the table gives
medians and the per-round ratios.

    python3 bench/compare_attention.py --bin BUILD/tutorials [--sizes 1024,4096,16384] [--dims 64,128]
        [--dtypes f16,bf16] [--modes fwd,bwd] [--rounds 3]
"""
import argparse
import math
import os
import re
import statistics
import subprocess

import torch
import triton
from torch.nn.attention import SDPBackend, sdpa_kernel

from triton_attention import attention as triton_attention

BINARY = "06-fused-attention"
DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16}
ROW = re.compile(r"^\s*(fwd|bwd)\s+(\d+)\s+(\d+)\s+(f16|bf16)\s+(true|false)\s+([0-9.eE+-]+|nan)\s+([0-9.eE+-]+|nan|inf)(?:\s+(.*?))?\s*$")


def flops(batch, heads, n, d, causal, mode):
    f = 4.0 * batch * heads * n * n * d
    if causal:
        f *= 0.5
    if mode == "bwd":
        f *= 2.5
    return f


def run_tritium(path, args, show_checks):
    cmd = [path, "--bench", "--backend", "cuda", "--sizes", args.sizes]
    print("running " + " ".join(cmd), flush=True)
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
        out, ok = r.stdout, r.returncode == 0
        if not ok:
            print(f"{BINARY} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        print(f"{BINARY} timed out after {args.timeout} s; rows printed so far are used")
        ok = False
    rows = {}
    for line in out.splitlines():
        if show_checks and line.startswith("attention"):
            print("  " + line)
        m = ROW.match(line)
        if m:
            key = (m.group(1), int(m.group(2)), int(m.group(3)), m.group(4), m.group(5) == "true")
            rows[key] = (float(m.group(7)), m.group(8) or "")
    return ok, rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--sizes", default="1024,2048,4096,8192,16384")
    ap.add_argument("--dims", default="64,128")
    ap.add_argument("--dtypes", default="f16,bf16")
    ap.add_argument("--modes", default="fwd,bwd")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=1800)
    args = ap.parse_args()
    path = os.path.join(args.bin, BINARY) if os.path.isdir(args.bin) else args.bin
    sizes = [int(s) for s in args.sizes.split(",")]
    dims = [int(s) for s in args.dims.split(",")]
    dtypes = args.dtypes.split(",")
    modes = args.modes.split(",")
    BATCH, H = 4, 32
    print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, triton {triton.__version__}")

    # Triton's test_op for its kernels (against torch in f16), so the reference is right.
    torch.manual_seed(20)
    q, k, v = (torch.empty((1, 2, 1024, 64), dtype=torch.float16, device="cuda").normal_(0.0, 0.5).requires_grad_()
               for _ in range(3))
    dout = torch.randn_like(q)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.5)
    ref.backward(dout)
    grads = [t.grad.clone() for t in (q, k, v)]
    for t in (q, k, v):
        t.grad = None
    tri = triton_attention(q, k, v, True, 0.5)
    tri.backward(dout)
    ok = torch.allclose(ref, tri, atol=1e-2, rtol=0) and all(
        torch.allclose(g, t.grad, atol=1e-2, rtol=0) for g, t in zip(grads, (q, k, v)))
    print(f"Triton's kernels vs torch SDPA (1, 2, 1024, 64, causal, f16): {'match' if ok else 'DIFFER'}")

    bench = lambda f: triton.testing.do_bench(f, quantiles=[0.5, 0.2, 0.8])[0]
    samples = {}
    for r in range(args.rounds):
        print(f"\nround {r + 1} of {args.rounds}", flush=True)
        good, ours = run_tritium(path, args, show_checks=r == 0)
        ok &= good
        for d in dims:
            for mode in modes:
                for causal in (True, False):
                    if mode == "bwd" and not causal:
                        continue
                    for dt in dtypes:
                        for n in sizes:
                            shape = (BATCH, H, n, d)
                            q, k, v = (torch.randn(shape, dtype=DTYPES[dt], device="cuda", requires_grad=mode == "bwd")
                                       for _ in range(3))
                            sm_scale = 1.3
                            f = flops(BATCH, H, n, d, causal, mode)
                            res = []
                            for fn in (lambda: triton_attention(q, k, v, causal, sm_scale),
                                       lambda: torch.nn.functional.scaled_dot_product_attention(
                                           q, k, v, is_causal=causal, scale=sm_scale)):
                                try:
                                    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                                        if mode == "fwd":
                                            with torch.no_grad():
                                                ms = bench(fn)
                                        else:
                                            o = fn()
                                            do = torch.randn_like(o)
                                            ms = bench(lambda: o.backward(do, retain_graph=True))
                                    res.append(f * 1e-12 / (ms * 1e-3))
                                except Exception as e:  # noqa: BLE001 - reported, the row goes on
                                    print(f"  {mode} {n} {d} {dt}: {type(e).__name__}: {str(e)[:200]}")
                                    res.append(None)
                            mine, cfg = ours.get((mode, n, d, dt, causal), (None, ""))
                            samples.setdefault((mode, d, causal, dt, n), []).append((mine, res[0], res[1], cfg))
                            fmt = lambda x: f"{x:7.1f}" if x else "      -"
                            print(f"  {mode} D={d:3d} {'causal' if causal else 'full  '} {dt:4s} N={n:6d}  Tritium "
                                  f"{fmt(mine)}  Triton {fmt(res[0])}  torch {fmt(res[1])}", flush=True)
                            del q, k, v
                            torch.cuda.empty_cache()
    med = lambda v: statistics.median(v) if v else None
    print(f"\nTFLOP/s, BATCH {BATCH}, {H} heads, medians of {args.rounds} round(s); [lo-hi] = per-round ratios")
    print(f"{'mode':4s} {'D':>4s} {'causal':>6s} {'dtype':>5s} {'N':>6s} {'Tritium':>8s} {'Triton':>8s} {'torch':>8s}"
          f" {'T/Triton':>9s} {'T/torch':>8s}  {'per round T/Triton':>18s} {'T/torch':>12s}  Tritium config")
    for (mode, d, causal, dt, n), rounds in samples.items():
        vals = [med([x[i] for x in rounds if x[i]]) for i in range(3)]
        def spread(i, j):
            rs = [x[i] / x[j] for x in rounds if x[i] and x[j]]
            return f"{min(rs):.3f}-{max(rs):.3f}" if rs else "-"
        ratio = lambda a, b: f"{a / b:9.3f}" if a and b else f"{'-':>9s}"
        fmt = lambda x: f"{x:8.1f}" if x else f"{'-':>8s}"
        print(f"{mode:4s} {d:4d} {str(causal):>6s} {dt:>5s} {n:6d} {fmt(vals[0])} {fmt(vals[1])} {fmt(vals[2])}"
              f" {ratio(vals[0], vals[1])} {ratio(vals[0], vals[2])[1:]}  {spread(0, 1):>18s} {spread(0, 2):>12s}"
              f"  {rounds[-1][3]}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
