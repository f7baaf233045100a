"""Liger-Kernel's GEGLU kernels (tanh approximation) beside kernels/geglu.cpp.

The original, loaded from its upstream file (bench/kernels/_upstream.py says where; Liger's helpers
through _liger.py): linkedin/Liger-Kernel src/liger_kernel/ops/geglu.py at ead96b618e5c:
_geglu_tanh_forward_kernel, _geglu_tanh_backward_kernel, geglu_forward and geglu_backward, with
libdevice's tanh imported as the file imports it. check() runs both against float64; bench() times
each wrapper on benchmark_geglu.py's default model (llama_3_8b, intermediate 14336, bf16) over the
token sweep, GB/s from the bytes the kernels move.
"""
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _liger  # noqa: E402

NAME = "geglu"
UPSTREAM = [_liger.ops_file("geglu")]


def _original():
    try:
        from triton.language.extra.libdevice import tanh
    except ModuleNotFoundError:
        from triton.language.extra.cuda.libdevice import tanh
    return _liger.load("geglu", ["_geglu_tanh_forward_kernel", "_geglu_tanh_backward_kernel", "geglu_forward",
                                 "geglu_backward"], extra={"tanh": tanh})


def check() -> bool:
    ns = _original()
    torch.manual_seed(0)
    ok = True
    for rows, cols, dtype in [(37, 300, torch.float32), (13, 1100, torch.float32), (29, 300, torch.bfloat16)]:
        a = (torch.randn(rows, cols, device="cuda") * 2).to(dtype)
        b = torch.randn(rows, cols, device="cuda").to(dtype)
        dc = torch.randn(rows, cols, device="cuda").to(dtype)
        x, k = a.double(), (2 / torch.pi) ** 0.5
        t = torch.tanh(k * (x + 0.044715 * x ** 3))
        gelu = 0.5 * x * (1 + t)
        ref_c, ref_db = gelu * b.double(), dc.double() * gelu
        ref_da = dc.double() * b.double() * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x))
        _, _, c = ns["geglu_forward"](a, b)
        da, db = ns["geglu_backward"](a, b, dc)
        bound = 1e-2 if dtype == torch.bfloat16 else 1e-5
        for what, got, ref in (("c", c, ref_c), ("da", da, ref_da), ("db", db, ref_db)):
            rel = ((got.double() - ref).norm() / ref.norm()).item()
            good = rel <= bound and bool(torch.isfinite(got).all())
            print(f"{NAME} (Triton) {what} {rows}x{cols} {dtype}: rel err {rel:.2e} {'OK' if good else 'FAILED'}")
            ok = ok and good
    return ok


def bench() -> list:
    ns = _original()
    rows = []
    I = 14336
    for T in (1024, 2048, 4096, 8192, 16384):
        a, b, dc = (torch.randn(T, I, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        nbytes = T * I * 2
        ms = triton.testing.do_bench(lambda: ns["geglu_forward"](a, b), return_mode="median")
        rows.append({"shape": f"fwd T={T} I={I} bf16", "ms": ms, "rate": _liger.gbps(3 * nbytes, ms), "unit": "GB/s"})
        ms = triton.testing.do_bench(lambda: ns["geglu_backward"](a, b, dc), return_mode="median")
        rows.append({"shape": f"bwd T={T} I={I} bf16", "ms": ms, "rate": _liger.gbps(5 * nbytes, ms), "unit": "GB/s"})
    return rows


if __name__ == "__main__":
    ok = check()
    for r in bench():
        print(f"bench {NAME} | {r['shape']} | {r['ms']:.4f} | {r['rate']:.2f} {r['unit']}")
    raise SystemExit(0 if ok else 1)
