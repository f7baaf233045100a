"""fused_moe: vLLM's fused MoE grouped GEMM (fused_moe_kernel), under Triton.

The original, loaded from its upstream file (bench/kernels/_upstream.py says where): vllm-project/vllm
vllm/model_executor/layers/fused_moe/fused_moe.py at 13cb3e44373b: write_zeros_to_output,
fused_moe_kernel, invoke_fused_moe_kernel (its fused_moe_kernel branch: no B_zp, no int4_w4a16) and
get_default_config. Stand-ins for the file's imports: vllm_is_batch_invariant (False),
current_platform (not ROCm), typing's Any; moe_align_block_size is vLLM's CUDA op, here a torch
function with the same outputs (the Tritium port does it on the host), run outside the timing.
kernels/fused_moe.cpp is the Tritium port; bench() prints the shapes its --bench prints.
"""
import os
import sys
import types
from typing import Any

import torch
import triton
import triton.language as tl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _upstream  # noqa: E402

NAME = "fused_moe"
UPSTREAM = [("vllm-project/vllm", "vllm/model_executor/layers/fused_moe/fused_moe.py",
             "13cb3e44373beb1c8b9d2c017f565af6f7a1b601")]

# vllm.platforms.current_platform as get_default_config asks it: a CUDA device.
_CUDA_PLATFORM = types.SimpleNamespace(is_rocm=lambda: False, is_cuda=lambda: True)


def _original():
    _upstream.require(UPSTREAM)
    repo, path, _ = UPSTREAM[0]
    ns = {"Any": Any, "vllm_is_batch_invariant": lambda: False, "current_platform": _CUDA_PLATFORM}
    return _upstream.load(repo, path, ["write_zeros_to_output", "fused_moe_kernel", "invoke_fused_moe_kernel",
                                       "get_default_config"], namespace=ns)


