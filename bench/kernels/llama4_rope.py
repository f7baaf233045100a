"""Liger-Kernel's Llama 4 rotary embedding beside kernels/llama4_rope.cpp.

The original, loaded from its upstream file (bench/kernels/_upstream.py says where; Liger's helpers
through _liger.py): linkedin/Liger-Kernel src/liger_kernel/ops/llama4_rope.py at ead96b618e5c:
_cast_and_contiguous, _llama4_rope_kernel, _select_kernel_meta and llama4_rope_forward (given the
complex frequencies, as the original takes them; the port takes their real view). check() runs it
against float64 (head_dim / 2 of 40, 64 and 10, more query or more key heads, the conjugate of the
backward, f32, bf16 and f16); bench() times the forward on benchmark_llama4_rope.py's default model
(llama_3_8b: 32 query and 8 key heads of 128, bf16, batch 1) over the sequence sweep, GB/s from the
bytes the kernel moves (q and k read and written, the frequencies read).
"""
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _liger  # noqa: E402

NAME = "llama4_rope"
UPSTREAM = [_liger.ops_file("llama4_rope")]


def _original():
    return _liger.load("llama4_rope", ["_cast_and_contiguous", "_llama4_rope_kernel", "_select_kernel_meta",
                                       "llama4_rope_forward"])


def _freqs(table, head_dim):
    j = torch.arange(head_dim // 2, device="cuda", dtype=torch.float64)
    angle = torch.arange(table, device="cuda", dtype=torch.float64)[:, None] * 500000.0 ** (-2 * j / head_dim)
    return torch.polar(torch.ones_like(angle), angle).to(torch.complex64)


def check() -> bool:
    ns = _original()
    torch.manual_seed(0)
    ok = True
    for B, S, Hq, Hk, D, dtype, sign in [(2, 5, 4, 2, 80, torch.float32, 1.0), (1, 7, 3, 5, 128, torch.bfloat16, -1.0),
                                         (2, 3, 2, 1, 20, torch.float32, 1.0), (2, 4, 4, 4, 128, torch.float16, 1.0)]:
        q = torch.randn(B, S, Hq, D, device="cuda").to(dtype)
        k = torch.randn(B, S, Hk, D, device="cuda").to(dtype)
        freqs = _freqs(S + 3, D)
        f = freqs[:S].to(torch.complex128)
        f = torch.complex(f.real, f.imag * sign)
        ref_q = torch.view_as_real(torch.view_as_complex(q.double().reshape(B, S, Hq, D // 2, 2)) * f[None, :, None])
        ref_k = torch.view_as_real(torch.view_as_complex(k.double().reshape(B, S, Hk, D // 2, 2)) * f[None, :, None])
        qo, ko = ns["llama4_rope_forward"](q, k, freqs, None, sign)
        bound = {torch.bfloat16: 1e-2, torch.float16: 1e-3}.get(dtype, 1e-5)
        for what, got, want in (("q", qo, ref_q.reshape(B, S, Hq, D)), ("k", ko, ref_k.reshape(B, S, Hk, D))):
            rel = ((got.double() - want).norm() / want.norm()).item()
            good = rel <= bound and bool(torch.isfinite(got).all())
            print(f"{NAME} (Triton) {what} B{B} S{S} Hq{Hq} Hk{Hk} D{D} {dtype} sign {sign}: rel err {rel:.2e} "
                  f"{'OK' if good else 'FAILED'}")
            ok = ok and good
    return ok


def bench() -> list:
    ns = _original()
    rows = []
    Hq, Hk, D = 32, 8, 128
    for S in (1024, 2048, 4096, 8192):
        q = torch.randn(1, S, Hq, D, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(1, S, Hk, D, device="cuda", dtype=torch.bfloat16)
        freqs = _freqs(S, D)
        nbytes = 2 * S * (Hq + Hk) * D * 2 + S * D * 4
        ms = triton.testing.do_bench(lambda: ns["llama4_rope_forward"](q, k, freqs), return_mode="median")
        rows.append({"shape": f"fwd S={S} Hq={Hq} Hk={Hk} D={D} bf16", "ms": ms, "rate": _liger.gbps(nbytes, ms),
                     "unit": "GB/s"})
    return rows


if __name__ == "__main__":
    ok = check()
    for r in bench():
        print(f"bench {NAME} | {r['shape']} | {r['ms']:.4f} | {r['rate']:.2f} {r['unit']}")
    raise SystemExit(0 if ok else 1)
