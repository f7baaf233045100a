"""Liger-Kernel's Attention Residuals kernels beside kernels/attn_res.cpp.

The original, loaded from its upstream file (bench/kernels/_upstream.py says where):
linkedin/Liger-Kernel src/liger_kernel/ops/attn_res.py at ead96b618e5c: _attn_res_fwd_kernel,
_attn_res_bwd_kernel, _next_pow2, _get_max_blocks, attn_res_forward and attn_res_backward. check()
runs both against float64 (autograd of the einsum form); bench() times both wrappers on
benchmark_attn_res.py's default model (llama_3_8b, hidden 4096, bf16, N = 8 blocks, batch 1) over the
sequence sweep, GB/s from the bytes the kernels move.
"""
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _liger  # noqa: E402

NAME = "attn_res"
UPSTREAM = [_liger.ops_file("attn_res")]


def _original():
    return _liger.load("attn_res", ["_attn_res_fwd_kernel", "_attn_res_bwd_kernel", "_next_pow2", "_get_max_blocks",
                                    "attn_res_forward", "attn_res_backward"])


def _reference(V, w_query, w_norm, eps):
    K = V * torch.rsqrt(V.pow(2).mean(-1, keepdim=True) + eps) * w_norm
    alpha = torch.softmax(torch.einsum("d,ntd->nt", w_query, K), dim=0)
    return torch.einsum("nt,ntd->td", alpha, V)


def check() -> bool:
    ns = _original()
    torch.manual_seed(0)
    ok = True
    for N, T, D, dtype in [(5, 13, 300, torch.float32), (3, 7, 1100, torch.float32), (3, 11, 300, torch.bfloat16)]:
        V = torch.randn(N, T, D, device="cuda").to(dtype)
        w_query = (torch.randn(D, device="cuda") * 0.1).to(dtype)
        w_norm = (torch.randn(D, device="cuda") * 0.3 + 1.0).to(dtype)
        dh = torch.randn(T, D, device="cuda").to(dtype)
        Vd, wqd, wnd = (t.double().requires_grad_() for t in (V, w_query, w_norm))
        ref = _reference(Vd, wqd, wnd, 1e-6)
        ref.backward(dh.double())
        h, V_3d, alpha, rstd = ns["attn_res_forward"](V, w_query, w_norm, 1e-6)
        dV, dwq, dwn = ns["attn_res_backward"](dh, V_3d, w_query, w_norm, alpha, rstd, 1e-6)
        bound = 1e-2 if dtype == torch.bfloat16 else 1e-5
        for what, got, want in (("h", h, ref.detach()), ("dV", dV, Vd.grad), ("dw_query", dwq, wqd.grad), ("dw_norm", dwn, wnd.grad)):
            rel = ((got.double() - want).norm() / want.norm()).item()
            good = rel <= bound and bool(torch.isfinite(got).all())
            print(f"{NAME} (Triton) {what} N {N} T {T} D {D} {dtype}: rel err {rel:.2e} {'OK' if good else 'FAILED'}")
            ok = ok and good
    return ok


def bench() -> list:
    ns = _original()
    rows = []
    N, D = 8, 4096
    for T in (1024, 2048, 4096, 8192):
        V = torch.randn(N, T, D, device="cuda", dtype=torch.bfloat16)
        w_query = torch.randn(D, device="cuda", dtype=torch.bfloat16) * 0.02
        w_norm = torch.ones(D, device="cuda", dtype=torch.bfloat16)
        dh = torch.randn(T, D, device="cuda", dtype=torch.bfloat16)
        _, V_3d, alpha, rstd = ns["attn_res_forward"](V, w_query, w_norm)
        vbytes, tbytes = N * T * D * 2, T * D * 2
        ms = triton.testing.do_bench(lambda: ns["attn_res_forward"](V, w_query, w_norm), return_mode="median")
        rows.append({"shape": f"fwd N={N} T={T} D={D} bf16", "ms": ms, "rate": _liger.gbps(2 * vbytes + tbytes, ms), "unit": "GB/s"})
        ms = triton.testing.do_bench(lambda: ns["attn_res_backward"](dh, V_3d, w_query, w_norm, alpha, rstd), return_mode="median")
        rows.append({"shape": f"bwd N={N} T={T} D={D} bf16", "ms": ms, "rate": _liger.gbps(3 * vbytes + tbytes, ms), "unit": "GB/s"})
    return rows


if __name__ == "__main__":
    ok = check()
    for r in bench():
        print(f"bench {NAME} | {r['shape']} | {r['ms']:.4f} | {r['rate']:.2f} {r['unit']}")
    raise SystemExit(0 if ok else 1)
