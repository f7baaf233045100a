"""Liger-Kernel's RMSNorm kernels beside kernels/rms_norm.cpp.

The original, loaded from its upstream file (bench/kernels/_upstream.py says where; Liger's helpers
through _liger.py): linkedin/Liger-Kernel src/liger_kernel/ops/rms_norm.py at ead96b618e5c: the
casting-mode constants, _rms_norm_forward_kernel, _rms_norm_backward_kernel, the _block_ pair,
rms_norm_forward and rms_norm_backward, with libdevice's rsqrt imported as the file imports it.
check() runs forward and backward against float64 in each casting mode; bench() times both wrappers
on benchmark_rms_norm.py's default model (llama_3_8b, hidden 4096, bf16, eps 1e-6, LigerRMSNorm's
llama casting, in-place backward) over the sequence sweep, GB/s from the bytes the kernels move.
"""
import math
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _liger  # noqa: E402

NAME = "rms_norm"
UPSTREAM = [_liger.ops_file("rms_norm")]


def _xpu_only(kernel_args):
    raise AssertionError("Liger's set_large_grf_mode runs only on XPU")


def _npu_only(default=20):
    raise AssertionError("Liger's get_npu_core_count runs only on NPU")


def _original():
    try:
        from triton.language.extra.libdevice import rsqrt
    except ModuleNotFoundError:
        from triton.language.extra.cuda.libdevice import rsqrt
    return _liger.load("rms_norm", ["_CASTING_MODE_NONE", "_CASTING_MODE_LLAMA", "_CASTING_MODE_GEMMA",
                                    "_rms_norm_forward_kernel", "_rms_norm_backward_kernel",
                                    "_block_rms_norm_forward_kernel", "_block_rms_norm_backward_kernel",
                                    "_str_to_casting_mode", "rms_norm_forward", "rms_norm_backward"],
                       extra={"rsqrt": rsqrt, "math": math, "set_large_grf_mode": _xpu_only, "get_npu_core_count": _npu_only})


def _reference(x, w, dy, eps, offset):
    x, dy = x.double(), dy.double()
    rstd = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    wo = (w.double() + offset) if w is not None else torch.ones(x.shape[-1], dtype=torch.float64, device=x.device)
    m = dy * wo
    dx = rstd * (m - rstd * rstd * (m * x).sum(-1, keepdim=True) / x.shape[-1] * x)
    return x * rstd * wo, dx, (dy * x * rstd).sum(0)


def check() -> bool:
    ns = _original()
    torch.manual_seed(0)
    ok = True
    # (rows, cols, dtype, casting mode, offset, weight, row_mode); the block kernels need 32768 rows
    for rows, cols, dtype, mode, offset, affine in [(37, 300, torch.float32, "none", 0.0, True),
                                                    (13, 1100, torch.bfloat16, "llama", 0.0, True),
                                                    (21, 300, torch.bfloat16, "gemma", 1.0, True),
                                                    (9, 300, torch.float32, "llama", 0.0, False),
                                                    (40000, 200, torch.bfloat16, "llama", 0.0, True)]:
        x = (torch.randn(rows, cols, device="cuda") * 1.5 + 0.3).to(dtype)
        w = (torch.randn(cols, device="cuda") * 0.5 + 1.0).to(dtype) if affine else None
        dy = torch.randn(rows, cols, device="cuda").to(dtype)
        ref_y, ref_dx, ref_dw = _reference(x, w, dy, 1e-6, offset)
        y, _, rstd, block, warps, mode_id = ns["rms_norm_forward"](x, w, 1e-6, offset, mode, None)
        dx, dw = ns["rms_norm_backward"](dy, x, w, rstd, offset, mode_id, block, warps, False, None)
        bound = 1e-2 if dtype == torch.bfloat16 else 1e-5
        for what, got, ref in (("y", y, ref_y), ("dx", dx, ref_dx), ("dw", dw, ref_dw if affine else None)):
            if ref is None:
                continue
            rel = ((got.double() - ref).norm() / ref.norm()).item()
            good = rel <= bound and bool(torch.isfinite(got).all())
            print(f"{NAME} (Triton) {what} {rows}x{cols} {dtype} {mode}: rel err {rel:.2e} {'OK' if good else 'FAILED'}")
            ok = ok and good
    return ok


def bench() -> list:
    ns = _original()
    rows = []
    H = 4096
    for T in (1024, 2048, 4096, 8192, 16384, 32768):
        x = torch.randn(T, H, device="cuda", dtype=torch.bfloat16)
        w = torch.ones(H, device="cuda")
        dy = torch.randn(T, H, device="cuda", dtype=torch.bfloat16)
        _, _, rstd, block, warps, mode = ns["rms_norm_forward"](x, w, 1e-6, 0.0, "llama", None)
        nbytes = T * H * 2
        ms = triton.testing.do_bench(lambda: ns["rms_norm_forward"](x, w, 1e-6, 0.0, "llama", None), return_mode="median")
        rows.append({"shape": f"fwd T={T} H={H} bf16", "ms": ms, "rate": _liger.gbps(2 * nbytes, ms), "unit": "GB/s"})
        ms = triton.testing.do_bench(lambda: ns["rms_norm_backward"](dy, x, w, rstd, 0.0, mode, block, warps, True, None),
                                     return_mode="median")
        rows.append({"shape": f"bwd T={T} H={H} bf16", "ms": ms, "rate": _liger.gbps(3 * nbytes, ms), "unit": "GB/s"})
    return rows


if __name__ == "__main__":
    ok = check()
    for r in bench():
        print(f"bench {NAME} | {r['shape']} | {r['ms']:.4f} | {r['rate']:.2f} {r['unit']}")
    raise SystemExit(0 if ok else 1)
