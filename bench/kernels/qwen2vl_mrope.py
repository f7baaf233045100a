"""Liger-Kernel's Qwen2-VL multimodal RoPE kernel beside kernels/qwen2vl_mrope.cpp.

The original, loaded from its upstream file (bench/kernels/_upstream.py says where):
linkedin/Liger-Kernel src/liger_kernel/ops/qwen2vl_mrope.py at ead96b618e5c: _triton_qwen2vl_mrope,
qwen2vl_mrope_forward and qwen2vl_mrope_backward. check() runs both against float64; bench() times
both wrappers on benchmark_qwen2vl_mrope.py's default model (llama_3_8b: 32 q heads, 8 kv heads,
head_dim 128, mrope_section [16, 24, 24], bf16, batch 1) over the sequence sweep, GB/s from the bytes
the kernel moves.
"""
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _liger  # noqa: E402

NAME = "qwen2vl_mrope"
UPSTREAM = [_liger.ops_file("qwen2vl_mrope")]


def _original():
    return _liger.load("qwen2vl_mrope", ["_triton_qwen2vl_mrope", "qwen2vl_mrope_forward", "qwen2vl_mrope_backward"])


def _rotate(x, cos, sin):
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


def _sectioned(t, section):
    """(3, bsz, seq, hd) -> (bsz, 1, seq, hd): half-head column j (and its copy) from its section's stream."""
    idx = torch.repeat_interleave(torch.arange(3), torch.tensor(section))
    idx = torch.cat([idx, idx]).tolist()
    return torch.stack([t[idx[j], ..., j] for j in range(t.shape[-1])], dim=-1).unsqueeze(1)


def check() -> bool:
    ns = _original()
    torch.manual_seed(0)
    ok = True
    for bsz, seq, nq, nk, hd, section, dtype in [(2, 7, 6, 3, 80, [16, 12, 12], torch.float32),
                                                 (3, 5, 4, 2, 64, [8, 12, 12], torch.float32),
                                                 (2, 9, 8, 2, 128, [16, 24, 24], torch.bfloat16)]:
        q = torch.randn(bsz, seq, nq, hd, device="cuda").to(dtype).transpose(1, 2)
        k = torch.randn(bsz, seq, nk, hd, device="cuda").to(dtype).transpose(1, 2)
        dq = torch.randn(bsz, seq, nq, hd, device="cuda").to(dtype).transpose(1, 2)
        dk = torch.randn(bsz, seq, nk, hd, device="cuda").to(dtype).transpose(1, 2)
        a = torch.rand(3, bsz, seq, hd // 2, device="cuda") * 6.3
        a = torch.cat([a, a], dim=-1)
        cos, sin = a.cos().to(dtype), a.sin().to(dtype)
        c, s = _sectioned(cos.double(), section), _sectioned(sin.double(), section)
        refs = [_rotate(q.double(), c, s), _rotate(k.double(), c, s), _rotate(dq.double(), c, -s), _rotate(dk.double(), c, -s)]
        oq, ok_, _, _ = ns["qwen2vl_mrope_forward"](q.clone(), k.clone(), cos, sin, section)
        gq, gk = ns["qwen2vl_mrope_backward"](dq.clone(), dk.clone(), cos, sin, section)
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
    nq, nk, hd, section = 32, 8, 128, [16, 24, 24]
    for S in (1024, 2048, 4096, 8192, 16384):
        q = torch.randn(1, S, nq, hd, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
        k = torch.randn(1, S, nk, hd, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
        cos = torch.rand(3, 1, S, hd, device="cuda", dtype=torch.bfloat16)
        sin = torch.rand(3, 1, S, hd, device="cuda", dtype=torch.bfloat16)
        nbytes = 2 * S * (nq + nk) * hd * 2
        ms = triton.testing.do_bench(lambda: ns["qwen2vl_mrope_forward"](q, k, cos, sin, section), return_mode="median")
        rows.append({"shape": f"fwd S={S} heads {nq}/{nk} hd {hd} bf16", "ms": ms, "rate": _liger.gbps(nbytes, ms), "unit": "GB/s"})
        ms = triton.testing.do_bench(lambda: ns["qwen2vl_mrope_backward"](q, k, cos, sin, section), return_mode="median")
        rows.append({"shape": f"bwd S={S} heads {nq}/{nk} hd {hd} bf16", "ms": ms, "rate": _liger.gbps(nbytes, ms), "unit": "GB/s"})
    return rows


if __name__ == "__main__":
    ok = check()
    for r in bench():
        print(f"bench {NAME} | {r['shape']} | {r['ms']:.4f} | {r['rate']:.2f} {r['unit']}")
    raise SystemExit(0 if ok else 1)
