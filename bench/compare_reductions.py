#!/usr/bin/env python3
"""Tutorials 02, 04 and 05 beside Triton and PyTorch on the GPU machine, in one run, with ratios.

Workloads (as issue 6 counts them):
  softmax f32, 4096 x {1024, 4096, 16384}: GB/s = 2 * M * N * 4 bytes
  layer norm f16 forward, 4096 x {1024, 4096, 8192}: GB/s = 2 * M * N * 2
  layer norm f16 backward (dx, dw, db), same shapes: GB/s = 3 * M * N * 2, timed as Triton's tutorial
  times it: `y.backward(dy)` through autograd with the gradients reset before each call (Triton's
  LayerNorm.apply, torch.nn.functional.layer_norm); a second row has Triton's kernels alone
  seeded dropout f32, 2^24 elements: GB/s = 2 * n * 4; and Triton's tl.rand bits for seeds 123
  and -7 over 1000003 offsets against Tritium's (a fingerprint the tutorial prints).
Tritium's figures come from the tutorials' `--bench --backend cuda` tables; Triton's kernels
(bench/triton_kernels.py) follow Triton's tutorials and are timed with triton.testing.do_bench (median), as is
PyTorch.

    python3 bench/compare_reductions.py --bin DIR [--rounds 3]   (DIR holds 02-fused-softmax, 04-..., 05-...)

The tutorial processes and the Triton / PyTorch timings alternate for --rounds rounds; the final
table gives medians and the spread of the per-round ratios to Triton.
"""
import argparse
import statistics
import os
import re
import subprocess
import sys

import torch
import triton

from triton_kernels import ln_bwd_dwdb, ln_bwd_dx, ln_fwd, rand_kernel, seeded_dropout_kernel, softmax_kernel


