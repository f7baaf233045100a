"""fp8_block_matmul: vLLM's block-scaled fp8 matmul (DeepSeek-V3 style), under Triton.

The original, loaded from its upstream file (bench/kernels/_upstream.py says where): vllm-project/vllm
vllm/model_executor/layers/quantization/utils/fp8_utils.py at 007d50058a06:
_w8a8_triton_block_scaled_mm and its wrapper w8a8_triton_block_scaled_mm. Stand-in for the file's
get_w8a8_block_fp8_configs: no tuned JSON table, so the wrapper takes its default config (the one
the Tritium port uses). kernels/fp8_block_matmul.cpp is the Tritium port; bench() prints the shapes
its --bench prints (vLLM's benchmarks/kernels/bench_block_fp8_gemm.py inputs).
"""
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _upstream  # noqa: E402

NAME = "fp8_block_matmul"
UPSTREAM = [("vllm-project/vllm", "vllm/model_executor/layers/quantization/utils/fp8_utils.py",
             "007d50058a06dec0f82472d63c819244d460c40d")]


def _no_tuned_configs(N, K, block_n, block_k):
    return None


def _original():
    _upstream.require(UPSTREAM)
    repo, path, _ = UPSTREAM[0]
    ns = {"get_w8a8_block_fp8_configs": _no_tuned_configs}
    return _upstream.load(repo, path, ["_w8a8_triton_block_scaled_mm", "w8a8_triton_block_scaled_mm"], namespace=ns)


# ---- the suite's check and benchmark --------------------------------------------------------------

def _inputs(M, N, K, block_size, factor_for_scale=1e-2):
    # vLLM's test_w8a8_block_fp8_matmul / bench_block_fp8_gemm inputs
    fp8_info = torch.finfo(torch.float8_e4m3fn)
    fp8_max, fp8_min = fp8_info.max, fp8_info.min
    A = ((torch.rand(M, K, device="cuda") - 0.5) * 2 * fp8_max).clamp(min=fp8_min, max=fp8_max).to(torch.float8_e4m3fn)
    B = ((torch.rand(N, K, device="cuda") - 0.5) * 2 * fp8_max).clamp(min=fp8_min, max=fp8_max).to(torch.float8_e4m3fn)
    block_n, block_k = block_size
    n_tiles, k_tiles = triton.cdiv(N, block_n), triton.cdiv(K, block_k)
    As = torch.rand(M, k_tiles, device="cuda") * factor_for_scale
    Bs = torch.rand(n_tiles, k_tiles, device="cuda") * factor_for_scale
    return A, B, As, Bs


def _reference(A, B, As, Bs, block_size):
    # vLLM's native_w8a8_block_matmul, in float64
    block_n, block_k = block_size
    M, K = A.shape
    N = B.shape[0]
    a = A.double() * As.double().repeat_interleave(block_k, dim=1)[:, :K]
    s = Bs.double().repeat_interleave(block_n, dim=0)[:N].repeat_interleave(block_k, dim=1)[:, :K]
    return a @ (B.double() * s).t()


def check() -> bool:
    matmul = _original()["w8a8_triton_block_scaled_mm"]
    torch.manual_seed(0)
    ok = True
    for M, N, K, block, dtype in [(1000, 1100, 999, [128, 128], torch.bfloat16), (130, 700, 1500, [128, 128], torch.float16),
                                  (257, 300, 520, [64, 64], torch.float32)]:
        A, B, As, Bs = _inputs(M, N, K, block)
        out = matmul(A, B, As, Bs, block, dtype)
        ref = _reference(A, B, As, Bs, block)
        rel = ((out.double() - ref).norm() / ref.norm()).item()
        good = rel <= 5e-2 and bool(torch.isfinite(out).all())
        print(f"{NAME} (Triton) {M}x{N}x{K} {dtype}: rel err {rel:.2e} {'OK' if good else 'FAILED'}")
        ok = ok and good
    return ok


def bench() -> list:
    matmul = _original()["w8a8_triton_block_scaled_mm"]
    rows = []
    block_size = [128, 128]
    for M, N, K in [(128, 7168, 16384), (4096, 7168, 2048), (4096, 24576, 1536), (4096, 4096, 7168)]:
        A, B, As, Bs = _inputs(M, N, K, block_size)
        ms = triton.testing.do_bench(lambda: matmul(A, B, As, Bs, block_size, torch.bfloat16),
                                     return_mode="median")
        rows.append({"shape": f"M={M} N={N} K={K} block=[128,128] bf16", "ms": ms,
                     "rate": 2.0 * M * N * K * 1e-12 / (ms * 1e-3), "unit": "TFLOP/s"})
    return rows
