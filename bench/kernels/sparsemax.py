"""Liger-Kernel's sparsemax beside kernels/sparsemax.cpp.

The original, loaded from its upstream file (bench/kernels/_upstream.py says where; Liger's helpers
through _liger.py): linkedin/Liger-Kernel src/liger_kernel/ops/sparsemax.py at ead96b618e5c:
_sparsemax_forward_kernel, _sparsemax_backward_kernel, _sparsemax_forward (its torch.sort of the
rows included) and _sparsemax_backward. check() runs both against float64 (rows under a block,
sparsemax over a middle dim, f32, bf16 and f16); bench() times the forward and the backward on
benchmark_sparsemax.py's default model (llama_3_8b: hidden 4096, bf16, dim -1) over the BT sweep,
GB/s from the bytes the kernels move (the port's count: forward x read twice, the f32 sorted copy
written and read, y written; backward y and grad_out read twice, dx written).
"""
import os
import sys

import typing

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _liger  # noqa: E402

NAME = "sparsemax"
UPSTREAM = [_liger.ops_file("sparsemax")]


def _original():
    return _liger.load("sparsemax", ["_sparsemax_forward_kernel", "_sparsemax_backward_kernel", "_sparsemax_forward",
                                     "_sparsemax_backward"], extra={"Tuple": typing.Tuple})  # its annotations


def _reference(x, dim):
    """sparsemax by its definition in float64, along dim."""
    x = x.double().transpose(dim, -1)
    z = torch.sort(x, dim=-1, descending=True).values
    k = torch.arange(1, x.shape[-1] + 1, device=x.device, dtype=torch.float64)
    cs = z.cumsum(-1)
    support = 1 + k * z > cs
    kk = support.sum(-1, keepdim=True).clamp(min=1)
    tau = ((z * support).sum(-1, keepdim=True) - 1) / kk
    return (x - tau).clamp(min=0).transpose(dim, -1)


def check() -> bool:
    ns = _original()
    torch.manual_seed(0)
    ok = True
    for shape, dim, dtype in [((9, 100), -1, torch.float32), ((5, 7), -1, torch.float32), ((3, 100, 6), 1, torch.float32),
                              ((6, 120), -1, torch.bfloat16), ((100, 4), 0, torch.float16)]:
        x = (torch.randn(shape, device="cuda") * 1.5).to(dtype)
        go = torch.randn(shape, device="cuda").to(dtype)
        y, out_flat = ns["_sparsemax_forward"](x, dim)
        dx = ns["_sparsemax_backward"](go, out_flat, dim % x.dim())
        ref_y = _reference(x, dim % x.dim())
        # the backward of the forward's own output: go - mean(go over the support), on the support
        supp = y.double() > 0
        g = go.double()
        mean = (g * supp).sum(dim, keepdim=True) / supp.sum(dim, keepdim=True).clamp(min=1e-6)
        ref_dx = torch.where(supp, g - mean, 0.0)
        bound = {torch.bfloat16: 1e-2, torch.float16: 1e-3}.get(dtype, 1e-5)
        for what, got, want in (("y", y, ref_y), ("dx", dx, ref_dx)):
            rel = ((got.double() - want).norm() / want.norm()).item()
            good = rel <= bound and bool(torch.isfinite(got).all())
            print(f"{NAME} (Triton) {what} {tuple(shape)} dim {dim} {dtype}: rel err {rel:.2e} {'OK' if good else 'FAILED'}")
            ok = ok and good
    return ok


def bench() -> list:
    ns = _original()
    rows = []
    H = 4096
    for BT in (1024, 2048, 4096, 8192):
        x = torch.randn(BT, H, device="cuda", dtype=torch.bfloat16)
        go = torch.randn(BT, H, device="cuda", dtype=torch.bfloat16)
        n = BT * H
        _, out_flat = ns["_sparsemax_forward"](x, -1)
        ms = triton.testing.do_bench(lambda: ns["_sparsemax_forward"](x, -1), return_mode="median")
        rows.append({"shape": f"fwd BT={BT} H={H} bf16", "ms": ms, "rate": _liger.gbps(n * (2 * 2 + 4 * 2 + 2), ms),
                     "unit": "GB/s"})
        ms = triton.testing.do_bench(lambda: ns["_sparsemax_backward"](go, out_flat, 1), return_mode="median")
        rows.append({"shape": f"bwd BT={BT} H={H} bf16", "ms": ms, "rate": _liger.gbps(n * (4 * 2 + 2), ms), "unit": "GB/s"})
    return rows


if __name__ == "__main__":
    ok = check()
    for r in bench():
        print(f"bench {NAME} | {r['shape']} | {r['ms']:.4f} | {r['rate']:.2f} {r['unit']}")
    raise SystemExit(0 if ok else 1)