def triton_softmax(x):
    M, N = x.shape
    BLOCK = triton.next_power_of_2(N)
    warps = 16 if BLOCK >= 4096 else 8 if BLOCK >= 2048 else 4
    y = torch.empty_like(x)
    # A persistent grid as the tutorial sizes it (occupancy from the compiled kernel).
    kernel = softmax_kernel.warmup(y, x, x.stride(0), y.stride(0), M, N, BLOCK=BLOCK, STAGES=4,
                                   num_warps=warps, grid=(1,))
    kernel._init_handles()
    props = torch.cuda.get_device_properties(0)
    regs_per_sm = props.regs_per_multiprocessor if hasattr(props, "regs_per_multiprocessor") else 65536
    occupancy = max(1, regs_per_sm // max(1, kernel.n_regs * 32 * warps))
    occupancy = min(occupancy, (228 * 1024) // max(1, kernel.metadata.shared))
    programs = min(props.multi_processor_count * occupancy, M)
    return lambda: kernel[(programs, 1, 1)](y, x, x.stride(0), y.stride(0), M, N, BLOCK, 4), y


def triton_ln_forward(x, w, b, eps=1e-5):
    M, N = x.shape
    y = torch.empty_like(x)
    mean = torch.empty(M, dtype=torch.float32, device=x.device)
    rstd = torch.empty(M, dtype=torch.float32, device=x.device)
    BLOCK = min(65536 // x.element_size(), triton.next_power_of_2(N))
    warps = min(max(BLOCK // 256, 1), 8)
    run = lambda: ln_fwd[(M,)](x, y, w, b, mean, rstd, x.stride(0), N, eps, BLOCK=BLOCK, num_warps=warps)
    return run, (y, mean, rstd, BLOCK, warps)


def triton_ln_backward_kernels(dy, x, w, mean, rstd, BLOCK, warps):
    """The tutorial's backward body: buffers allocated inside, the two kernels; returns dx, dw, db."""
    M, N = x.shape
    GROUP = 64
    if N <= 8192: GROUP = 96
    if N <= 4096: GROUP = 128
    if N <= 1024: GROUP = 256
    locks = torch.zeros(2 * GROUP, dtype=torch.int32, device=x.device)
    pdw = torch.zeros((GROUP, N), dtype=x.dtype, device=x.device)
    pdb = torch.zeros((GROUP, N), dtype=x.dtype, device=x.device)
    dw = torch.empty((N,), dtype=w.dtype, device=w.device)
    db = torch.empty((N,), dtype=w.dtype, device=w.device)
    dx = torch.empty_like(dy)
    ln_bwd_dx[(M,)](dx, dy, pdw, pdb, x, w, mean, rstd, locks, x.stride(0), N, GROUP=GROUP, BLOCK=BLOCK,
                    num_warps=warps)
    grid = lambda meta: [triton.cdiv(N, meta["BLOCK_N"])]
    ln_bwd_dwdb[grid](pdw, pdb, dw, db, min(GROUP, M), N, BLOCK_M=32, BLOCK_N=128)
    return dx, dw, db


class TritonLayerNorm(torch.autograd.Function):
    """Triton's tutorial LayerNorm (LayerNorm.apply): what its backward benchmark times, through
    torch's autograd, as `y.backward(dy, retain_graph=True)`."""

    @staticmethod
    def forward(ctx, x, w, b, eps):
        run, (y, mean, rstd, BLOCK, warps) = triton_ln_forward(x, w, b, eps)
        run()
        ctx.save_for_backward(x, w, mean, rstd)
        ctx.BLOCK, ctx.warps = BLOCK, warps
        return y

    @staticmethod
    def backward(ctx, dy):
        x, w, mean, rstd = ctx.saved_tensors
        dx, dw, db = triton_ln_backward_kernels(dy, x, w, mean, rstd, ctx.BLOCK, ctx.warps)
        return dx, dw, db, None


# ---- Tritium's tables ------------------------------------------------------------------------------

def run_tutorial(path):
    r = subprocess.run([path, "--bench", "--backend", "cuda"], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"{os.path.basename(path)} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    for line in r.stdout.splitlines():  # diagnostics the tutorials print beside their tables
        if "stages:" in line:
            print(f"{os.path.basename(path)}: {line.strip()}")
    return r.returncode, r.stdout


def table_rows(text, ncols):
    rows = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == ncols and all(re.fullmatch(r"[0-9.]+", p) for p in parts):
            rows.append([float(p) for p in parts])
    return rows


def gbs(nbytes, ms):
    return nbytes / (ms * 1e-3) / 1e9


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True, help="directory holding the tutorials' binaries")
    ap.add_argument("--rounds", type=int, default=3,
                    help="alternations of the Tritium processes with Triton/PyTorch (the table gives medians)")
    args = ap.parse_args()
    ok = True
    bench = lambda f, grads=None: triton.testing.do_bench(f, grad_to_none=grads, return_mode="median")
    samples = {}  # workload -> [(ours, triton, torch) per round], in order of first appearance

    def row(name, ours, tri, tor):
        samples.setdefault(name, []).append((ours, tri, tor))  # one tuple per round: ratios pair within it
        o = f"{ours:9.1f}" if ours else f"{'-':>9s}"
        print(f"  {name:44s} {o} {tri:9.1f} {tor:9.1f}", flush=True)

    # Rounds: each tutorial process, then Triton and PyTorch here, again and again, so that both
    # sides see the same spread of clocks (single runs moved ratios by several percent).
    for r in range(args.rounds):
        print(f"round {r + 1} of {args.rounds}: {'workload':36s} {'Tritium':>9s} {'Triton':>9s} {'PyTorch':>9s}")
        ok &= measure(args, bench, row, check_bits=r == 0)

    med = lambda v: statistics.median(v) if v else None
    print(f"\nmedians of {args.rounds} round(s); [lo-hi] = the per-round ratios to Triton")
    print(f"{'workload':44s} {'Tritium':>9s} {'Triton':>9s} {'PyTorch':>9s} {'vs Triton':>10s} {'vs torch':>9s}"
          f" {'vs Triton per round':>20s}")
    for name, rounds in samples.items():
        ours, tri, tor = ([x[i] for x in rounds if x[i]] for i in range(3))
        o, t, p = med(ours), med(tri), med(tor)
        r1 = f"{o / t:10.3f}" if o and t else f"{'-':>10s}"
        r2 = f"{o / p:9.3f}" if o and p else f"{'-':>9s}"
        rs = [x[0] / x[1] for x in rounds if x[0] and x[1]]
        spread = f"{min(rs):.3f}-{max(rs):.3f}" if rs else "-"
        print(f"{name:44s} {o if o else float('nan'):9.1f} {t:9.1f} {p:9.1f} {r1} {r2} {spread:>20s}")
    return 0 if ok else 1


def measure(args, bench, row, check_bits):
    """One round: every workload once on each side; False when a tutorial or a check failed."""
    ok = True

    # Softmax.
    rc, out = run_tutorial(os.path.join(args.bin, "02-fused-softmax"))
    ok &= rc == 0
    ours = {int(r[1]): r[2] for r in table_rows(out, 3)}
    for N in (1024, 4096, 16384):
        M = 4096
        x = torch.randn(M, N, device="cuda")
        run, y = triton_softmax(x)
        run()
        assert torch.allclose(y, torch.softmax(x, dim=1), atol=1e-6)
        nb = 2 * M * N * 4
        row(f"softmax f32 {M}x{N} (GB/s)", ours.get(N), gbs(nb, bench(run)), gbs(nb, bench(lambda: torch.softmax(x, dim=1))))

    # Layer norm.
    rc, out = run_tutorial(os.path.join(args.bin, "05-layer-norm"))
    ok &= rc == 0
    ours = {int(r[0]): (r[1], r[2]) for r in table_rows(out, 3)}
    for N in (1024, 4096, 8192):
        M = 4096
        x = -2.3 + 0.5 * torch.randn(M, N, device="cuda", dtype=torch.float16)
        w = torch.rand(N, device="cuda", dtype=torch.float16)
        b = torch.rand(N, device="cuda", dtype=torch.float16)
        dy = 0.1 * torch.randn_like(x)
        fwd, (y, mean, rstd, BLOCK, warps) = triton_ln_forward(x, w, b)
        fwd()
        ref = torch.nn.functional.layer_norm(x, (N,), w, b, 1e-5)
        assert torch.allclose(y, ref, atol=1e-2), "triton layer norm forward"
        dx, dw, db = triton_ln_backward_kernels(dy, x, w, mean, rstd, BLOCK, warps)
        xr = x.clone().requires_grad_(True)
        wr = w.clone().requires_grad_(True)
        br = b.clone().requires_grad_(True)
        yr = torch.nn.functional.layer_norm(xr, (N,), wr, br, 1e-5)
        yr.backward(dy, retain_graph=True)  # the graph is kept for the timed backwards below
        assert torch.allclose(dx, xr.grad, atol=1e-2), "triton layer norm dx"
        xt = x.clone().requires_grad_(True)
        wt = w.clone().requires_grad_(True)
        bt = b.clone().requires_grad_(True)
        yt = TritonLayerNorm.apply(xt, wt, bt, 1e-5)
        torch_fwd = lambda: torch.nn.functional.layer_norm(x, (N,), w, b, 1e-5)
        # As Triton's tutorial times every provider's backward: through autograd, gradients reset
        # (grad_to_none) before each call so none accumulates.
        torch_bwd = lambda: yr.backward(dy, retain_graph=True)
        triton_bwd = lambda: yt.backward(dy, retain_graph=True)
        o = ours.get(N, (None, None))
        nb = 3 * M * N * 2
        row(f"layer norm fwd f16 {M}x{N} (GB/s)", o[0], gbs(2 * M * N * 2, bench(fwd)), gbs(2 * M * N * 2, bench(torch_fwd)))
        row(f"layer norm bwd f16 {M}x{N} (GB/s)", o[1], gbs(nb, bench(triton_bwd, [xt, wt, bt])),
            gbs(nb, bench(torch_bwd, [xr, wr, br])))
        # A stricter reference than the tutorial's: Triton's two kernels and buffers, no autograd.
        kernels = lambda: triton_ln_backward_kernels(dy, x, w, mean, rstd, BLOCK, warps)
        row(f"  (bwd, Triton kernels alone) {M}x{N}", o[1], gbs(nb, bench(kernels)), gbs(nb, bench(torch_bwd, [xr, wr, br])))

    # Dropout, and the random bits.
    rc, out = run_tutorial(os.path.join(args.bin, "04-low-memory-dropout"))
    ok &= rc == 0
    ours = {int(r[0]): r[1] for r in table_rows(out, 2)}
    n = 1 << 24
    x = torch.randn(n, device="cuda")
    y = torch.empty_like(x)
    drop = lambda: seeded_dropout_kernel[(triton.cdiv(n, 1024),)](x, y, n, 0.5, 123, BLOCK=1024)
    torch_drop = lambda: torch.nn.functional.dropout(x, 0.5, True)
    row("seeded dropout f32 2^24 (GB/s)", ours.get(n), gbs(2 * n * 4, bench(drop)), gbs(2 * n * 4, bench(torch_drop)))
    prints = dict(re.findall(r"rand bits fingerprint: seed (-?\d+) n \d+ fnv1a64 ([0-9a-f]+)", out))
    for seed in ((123, -7) if check_bits else ()):
        nn_ = 1000003
        u = torch.empty(nn_, device="cuda", dtype=torch.float32)
        rand_kernel[(triton.cdiv(nn_, 1024),)](u, nn_, seed, BLOCK=1024)
        data = u.cpu().numpy().tobytes()
        h = 0xcbf29ce484222325
        for byte in data:
            h = ((h ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
        same = prints.get(str(seed)) == f"{h:016x}"
        ok &= same
        print(f"tl.rand bits, seed {seed}, {nn_} offsets: Triton {h:016x}, Tritium {prints.get(str(seed), '-')}: "
              f"{'equal' if same else 'DIFFERENT'}")
    return ok


if __name__ == "__main__":
    sys.exit(main())
