"""fp8_block_matmul: vLLM's block-scaled fp8 matmul (DeepSeek-V3 style), under Triton.

The original kernel and wrapper, transcribed for the benchmark from vllm-project/vllm
vllm/model_executor/layers/quantization/utils/fp8_utils.py (commit
007d50058a06dec0f82472d63c819244d460c40d, Apache-2.0): _w8a8_triton_block_scaled_mm and
w8a8_triton_block_scaled_mm, with the default config (no tuned JSON table: the Tritium port
uses the same default). kernels/fp8_block_matmul.cpp is the Tritium port; bench() prints the
shapes its --bench prints (vLLM's benchmarks/kernels/bench_block_fp8_gemm.py inputs).
"""
import torch
import triton
import triton.language as tl

NAME = "fp8_block_matmul"


@triton.jit
def _w8a8_triton_block_scaled_mm(
    # Pointers to inputs and output
    A,
    B,
    C,
    As,
    Bs,
    # Shape for matmul
    M,
    N,
    K,
    # Block size for block-wise quantization
    group_n,
    group_k,
    # Stride for inputs and output
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    stride_As_m,
    stride_As_k,
    stride_Bs_k,
    stride_Bs_n,
    # Meta-parameters
    BLOCK_SIZE_M: tl.constexpr,
    BLOCK_SIZE_N: tl.constexpr,
    BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr,
):
    """Triton-accelerated function used to perform linear operations (dot
    product) on input tensors `A` and `B` with block-wise quantization, and
    store the result in output tensor `C`.
    """

    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + (pid % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = A + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = B + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)

    As_ptrs = As + offs_am * stride_As_m
    offs_bsn = offs_bn // group_n
    Bs_ptrs = Bs + offs_bsn * stride_Bs_n

    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)

        k_start = k * BLOCK_SIZE_K
        offs_ks = k_start // group_k
        a_s = tl.load(As_ptrs + offs_ks * stride_As_k)
        b_s = tl.load(Bs_ptrs + offs_ks * stride_Bs_k)

        accumulator += tl.dot(a, b) * a_s[:, None] * b_s[None, :]
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk

    if C.dtype.element_ty == tl.bfloat16:
        c = accumulator.to(tl.bfloat16)
    elif C.dtype.element_ty == tl.float16:
        c = accumulator.to(tl.float16)
    else:
        c = accumulator.to(tl.float32)

    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = C + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


def w8a8_triton_block_scaled_mm(A, B, As, Bs, block_size, output_dtype=torch.float16):
    assert len(block_size) == 2
    block_n, block_k = block_size[0], block_size[1]

    assert A.shape[-1] == B.shape[-1]
    assert A.shape[:-1] == As.shape[:-1] and A.is_contiguous()
    assert triton.cdiv(A.shape[-1], block_k) == As.shape[-1]
    M = A.numel() // A.shape[-1]

    assert B.ndim == 2 and Bs.ndim == 2
    N, K = B.shape
    assert triton.cdiv(N, block_n) == Bs.shape[0]
    assert triton.cdiv(K, block_k) == Bs.shape[1]

    C_shape = A.shape[:-1] + (N,)
    C = A.new_empty(C_shape, dtype=output_dtype)

    # get_w8a8_block_fp8_configs() finds no tuned table here: the default config.
    # Block-wise quant: BLOCK_SIZE_N must be divisible by block_size[0]
    # BLOCK_SIZE_K must be divisible by block_size[1]
    config = {
        "BLOCK_SIZE_M": 64,
        "BLOCK_SIZE_N": block_size[0],
        "BLOCK_SIZE_K": block_size[1],
        "GROUP_SIZE_M": 32,
        "num_warps": 4,
        "num_stages": 2,
    }

    def grid(META):
        return (triton.cdiv(M, META["BLOCK_SIZE_M"]) * triton.cdiv(N, META["BLOCK_SIZE_N"]),)

    _w8a8_triton_block_scaled_mm[grid](
        A, B, C, As, Bs, M, N, K, block_n, block_k,
        A.stride(-2), A.stride(-1), B.stride(1), B.stride(0), C.stride(-2), C.stride(-1),
        As.stride(-2), As.stride(-1), Bs.stride(1), Bs.stride(0),
        **config,
    )
    return C


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
    torch.manual_seed(0)
    ok = True
    for M, N, K, block, dtype in [(1000, 1100, 999, [128, 128], torch.bfloat16), (130, 700, 1500, [128, 128], torch.float16),
                                  (257, 300, 520, [64, 64], torch.float32)]:
        A, B, As, Bs = _inputs(M, N, K, block)
        out = w8a8_triton_block_scaled_mm(A, B, As, Bs, block, dtype)
        ref = _reference(A, B, As, Bs, block)
        rel = ((out.double() - ref).norm() / ref.norm()).item()
        good = rel <= 5e-2 and bool(torch.isfinite(out).all())
        print(f"{NAME} (Triton) {M}x{N}x{K} {dtype}: rel err {rel:.2e} {'OK' if good else 'FAILED'}")
        ok = ok and good
    return ok


def bench() -> list:
    rows = []
    block_size = [128, 128]
    for M, N, K in [(128, 7168, 16384), (4096, 7168, 2048), (4096, 24576, 1536), (4096, 4096, 7168)]:
        A, B, As, Bs = _inputs(M, N, K, block_size)
        ms = triton.testing.do_bench(lambda: w8a8_triton_block_scaled_mm(A, B, As, Bs, block_size, torch.bfloat16),
                                     return_mode="median")
        rows.append({"shape": f"M={M} N={N} K={K} block=[128,128] bf16", "ms": ms,
                     "rate": 2.0 * M * N * K * 1e-12 / (ms * 1e-3), "unit": "TFLOP/s"})
    return rows
