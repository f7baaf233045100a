"""Liger-Kernel's DyT (dynamic tanh) kernels beside kernels/dyt.cpp.

The original, loaded from its upstream file (bench/kernels/_upstream.py says where; Liger's helpers
through _liger.py): linkedin/Liger-Kernel src/liger_kernel/ops/dyt.py at ead96b618e5c: the
autotuned _dyt_fwd_kernel and _dyt_bwd_kernel, liger_dyt_fwd and liger_dyt_bwd, with libdevice's
tanh imported as the file imports it. check() runs both against float64; bench() times both
wrappers on benchmark_dyt.py's default model (llama_3_8b, hidden 4096, bf16 input, fp32
parameters), without and with beta, over the BT sweep, GB/s from the bytes the kernels move.
"""
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _liger  # noqa: E402

NAME = "dyt"
UPSTREAM = [_liger.ops_file("dyt")]


def _npu_only(default=20):
    raise AssertionError("Liger's get_npu_core_count runs only on NPU")


def _original():
    try:
        from triton.language.extra.libdevice import tanh
    except ModuleNotFoundError:
        from triton.language.extra.cuda.libdevice import tanh
    return _liger.load("dyt", ["_dyt_fwd_kernel", "_dyt_bwd_kernel", "liger_dyt_fwd", "liger_dyt_bwd"],
                       extra={"tanh": tanh, "get_npu_core_count": _npu_only})


def check() -> bool:
    ns = _original()
    torch.manual_seed(0)
    ok = True
    for M, N, dtype, have_beta in [(37, 1500, torch.float32, True), (21, 700, torch.float32, False),
                                   (29, 1500, torch.bfloat16, True)]:
        x = torch.randn(M, N, device="cuda").to(dtype)
        dy = torch.randn(M, N, device="cuda").to(dtype)
        alpha = torch.randn(1, device="cuda") * 0.1 + 0.7
        gamma = torch.randn(N, device="cuda") * 0.5 + 1.0
        beta = torch.randn(N, device="cuda") * 0.5 if have_beta else None
        params = [p.double().requires_grad_() for p in (alpha, gamma) + ((beta,) if have_beta else ())]
        xd = x.double().requires_grad_()
        ref = torch.tanh(params[0] * xd) * params[1] + (params[2] if have_beta else 0)
        ref.backward(dy.double())
        y = ns["liger_dyt_fwd"](x, alpha, gamma, beta)
        dx, da, dg, db = ns["liger_dyt_bwd"](dy, x, alpha, gamma, beta)
        bound = 1e-2 if dtype == torch.bfloat16 else 1e-5
        pairs = [("y", y, ref), ("dx", dx, xd.grad), ("dalpha", da, params[0].grad), ("dgamma", dg, params[1].grad)]
        if have_beta:
            pairs.append(("dbeta", db, params[2].grad))
        for what, got, want in pairs:
            want = want.detach()
            rel = ((got.double() - want).norm() / want.norm()).item()
            good = rel <= bound and bool(torch.isfinite(got).all())
            print(f"{NAME} (Triton) {what} {M}x{N} {dtype} beta={have_beta}: rel err {rel:.2e} {'OK' if good else 'FAILED'}")
            ok = ok and good
    return ok


def bench() -> list:
    ns = _original()
    rows = []
    H = 4096
    for have_beta in (False, True):
        for BT in (1024, 2048, 4096, 8192, 16384):
            x = torch.randn(BT, H, device="cuda", dtype=torch.bfloat16)
            dy = torch.randn(BT, H, device="cuda", dtype=torch.bfloat16)
            alpha = torch.full((1,), 0.5, device="cuda")
            gamma = torch.ones(H, device="cuda")
            beta = torch.zeros(H, device="cuda") if have_beta else None
            nbytes, b = BT * H * 2, " beta" if have_beta else ""
            ms = triton.testing.do_bench(lambda: ns["liger_dyt_fwd"](x, alpha, gamma, beta), return_mode="median")
            rows.append({"shape": f"fwd BT={BT} H={H} bf16{b}", "ms": ms, "rate": _liger.gbps(2 * nbytes, ms), "unit": "GB/s"})
            ms = triton.testing.do_bench(lambda: ns["liger_dyt_bwd"](dy, x, alpha, gamma, beta), return_mode="median")
            rows.append({"shape": f"bwd BT={BT} H={H} bf16{b}", "ms": ms, "rate": _liger.gbps(3 * nbytes, ms), "unit": "GB/s"})
    return rows


if __name__ == "__main__":
    ok = check()
    for r in bench():
        print(f"bench {NAME} | {r['shape']} | {r['ms']:.4f} | {r['rate']:.2f} {r['unit']}")
    raise SystemExit(0 if ok else 1)
