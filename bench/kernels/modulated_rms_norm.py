"""Liger-Kernel's modulated RMSNorm kernels beside kernels/modulated_rms_norm.cpp.

The original, loaded from its upstream file (bench/kernels/_upstream.py says where; Liger's helpers
through _liger.py): linkedin/Liger-Kernel src/liger_kernel/ops/modulated_rms_norm.py at ead96b618e5c:
the casting-mode constants, _modulated_rms_norm_forward_kernel, _modulated_rms_norm_backward_kernel,
_str_to_casting_mode, _check_modulation_shape, modulated_rms_norm_forward and
modulated_rms_norm_backward, with libdevice's rsqrt imported as the file imports it. check() runs
both against float64 (per-row and shared modulation rows); bench() times both wrappers on
benchmark_modulated_rms_norm.py's default model (llama_3_8b, hidden 4096, bf16, per-token scale and
shift, fp32 weight) over the BT sweep, GB/s from the bytes the kernels move.
"""
import math
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _liger  # noqa: E402

NAME = "modulated_rms_norm"
UPSTREAM = [_liger.ops_file("modulated_rms_norm")]


def _xpu_only(kernel_args):
    raise AssertionError("Liger's set_large_grf_mode runs only on XPU")


def _npu_only(default=20):
    raise AssertionError("Liger's get_npu_core_count runs only on NPU")


def _original():
    try:
        from triton.language.extra.libdevice import rsqrt
    except ModuleNotFoundError:
        from triton.language.extra.cuda.libdevice import rsqrt
    return _liger.load("modulated_rms_norm", ["_CASTING_MODE_NONE", "_CASTING_MODE_LLAMA", "_CASTING_MODE_GEMMA",
                                              "_modulated_rms_norm_forward_kernel", "_modulated_rms_norm_backward_kernel",
                                              "_str_to_casting_mode", "_check_modulation_shape",
                                              "modulated_rms_norm_forward", "modulated_rms_norm_backward"],
                       extra={"rsqrt": rsqrt, "math": math, "set_large_grf_mode": _xpu_only, "get_npu_core_count": _npu_only})


def check() -> bool:
    ns = _original()
    torch.manual_seed(0)
    ok = True
    for rows, cols, scale_rows, dtype, mode, offset, affine, has_shift in [
            (37, 300, 37, torch.float32, "none", 0.0, True, True), (21, 300, 3, torch.float32, "llama", 0.0, False, True),
            (37, 300, 1, torch.float32, "gemma", 1.0, True, False), (13, 1100, 13, torch.bfloat16, "llama", 0.0, True, True)]:
        x = (torch.randn(rows, cols, device="cuda") * 1.5 + 0.3).to(dtype)
        w = (torch.randn(cols, device="cuda") * 0.5 + 1.0).to(dtype) if affine else None
        scale = (torch.randn(scale_rows, cols, device="cuda") * 0.3).to(dtype)
        shift = (torch.randn(scale_rows, cols, device="cuda") * 0.3).to(dtype) if has_shift else None
        dy = torch.randn(rows, cols, device="cuda").to(dtype)
        leaves = [t.double().requires_grad_() if t is not None else None for t in (x, w, scale, shift)]
        xd, wd, sd, shd = leaves
        rms = xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + 1e-6) * ((wd + offset) if affine else 1.0)
        rep = rows // scale_rows
        ref = rms * (1.0 + sd.repeat_interleave(rep, 0)) + (shd.repeat_interleave(rep, 0) if has_shift else 0.0)
        ref.backward(dy.double())
        y, rstd, block, warps, mode_id, rpm = ns["modulated_rms_norm_forward"](x, w, scale, shift, 1e-6, offset, mode)
        dx, dw, dscale, dshift = ns["modulated_rms_norm_backward"](dy, x, w, scale, shift, rstd, offset, mode_id, block, warps,
                                                                   rpm, False)
        bound = 1e-2 if dtype == torch.bfloat16 else 1e-5
        pairs = [("y", y, ref.detach()), ("dx", dx, xd.grad), ("dscale", dscale, sd.grad)]
        if affine:
            pairs.append(("dw", dw, wd.grad))
        if has_shift:
            pairs.append(("dshift", dshift, shd.grad))
        for what, got, want in pairs:
            rel = ((got.double() - want).norm() / want.norm()).item()
            good = rel <= bound and bool(torch.isfinite(got).all())
            print(f"{NAME} (Triton) {what} {rows}x{cols} scale rows {scale_rows} {dtype} {mode}: rel err {rel:.2e} "
                  f"{'OK' if good else 'FAILED'}")
            ok = ok and good
    return ok


def bench() -> list:
    ns = _original()
    rows = []
    H = 4096
    for BT in (1024, 2048, 4096, 8192, 16384):
        x = torch.randn(BT, H, device="cuda", dtype=torch.bfloat16)
        scale = torch.randn_like(x) * 0.1
        shift = torch.randn_like(x) * 0.1
        dy = torch.randn_like(x)
        w = torch.ones(H, device="cuda")
        _, rstd, block, warps, mode, rpm = ns["modulated_rms_norm_forward"](x, w, scale, shift, 1e-6, 0.0, "llama")
        nbytes = BT * H * 2
        ms = triton.testing.do_bench(lambda: ns["modulated_rms_norm_forward"](x, w, scale, shift, 1e-6, 0.0, "llama"),
                                     return_mode="median")
        rows.append({"shape": f"fwd BT={BT} H={H} bf16 shift", "ms": ms, "rate": _liger.gbps(4 * nbytes, ms), "unit": "GB/s"})
        ms = triton.testing.do_bench(
            lambda: ns["modulated_rms_norm_backward"](dy, x, w, scale, shift, rstd, 0.0, mode, block, warps, rpm, False),
            return_mode="median")
        rows.append({"shape": f"bwd BT={BT} H={H} bf16 shift", "ms": ms, "rate": _liger.gbps(6 * nbytes, ms), "unit": "GB/s"})
    return rows


if __name__ == "__main__":
    ok = check()
    for r in bench():
        print(f"bench {NAME} | {r['shape']} | {r['ms']:.4f} | {r['rate']:.2f} {r['unit']}")
    raise SystemExit(0 if ok else 1)
