"""Liger-Kernel's LayerNorm kernels beside kernels/layer_norm.cpp.

The original, loaded from its upstream file (bench/kernels/_upstream.py says where; Liger's helpers
through _liger.py): linkedin/Liger-Kernel src/liger_kernel/ops/layer_norm.py at ead96b618e5c:
_layer_norm_forward_kernel, _layer_norm_backward_kernel, layer_norm_forward and layer_norm_backward,
with libdevice's rsqrt imported as the file imports it. check() runs both against float64; bench()
times both wrappers on benchmark_layer_norm.py's default model (llama_3_8b, hidden 4096, bf16,
eps 1e-6) over the sequence sweep, GB/s from the bytes the kernels move.
"""
import math
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _liger  # noqa: E402

NAME = "layer_norm"
UPSTREAM = [_liger.ops_file("layer_norm")]


def _xpu_only(kernel_args):
    raise AssertionError("Liger's set_large_grf_mode runs only on XPU")


def _npu_only(default=20):
    raise AssertionError("Liger's get_npu_core_count runs only on NPU")


def _original():
    try:
        from triton.language.extra.libdevice import rsqrt
    except ModuleNotFoundError:
        from triton.language.extra.cuda.libdevice import rsqrt
    return _liger.load("layer_norm", ["_layer_norm_forward_kernel", "_layer_norm_backward_kernel", "layer_norm_forward",
                                      "layer_norm_backward"],
                       extra={"rsqrt": rsqrt, "math": math, "set_large_grf_mode": _xpu_only, "get_npu_core_count": _npu_only})


def check() -> bool:
    ns = _original()
    torch.manual_seed(0)
    ok = True
    for rows, cols, dtype in [(37, 300, torch.float32), (13, 1100, torch.float32), (29, 300, torch.bfloat16)]:
        x = (torch.randn(rows, cols, device="cuda") * 1.5 + 0.7).to(dtype)
        w = (torch.randn(cols, device="cuda") * 0.5 + 1.0).to(dtype)
        b = (torch.randn(cols, device="cuda") * 0.5).to(dtype)
        dy = torch.randn(rows, cols, device="cuda").to(dtype)
        xd = x.double().requires_grad_()
        wd, bd = w.double().requires_grad_(), b.double().requires_grad_()
        ref = torch.nn.functional.layer_norm(xd, (cols,), wd, bd, 1e-6)
        ref.backward(dy.double())
        y, _, mean, rstd, _, _ = ns["layer_norm_forward"](x, w, b, 1e-6)
        dx, dw, db = ns["layer_norm_backward"](dy, x, w, b, mean, rstd)
        bound = 1e-2 if dtype == torch.bfloat16 else 1e-5
        for what, got, want in (("y", y, ref), ("dx", dx, xd.grad), ("dw", dw, wd.grad), ("db", db, bd.grad)):
            want = want.detach()
            rel = ((got.double() - want).norm() / want.norm()).item()
            good = rel <= bound and bool(torch.isfinite(got).all())
            print(f"{NAME} (Triton) {what} {rows}x{cols} {dtype}: rel err {rel:.2e} {'OK' if good else 'FAILED'}")
            ok = ok and good
    return ok


def bench() -> list:
    ns = _original()
    rows = []
    H = 4096
    for T in (1024, 2048, 4096, 8192, 16384, 32768):
        x = torch.randn(T, H, device="cuda", dtype=torch.bfloat16)
        w = torch.ones(H, device="cuda", dtype=torch.bfloat16)
        b = torch.zeros(H, device="cuda", dtype=torch.bfloat16)
        dy = torch.randn(T, H, device="cuda", dtype=torch.bfloat16)
        _, _, mean, rstd, _, _ = ns["layer_norm_forward"](x, w, b, 1e-6)
        nbytes = T * H * 2
        ms = triton.testing.do_bench(lambda: ns["layer_norm_forward"](x, w, b, 1e-6), return_mode="median")
        rows.append({"shape": f"fwd T={T} H={H} bf16", "ms": ms, "rate": _liger.gbps(2 * nbytes, ms), "unit": "GB/s"})
        ms = triton.testing.do_bench(lambda: ns["layer_norm_backward"](dy, x, w, b, mean, rstd), return_mode="median")
        rows.append({"shape": f"bwd T={T} H={H} bf16", "ms": ms, "rate": _liger.gbps(3 * nbytes, ms), "unit": "GB/s"})
    return rows


if __name__ == "__main__":
    ok = check()
    for r in bench():
        print(f"bench {NAME} | {r['shape']} | {r['ms']:.4f} | {r['rate']:.2f} {r['unit']}")
    raise SystemExit(0 if ok else 1)
