"""Liger-Kernel's fused residual-add RMSNorm kernels beside kernels/fused_add_rms_norm.cpp.

The original, loaded from its upstream file (bench/kernels/_upstream.py says where; Liger's helpers
through _liger.py): linkedin/Liger-Kernel src/liger_kernel/ops/fused_add_rms_norm.py at ead96b618e5c:
the casting-mode constants, _fused_add_rms_norm_forward_kernel, _fused_add_rms_norm_backward_kernel,
fused_add_rms_norm_forward and fused_add_rms_norm_backward, with libdevice's rsqrt imported as the
file imports it. check() runs both against float64 in each casting mode; bench() times both wrappers
on benchmark_fused_add_rms_norm.py's default model (llama_3_8b, hidden 4096, bf16 inputs, fp32
weight, llama casting) over the BT sweep, GB/s from the bytes the kernels move.
"""
import math
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _liger  # noqa: E402

NAME = "fused_add_rms_norm"
UPSTREAM = [_liger.ops_file("fused_add_rms_norm")]


def _xpu_only(kernel_args):
    raise AssertionError("Liger's set_large_grf_mode runs only on XPU")


def _npu_only(default=20):
    raise AssertionError("Liger's get_npu_core_count runs only on NPU")


def _original():
    try:
        from triton.language.extra.libdevice import rsqrt
    except ModuleNotFoundError:
        from triton.language.extra.cuda.libdevice import rsqrt
    return _liger.load("fused_add_rms_norm", ["_CASTING_MODE_NONE", "_CASTING_MODE_LLAMA", "_CASTING_MODE_GEMMA",
                                              "_fused_add_rms_norm_forward_kernel", "_fused_add_rms_norm_backward_kernel",
                                              "_str_to_casting_mode", "fused_add_rms_norm_forward",
                                              "fused_add_rms_norm_backward"],
                       extra={"rsqrt": rsqrt, "math": math, "set_large_grf_mode": _xpu_only, "get_npu_core_count": _npu_only})


def check() -> bool:
    ns = _original()
    torch.manual_seed(0)
    ok = True
    for rows, cols, dtype, mode, offset in [(37, 300, torch.float32, "none", 0.0), (13, 1100, torch.bfloat16, "llama", 0.0),
                                            (21, 300, torch.bfloat16, "gemma", 1.0)]:
        x = (torch.randn(rows, cols, device="cuda") + 0.3).to(dtype)
        r = torch.randn(rows, cols, device="cuda").to(dtype)
        w = (torch.randn(cols, device="cuda") * 0.5 + 1.0).to(dtype)
        dy = torch.randn(rows, cols, device="cuda").to(dtype)
        ds = torch.randn(rows, cols, device="cuda").to(dtype)
        y, s, rstd, block, warps, stages, mode_id = ns["fused_add_rms_norm_forward"](x, r, w, 1e-6, offset, mode)
        dx, dr, dw = ns["fused_add_rms_norm_backward"](dy, ds, s, w, rstd, offset, mode_id, block, warps, stages, False)
        sd = s.double().requires_grad_()
        wd = w.double().requires_grad_()
        ref = sd * torch.rsqrt(sd.pow(2).mean(-1, keepdim=True) + 1e-6) * (wd + offset)
        ref.backward(dy.double())
        ref_dx = sd.grad + ds.double()
        bound = 1e-2 if dtype == torch.bfloat16 else 1e-5
        for what, got, want in (("s", s, x.double() + r.double()), ("y", y, ref.detach()), ("dx", dx, ref_dx),
                                ("dr", dr, ref_dx), ("dw", dw, wd.grad)):
            rel = ((got.double() - want).norm() / want.norm()).item()
            good = rel <= bound and bool(torch.isfinite(got).all())
            print(f"{NAME} (Triton) {what} {rows}x{cols} {dtype} {mode}: rel err {rel:.2e} {'OK' if good else 'FAILED'}")
            ok = ok and good
    return ok


def bench() -> list:
    ns = _original()
    rows = []
    H = 4096
    for BT in (1024, 2048, 4096, 8192, 16384, 32768):
        x, r, dy, ds = (torch.randn(BT, H, device="cuda", dtype=torch.bfloat16) for _ in range(4))
        w = torch.ones(H, device="cuda")
        _, s, rstd, block, warps, stages, mode = ns["fused_add_rms_norm_forward"](x, r, w, 1e-6, 0.0, "llama")
        nbytes = BT * H * 2
        ms = triton.testing.do_bench(lambda: ns["fused_add_rms_norm_forward"](x, r, w, 1e-6, 0.0, "llama"), return_mode="median")
        rows.append({"shape": f"fwd BT={BT} H={H} bf16", "ms": ms, "rate": _liger.gbps(4 * nbytes, ms), "unit": "GB/s"})
        ms = triton.testing.do_bench(
            lambda: ns["fused_add_rms_norm_backward"](dy, ds, s, w, rstd, 0.0, mode, block, warps, stages, False),
            return_mode="median")
        rows.append({"shape": f"bwd BT={BT} H={H} bf16", "ms": ms, "rate": _liger.gbps(4 * nbytes, ms), "unit": "GB/s"})
    return rows


if __name__ == "__main__":
    ok = check()
    for r in bench():
        print(f"bench {NAME} | {r['shape']} | {r['ms']:.4f} | {r['rate']:.2f} {r['unit']}")
    raise SystemExit(0 if ok else 1)
