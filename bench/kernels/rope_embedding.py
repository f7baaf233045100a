"""Unsloth's RoPE kernels beside kernels/rope_embedding.cpp.

The original, loaded from its upstream files (bench/kernels/_upstream.py says where):
unslothai/unsloth unsloth/kernels/rope_embedding.py at 3ce187da021b (_rope_embedding_QK with its
heuristics, ROPE_GROUP_SIZE, _rope_embedding with its heuristics, Fast_RoPE_Embedding,
Fast_RoPE_Embedding_QK) and MAX_FUSED_SIZE / next_power_of_2 / calculate_settings of
unsloth/kernels/utils.py. Unsloth's package is not imported (it patches transformers on import);
its torch_gpu_device is stood in for by torch.cuda.device, and the autograd functions' forward and
backward are called with a plain object as ctx.
Unsloth ships no benchmark for these kernels: bench() times both forwards (in place) on Llama-3-8B
attention (32 query heads, 8 KV heads, head_dim 128, 4 x 2048 tokens, bf16) with
triton.testing.do_bench, median, as the port's bench.
"""
import os
import sys
import types

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _upstream  # noqa: E402

NAME = "rope_embedding"
UNSLOTH = "unslothai/unsloth"
UPSTREAM = [
    (UNSLOTH, "unsloth/kernels/rope_embedding.py", "3ce187da021b17ef8ca001f1abf20817f28f23e0"),
    (UNSLOTH, "unsloth/kernels/utils.py", "015bdef0d94a241bcd94eec7a405b1700632180d"),
]


def _original():
    _upstream.require(UPSTREAM)
    ns = _upstream.load(UNSLOTH, UPSTREAM[1][1], ["MAX_FUSED_SIZE", "next_power_of_2", "calculate_settings"])
    ns["torch_gpu_device"] = torch.cuda.device
    return _upstream.load(UNSLOTH, UPSTREAM[0][1], ["_rope_embedding_QK", "ROPE_GROUP_SIZE", "_rope_embedding",
                                                    "Fast_RoPE_Embedding", "Fast_RoPE_Embedding_QK"], ns)


def _tables(positions, dim, dtype):
    inv = 1.0 / (10000 ** (torch.arange(0, dim, 2, device="cuda", dtype=torch.float64) / dim))
    ang = torch.arange(positions, device="cuda", dtype=torch.float64)[:, None] * inv[None, :]
    ang = torch.cat([ang, ang], -1)
    return ang.cos().to(dtype)[None, None], ang.sin().to(dtype)[None, None]


def _rotate(x, c, s):
    h = x.shape[-1] // 2
    return torch.cat([x[..., :h] * c[..., :h] - x[..., h:] * s[..., :h], x[..., h:] * c[..., :h] + x[..., :h] * s[..., :h]], -1)


def check() -> bool:
    ns = _original()
    torch.manual_seed(0)
    ok = True
    for b, t, h, d, dtype, tdtype, bwd in [(2, 5, 6, 64, torch.bfloat16, torch.bfloat16, False),
                                           (1, 7, 5, 80, torch.float32, torch.float32, True),
                                           (2, 3, 4, 48, torch.float16, torch.float32, False)]:
        Q = torch.randn((b, t, h, d), device="cuda").to(dtype)
        cos, sin = _tables(t + 3, d, tdtype)
        c, s = cos[0, 0, :t].double()[None, :, None, :], sin[0, 0, :t].double()[None, :, None, :]
        ref = _rotate(Q.double(), c, -s if bwd else s)
        fn = ns["Fast_RoPE_Embedding"]
        ctx = types.SimpleNamespace()
        if bwd:
            fn.forward(ctx, Q.clone(), cos, sin)  # sets ctx
            out = fn.backward(ctx, Q.clone())[0]
        else:
            out = fn.forward(ctx, Q.clone(), cos, sin)
        rel = ((out.double() - ref).norm() / ref.norm()).item()
        bound = {torch.bfloat16: 1e-2, torch.float16: 1e-3, torch.float32: 1e-5}[dtype]
        print(f"{NAME} (Triton) grouped {b}x{t}x{h}x{d} {dtype} backward {bwd}: rel err {rel:.2e} (bound {bound:.0e})")
        ok = ok and rel <= bound
    for b, t, hq, hk, d, dtype, with_idx in [(2, 5, 6, 2, 80, torch.float32, True), (1, 9, 4, 4, 64, torch.bfloat16, False)]:
        Q = torch.randn((b, hq, t, d), device="cuda").to(dtype)
        K = torch.randn((b, t, hk, d), device="cuda").to(dtype).transpose(1, 2)
        cos, sin = _tables(t + 5, d, dtype)
        idx = torch.randint(0, t + 5, (b, t), device="cuda") if with_idx else None
        pos = idx if with_idx else torch.arange(t, device="cuda")[None].expand(b, t)
        c, s = cos[0, 0][pos].double()[:, None], sin[0, 0][pos].double()[:, None]
        rq, rk = _rotate(Q.double(), c, s), _rotate(K.double(), c, s)
        oq, ok_ = ns["Fast_RoPE_Embedding_QK"].forward(types.SimpleNamespace(), Q.clone(), K.clone(), cos, sin, idx)
        rel = max(((oq.double() - rq).norm() / rq.norm()).item(), ((ok_.double() - rk).norm() / rk.norm()).item())
        bound = {torch.bfloat16: 1e-2, torch.float32: 1e-5}[dtype]
        print(f"{NAME} (Triton) QK {b}x{hq}/{hk}x{t}x{d} {dtype} indices {with_idx}: rel err {rel:.2e} (bound {bound:.0e})")
        ok = ok and rel <= bound
    return ok


def bench() -> list:
    ns = _original()
    batch, seq, hq, hk, hd = 4, 2048, 32, 8, 128
    cos, sin = _tables(seq, hd, torch.bfloat16)
    rows = []
    Q = torch.randn((batch, seq, hq, hd), device="cuda").to(torch.bfloat16)
    ms = triton.testing.do_bench(lambda: ns["Fast_RoPE_Embedding"].forward(types.SimpleNamespace(), Q, cos, sin),
                                 return_mode="median")
    rows.append({"shape": f"Q {batch}x{seq}x{hq}x{hd} bf16", "ms": ms,
                 "rate": 2 * Q.numel() * Q.element_size() * 1e-9 / (ms * 1e-3), "unit": "GB/s"})
    Qh = torch.randn((batch, hq, seq, hd), device="cuda").to(torch.bfloat16)
    Kh = torch.randn((batch, hk, seq, hd), device="cuda").to(torch.bfloat16)
    ms = triton.testing.do_bench(
        lambda: ns["Fast_RoPE_Embedding_QK"].forward(types.SimpleNamespace(), Qh, Kh, cos, sin, None), return_mode="median")
    nbytes = 2 * (Qh.numel() + Kh.numel()) * Qh.element_size()
    rows.append({"shape": f"QK {batch}x{hq}/{hk}x{seq}x{hd} bf16", "ms": ms, "rate": nbytes * 1e-9 / (ms * 1e-3),
                 "unit": "GB/s"})
    return rows


if __name__ == "__main__":
    ok = check()
    for r in bench():
        print(f"bench {NAME} | {r['shape']} | {r['ms']:.4f} | {r['rate']:.2f} {r['unit']}")
    raise SystemExit(0 if ok else 1)
