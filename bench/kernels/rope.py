"""Liger-Kernel's RoPE kernel beside kernels/rope.cpp.

The original, loaded from its upstream file (bench/kernels/_upstream.py says where):
linkedin/Liger-Kernel src/liger_kernel/ops/rope.py at ead96b618e5c: _triton_rope, rope_forward and
rope_backward. check() runs both against float64 (HF's rotate_half rotation); bench() times both
wrappers on benchmark_rope.py's default model (llama_3_8b: 32 q heads, 8 kv heads, head_dim 128,
bf16, batch 1) over the sequence sweep, GB/s from the bytes the kernel moves.
"""
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _liger  # noqa: E402

NAME = "rope"
UPSTREAM = [_liger.ops_file("rope")]


def _original():
    return _liger.load("rope", ["_triton_rope", "rope_forward", "rope_backward"])


def _rotate(x, cos, sin):
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


def check() -> bool:
    ns = _original()
    torch.manual_seed(0)
    ok = True
    for bsz, seq, nq, nk, hd, per_batch, dtype in [(2, 7, 6, 3, 80, False, torch.float32),
                                                   (3, 5, 4, 2, 64, True, torch.float32),
                                                   (2, 9, 8, 2, 128, False, torch.bfloat16)]:
        q = torch.randn(bsz, seq, nq, hd, device="cuda").to(dtype).transpose(1, 2)
        k = torch.randn(bsz, seq, nk, hd, device="cuda").to(dtype).transpose(1, 2)
        dq = torch.randn(bsz, seq, nq, hd, device="cuda").to(dtype).transpose(1, 2)
        dk = torch.randn(bsz, seq, nk, hd, device="cuda").to(dtype).transpose(1, 2)
        a = torch.rand(bsz if per_batch else 1, seq, hd // 2, device="cuda") * 6.3
        a = torch.cat([a, a], dim=-1)
        cos, sin = a.cos().to(dtype), a.sin().to(dtype)
        c, s = cos.double().unsqueeze(1), sin.double().unsqueeze(1)
        refs = [_rotate(q.double(), c, s), _rotate(k.double(), c, s), _rotate(dq.double(), c, -s), _rotate(dk.double(), c, -s)]
        oq, ok_, _, _ = ns["rope_forward"](q.clone(), k.clone(), cos, sin)
        gq, gk = ns["rope_backward"](dq.clone(), dk.clone(), cos, sin)
        bound = 1e-2 if dtype == torch.bfloat16 else 1e-5
        for what, got, want in zip(("q", "k", "dq", "dk"), (oq, ok_, gq, gk), refs):
            rel = ((got.double() - want).norm() / want.norm()).item()
            good = rel <= bound and bool(torch.isfinite(got).all())
            print(f"{NAME} (Triton) {what} bsz {bsz} seq {seq} heads {nq}/{nk} hd {hd} {dtype}: rel err {rel:.2e} "
                  f"{'OK' if good else 'FAILED'}")
            ok = ok and good
    return ok


def bench() -> list:
    ns = _original()
    rows = []
    nq, nk, hd = 32, 8, 128
    for S in (1024, 2048, 4096, 8192, 16384):
        q = torch.randn(1, S, nq, hd, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
        k = torch.randn(1, S, nk, hd, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
        cos = torch.rand(1, S, hd, device="cuda", dtype=torch.bfloat16)
        sin = torch.rand(1, S, hd, device="cuda", dtype=torch.bfloat16)
        nbytes = 2 * S * (nq + nk) * hd * 2
        ms = triton.testing.do_bench(lambda: ns["rope_forward"](q, k, cos, sin), return_mode="median")
        rows.append({"shape": f"fwd S={S} heads {nq}/{nk} hd {hd} bf16", "ms": ms, "rate": _liger.gbps(nbytes, ms), "unit": "GB/s"})
        ms = triton.testing.do_bench(lambda: ns["rope_backward"](q, k, cos, sin), return_mode="median")
        rows.append({"shape": f"bwd S={S} heads {nq}/{nk} hd {hd} bf16", "ms": ms, "rate": _liger.gbps(nbytes, ms), "unit": "GB/s"})
    return rows


if __name__ == "__main__":
    ok = check()
    for r in bench():
        print(f"bench {NAME} | {r['shape']} | {r['ms']:.4f} | {r['rate']:.2f} {r['unit']}")
    raise SystemExit(0 if ok else 1)
