"""Liger-Kernel's PolyNorm kernels beside kernels/poly_norm.cpp.

The original, loaded from its upstream file (bench/kernels/_upstream.py says where; Liger's helpers
through _liger.py): linkedin/Liger-Kernel src/liger_kernel/ops/poly_norm.py at ead96b618e5c:
_poly_norm_forward_kernel, _poly_norm_backward_kernel, poly_norm_forward and poly_norm_backward,
with libdevice's rsqrt imported as the file imports it. check() runs both against float64; bench()
times both wrappers on benchmark_poly_norm.py's default model (llama_3_8b, hidden 4096, bf16 input,
fp32 parameters) over the BT sweep, GB/s from the bytes the kernels move.
"""
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _liger  # noqa: E402

NAME = "poly_norm"
UPSTREAM = [_liger.ops_file("poly_norm")]


def _xpu_only(kernel_args):
    raise AssertionError("Liger's set_large_grf_mode runs only on XPU")


def _npu_only(default=20):
    raise AssertionError("Liger's get_npu_core_count runs only on NPU")


def _original():
    try:
        from triton.language.extra.libdevice import rsqrt
    except ModuleNotFoundError:
        from triton.language.extra.cuda.libdevice import rsqrt
    return _liger.load("poly_norm", ["_poly_norm_forward_kernel", "_poly_norm_backward_kernel", "poly_norm_forward",
                                     "poly_norm_backward"],
                       extra={"rsqrt": rsqrt, "set_large_grf_mode": _xpu_only, "get_npu_core_count": _npu_only})


def _reference(x, w, b, eps):
    def norm(u):
        return u * torch.rsqrt(u.pow(2).mean(-1, keepdim=True) + eps)
    return w[0] * norm(x ** 3) + w[1] * norm(x ** 2) + w[2] * norm(x) + b


def check() -> bool:
    ns = _original()
    torch.manual_seed(0)
    ok = True
    for rows, cols, dtype in [(37, 300, torch.float32), (13, 1100, torch.float32), (29, 300, torch.bfloat16)]:
        x = torch.randn(rows, cols, device="cuda").to(dtype)
        dy = torch.randn(rows, cols, device="cuda").to(dtype)
        w = torch.randn(3, device="cuda") * 0.3 + 0.4
        b = torch.randn(1, device="cuda") * 0.5 + 1.0
        xd, wd, bd = (t.double().requires_grad_() for t in (x, w, b))
        ref = _reference(xd, wd, bd, 1e-6)
        ref.backward(dy.double())
        y, _, rstd, block, warps = ns["poly_norm_forward"](x, w, b, 1e-6)
        dx, dw, db = ns["poly_norm_backward"](dy, x, w, rstd, block, warps, False)
        bound = 1e-2 if dtype == torch.bfloat16 else 1e-5
        for what, got, want in (("y", y, ref), ("dx", dx, xd.grad), ("dw", dw, wd.grad), ("db", db, bd.grad)):
            want = want.detach().reshape(got.shape)
            rel = ((got.double() - want).norm() / want.norm()).item()
            good = rel <= bound and bool(torch.isfinite(got).all())
            print(f"{NAME} (Triton) {what} {rows}x{cols} {dtype}: rel err {rel:.2e} {'OK' if good else 'FAILED'}")
            ok = ok and good
    return ok


def bench() -> list:
    ns = _original()
    rows = []
    H = 4096
    for BT in (1024, 2048, 4096, 8192, 16384, 32768):
        x = torch.randn(BT, H, device="cuda", dtype=torch.bfloat16)
        dy = torch.randn(BT, H, device="cuda", dtype=torch.bfloat16)
        w = torch.full((3,), 1.0 / 3.0, device="cuda")
        b = torch.tensor(1.0, device="cuda")
        _, _, rstd, block, warps = ns["poly_norm_forward"](x, w, b, 1e-6)
        nbytes = BT * H * 2
        ms = triton.testing.do_bench(lambda: ns["poly_norm_forward"](x, w, b, 1e-6), return_mode="median")
        rows.append({"shape": f"fwd BT={BT} H={H} bf16", "ms": ms, "rate": _liger.gbps(2 * nbytes, ms), "unit": "GB/s"})
        ms = triton.testing.do_bench(lambda: ns["poly_norm_backward"](dy, x, w, rstd, block, warps, False), return_mode="median")
        rows.append({"shape": f"bwd BT={BT} H={H} bf16", "ms": ms, "rate": _liger.gbps(3 * nbytes, ms), "unit": "GB/s"})
    return rows


if __name__ == "__main__":
    ok = check()
    for r in bench():
        print(f"bench {NAME} | {r['shape']} | {r['ms']:.4f} | {r['rate']:.2f} {r['unit']}")
    raise SystemExit(0 if ok else 1)