def moe_align_block_size(topk_ids, block_size, num_experts, expert_map=None):
    """vLLM's moe_align_block_size outputs, in torch (ids grouped by expert in token order)."""
    numel = topk_ids.numel()
    max_num_tokens_padded = numel + num_experts * (block_size - 1)
    flat = topk_ids.flatten().long()
    counts = torch.bincount(flat, minlength=num_experts)
    padded = (counts + block_size - 1) // block_size * block_size
    cumsum = torch.zeros(num_experts + 1, dtype=torch.long, device=topk_ids.device)
    cumsum[1:] = torch.cumsum(padded, 0)
    order = torch.argsort(flat, stable=True)
    starts = torch.zeros(num_experts + 1, dtype=torch.long, device=topk_ids.device)
    starts[1:] = torch.cumsum(counts, 0)
    sorted_flat = flat[order]
    rank = torch.arange(numel, device=topk_ids.device) - starts[sorted_flat]
    sorted_ids = torch.full((max_num_tokens_padded,), numel, dtype=torch.int32, device=topk_ids.device)
    sorted_ids[cumsum[sorted_flat] + rank] = order.to(torch.int32)
    max_num_m_blocks = triton.cdiv(max_num_tokens_padded, block_size)
    expert_ids = torch.zeros(max_num_m_blocks, dtype=torch.int32, device=topk_ids.device)
    block_expert = torch.repeat_interleave(torch.arange(num_experts, device=topk_ids.device), padded // block_size)
    expert_ids[: block_expert.numel()] = block_expert.to(torch.int32)
    if expert_map is not None:
        expert_ids = expert_map[expert_ids]
    num_tokens_post_pad = cumsum[-1:].to(torch.int32)
    return sorted_ids, expert_ids, num_tokens_post_pad


# ---- the suite's check and benchmark --------------------------------------------------------------

TL_DTYPE = {torch.float16: tl.float16, torch.bfloat16: tl.bfloat16}


def _random_topk_ids(M, E, top_k):
    return torch.rand(M, E, device="cuda").argsort(dim=1)[:, :top_k].to(torch.int32)


def check() -> bool:
    ns = _original()
    invoke_fused_moe_kernel, get_default_config = ns["invoke_fused_moe_kernel"], ns["get_default_config"]
    torch.manual_seed(0)
    ok = True
    # (M, E, top_k, N, K, dtype, quant, mul_routed_weight, expert_map, bias): kernels/fused_moe.cpp's CUDA cases
    cases = [(700, 8, 2, 1000, 520, torch.float16, "", False, False, False),
             (5, 16, 4, 300, 260, torch.bfloat16, "", True, True, True),
             (300, 16, 4, 520, 700, torch.bfloat16, "fp8_w8a8", True, False, False),
             (200, 8, 2, 600, 300, torch.float16, "int8_w8a16", False, False, False)]
    for M, E, top_k, N, K, dtype, quant, routed, mapped, with_bias in cases:
        fp8, w8a16 = quant == "fp8_w8a8", quant == "int8_w8a16"
        block_shape = [64, 64] if fp8 else None
        local = list(range(0, E, 2)) if mapped else list(range(E))
        expert_map = None
        if mapped:
            expert_map = torch.full((E,), -1, dtype=torch.int32, device="cuda")
            expert_map[0::2] = torch.arange(len(local), dtype=torch.int32, device="cuda")
        if fp8:
            A = ((torch.rand(M, K, device="cuda") - 0.5) * 896).to(torch.float8_e4m3fn)
            W = ((torch.rand(len(local), N, K, device="cuda") - 0.5) * 896).to(torch.float8_e4m3fn)
            A_scale = torch.rand(M, triton.cdiv(K, 64), device="cuda") * 1e-2
            B_scale = torch.rand(len(local), triton.cdiv(N, 64), triton.cdiv(K, 64), device="cuda") * 1e-2
        elif w8a16:
            A = torch.randn(M, K, device="cuda").to(dtype)
            W = torch.randint(-127, 128, (len(local), N, K), device="cuda", dtype=torch.int8)
            A_scale, B_scale = None, torch.rand(len(local), N, device="cuda") * 1e-2
        else:
            A = torch.randn(M, K, device="cuda").to(dtype)
            W = (torch.randn(len(local), N, K, device="cuda") / 8).to(dtype)
            A_scale = B_scale = None
        bias = torch.randn(len(local), N, device="cuda").to(dtype) if with_bias else None
        weights = torch.rand(M, top_k, device="cuda")
        topk_ids = _random_topk_ids(M, E, top_k)
        config = get_default_config(M, E, N, K, top_k, quant, block_shape)
        ids = moe_align_block_size(topk_ids, config["BLOCK_SIZE_M"], E, expert_map)
        C = torch.full((M, top_k, N), float("nan"), device="cuda", dtype=dtype)
        invoke_fused_moe_kernel(A, W, C, A_scale, B_scale, None, weights if routed else None, *ids, routed, top_k,
                                config, TL_DTYPE[dtype], use_fp8_w8a8=fp8, use_int8_w8a8=False, use_int8_w8a16=w8a16,
                                use_int4_w4a16=False, per_channel_quant=False, block_shape=block_shape, B_bias=bias)
        # float64 reference of the first GEMM
        ref = torch.zeros(M, top_k, N, dtype=torch.float64, device="cuda")
        a = A.double()
        for j in range(top_k):
            for m in range(M):
                e = int(topk_ids[m, j])
                e = int(expert_map[e]) if mapped else e
                if e < 0:
                    continue
                w = W[e].double()
                if fp8:
                    s = B_scale[e].double().repeat_interleave(64, 0)[:N].repeat_interleave(64, 1)[:, :K]
                    ra = a[m] * A_scale[m].double().repeat_interleave(64)[:K]
                    row = (w * s) @ ra
                else:
                    row = w @ a[m]
                if with_bias:
                    row = row + bias[e].double()
                if routed:
                    row = row * weights[m, j].double()
                if w8a16:
                    row = row * B_scale[e].double()
                ref[m, j] = row
        rel = ((C.double() - ref).norm() / ref.norm()).item()
        bound = 5e-2 if fp8 else (1e-2 if dtype == torch.bfloat16 else 1e-3)
        good = rel <= bound and bool(torch.isfinite(C).all())
        print(f"{NAME} (Triton) M={M} E={E} top_k={top_k} N={N} K={K} {dtype} {quant}: rel err {rel:.2e} "
              f"{'OK' if good else 'FAILED'}")
        ok = ok and good
    return ok


def bench() -> list:
    ns = _original()
    invoke_fused_moe_kernel, get_default_config = ns["invoke_fused_moe_kernel"], ns["get_default_config"]
    torch.manual_seed(0)
    rows = []
    for M, E, top_k, N, K, fp8 in [(64, 8, 2, 14336, 4096, False), (4096, 8, 2, 14336, 4096, False),
                                   (256, 256, 8, 4096, 7168, True)]:
        block_shape = [128, 128] if fp8 else None
        if fp8:
            A = (torch.randn(M, K, device="cuda") * 50).to(torch.float8_e4m3fn)
            W = (torch.randn(E, N, K, device="cuda") * 50).to(torch.float8_e4m3fn)
            A_scale = torch.rand(M, triton.cdiv(K, 128), device="cuda") * 1e-2
            B_scale = torch.rand(E, triton.cdiv(N, 128), triton.cdiv(K, 128), device="cuda") * 1e-2
        else:
            A = torch.randn(M, K, device="cuda").to(torch.bfloat16)
            W = (torch.randn(E, N, K, device="cuda") * 0.05).to(torch.bfloat16)
            A_scale = B_scale = None
        config = get_default_config(M, E, N, K, top_k, "fp8_w8a8" if fp8 else "", block_shape)
        ids = moe_align_block_size(_random_topk_ids(M, E, top_k), config["BLOCK_SIZE_M"], E)
        C = torch.empty(M, top_k, N, device="cuda", dtype=torch.bfloat16)
        fn = lambda: invoke_fused_moe_kernel(A, W, C, A_scale, B_scale, None, None, *ids, False, top_k, config,
                                             tl.bfloat16, use_fp8_w8a8=fp8, use_int8_w8a8=False, use_int8_w8a16=False,
                                             use_int4_w4a16=False, per_channel_quant=False, block_shape=block_shape,
                                             B_bias=None)
        ms = triton.testing.do_bench(fn, return_mode="median")
        rows.append({"shape": f"M={M} E={E} top_k={top_k} N={N} K={K} " + ("fp8_w8a8 block=[128,128]" if fp8 else "bf16"),
                     "ms": ms, "rate": 2.0 * M * top_k * N * K * 1e-12 / (ms * 1e-3), "unit": "TFLOP/s"})
    return rows
