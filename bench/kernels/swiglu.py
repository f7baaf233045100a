"""Liger-Kernel's SwiGLU kernels beside kernels/swiglu.cpp.

The original, loaded from its upstream file (bench/kernels/_upstream.py says where; Liger's helpers
through _liger.py): linkedin/Liger-Kernel src/liger_kernel/ops/swiglu.py at ead96b618e5c: silu,
_swiglu_forward_kernel, _swiglu_backward_kernel (and the Blackwell tiled pair the wrappers pick on
Blackwell), swiglu_forward and swiglu_backward. check() runs both against float64; bench() times
each wrapper on benchmark_swiglu.py's default model (llama_3_8b, intermediate 14336, bf16) over the
token sweep, GB/s from the bytes the kernels move.
"""
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _liger  # noqa: E402

NAME = "swiglu"
UPSTREAM = [_liger.ops_file("swiglu")]


def _original():
    return _liger.load("swiglu", ["_SWIGLU_TILE", "_SWIGLU_TILE_MIN_BLOCK", "_should_tile", "_swiglu_tile_settings",
                                  "silu", "_swiglu_forward_kernel", "_swiglu_backward_kernel",
                                  "_swiglu_forward_kernel_tiled", "_swiglu_backward_kernel_tiled", "swiglu_forward",
                                  "swiglu_backward"])


def check() -> bool:
    ns = _original()
    torch.manual_seed(0)
    ok = True
    for rows, cols, dtype, g in [(37, 300, torch.float32, 1.0), (13, 1100, torch.float32, 0.7), (29, 300, torch.bfloat16, 1.3)]:
        a = (torch.randn(rows, cols, device="cuda") * 2).to(dtype)
        b = torch.randn(rows, cols, device="cuda").to(dtype)
        dc = torch.randn(rows, cols, device="cuda").to(dtype)
        x = a.double() * g
        silu = x * torch.sigmoid(x)
        ref_c, ref_db = silu * b.double(), dc.double() * silu
        ref_da = dc.double() * (silu * (1 - torch.sigmoid(x)) + torch.sigmoid(x)) * b.double() * g
        _, _, c = ns["swiglu_forward"](a, b, g)
        da, db = ns["swiglu_backward"](a, b, dc, g)
        bound = 1e-2 if dtype == torch.bfloat16 else 1e-5
        for what, got, ref in (("c", c, ref_c), ("da", da, ref_da), ("db", db, ref_db)):
            rel = ((got.double() - ref).norm() / ref.norm()).item()
            good = rel <= bound and bool(torch.isfinite(got).all())
            print(f"{NAME} (Triton) {what} {rows}x{cols} {dtype} g={g}: rel err {rel:.2e} {'OK' if good else 'FAILED'}")
            ok = ok and good
    return ok


def bench() -> list:
    ns = _original()
    rows = []
    I = 14336
    for T in (1024, 2048, 4096, 8192, 16384):
        a, b, dc = (torch.randn(T, I, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        nbytes = T * I * 2
        ms = triton.testing.do_bench(lambda: ns["swiglu_forward"](a, b), return_mode="median")
        rows.append({"shape": f"fwd T={T} I={I} bf16", "ms": ms, "rate": _liger.gbps(3 * nbytes, ms), "unit": "GB/s"})
        ms = triton.testing.do_bench(lambda: ns["swiglu_backward"](a, b, dc), return_mode="median")
        rows.append({"shape": f"bwd T={T} I={I} bf16", "ms": ms, "rate": _liger.gbps(5 * nbytes, ms), "unit": "GB/s"})
    return rows


if __name__ == "__main__":
    ok = check()
    for r in bench():
        print(f"bench {NAME} | {r['shape']} | {r['ms']:.4f} | {r['rate']:.2f} {r['unit']}")
    raise SystemExit(0 if ok else 1)
