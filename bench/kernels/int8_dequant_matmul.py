"""int8_dequant_matmul: bitsandbytes' SwitchBack int8 matmul with row-wise dequantisation, under Triton.

The original kernel, wrapper and autotune list, transcribed for the benchmark from
bitsandbytes-foundation/bitsandbytes bitsandbytes/triton/int8_matmul_rowwise_dequantize.py
(commit 5754411e6f6ca1d57c887ca66b6be64ef7058883, MIT licence), so the GPU machine needs no
bitsandbytes. Not transcribed: prune_configs_by (matmul_perf_model's early_config_prune and
estimate_matmul_time): with the single config, Triton's autotuner never calls them.
kernels/int8_dequant_matmul.cpp is the Tritium port; bench() prints the shapes its --bench prints.
"""
import torch
import triton
import triton.language as tl

NAME = "int8_dequant_matmul"


def init_to_zero(name):
    return lambda nargs: nargs[name].zero_()


@triton.autotune(
    configs=[
        # basic configs for compute-bound matmuls (the others are commented out upstream)
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "SPLIT_K": 1}, num_stages=4, num_warps=4),
    ],
    key=["M", "N", "K"],
)
@triton.heuristics(
    {
        "EVEN_K": lambda args: args["K"] % (args["BLOCK_K"] * args["SPLIT_K"]) == 0,
    },
)
@triton.jit
def _int8_matmul_rowwise_dequantize(
    A,
    B,
    C,
    bias,
    state_x_ptr,
    state_w_ptr,
    M,
    N,
    K,
    divfactor,
    has_bias: tl.constexpr,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    SPLIT_K: tl.constexpr,
    EVEN_K: tl.constexpr,
    ACC_TYPE: tl.constexpr,
):
    # matrix multiplication
    pid = tl.program_id(0)
    pid_z = tl.program_id(1)
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    # re-order program ID for better L2 performance
    width = GROUP_M * grid_n
    group_id = pid // width
    group_size = min(grid_m - group_id * GROUP_M, GROUP_M)
    pid_m = group_id * GROUP_M + (pid % group_size)
    pid_n = (pid % width) // (group_size)
    # do matrix multiplication
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ram = tl.max_contiguous(tl.multiple_of(rm % M, BLOCK_M), BLOCK_M)
    rbn = tl.max_contiguous(tl.multiple_of(rn % N, BLOCK_N), BLOCK_N)
    rk = pid_z * BLOCK_K + tl.arange(0, BLOCK_K)
    # pointers
    A = A + (ram[:, None] * stride_am + rk[None, :] * stride_ak)
    B = B + (rk[:, None] * stride_bk + rbn[None, :] * stride_bn)

    # rematerialize rm and rn to save registers
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)

    w_factor = tl.load(state_w_ptr + rbn)[None, :]
    x_factor = tl.load(state_x_ptr + ram)[:, None]

    # acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC_TYPE)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    for k in range(0, tl.cdiv(K, BLOCK_K * SPLIT_K)):
        if EVEN_K:
            a = tl.load(A)
            b = tl.load(B)
        else:
            k_remaining = K - k * (BLOCK_K * SPLIT_K)
            a = tl.load(A, mask=rk[None, :] < k_remaining, other=0.0)
            b = tl.load(B, mask=rk[:, None] < k_remaining, other=0.0)
        acc += tl.dot(a, b)
        A += BLOCK_K * SPLIT_K * stride_ak
        B += BLOCK_K * SPLIT_K * stride_bk

    acc = w_factor * (x_factor * (acc * divfactor))
    acc = acc.to(C.dtype.element_ty)

    if has_bias:
        bias = tl.load(bias + rn).to(C.dtype.element_ty)
        acc = acc + bias[None, :]

    C = C + (rm[:, None] * stride_cm + rn[None, :] * stride_cn)
    mask = (rm < M)[:, None] & (rn < N)[None, :]
    # handles write-back with reduction-splitting
    if SPLIT_K == 1:
        tl.store(C, acc, mask=mask)
    else:
        tl.atomic_add(C, acc, mask=mask)


def int8_matmul_rowwise_dequantize(a, b, state_x, state_w, bias):
    divfactor = 1.0 / (127.0 * 127.0)

    has_bias = 0 if bias is None else 1

    device = a.device
    # handle non-contiguous inputs if necessary
    if a.stride(0) > 1 and a.stride(1) > 1:
        a = a.contiguous()
    if b.stride(0) > 1 and b.stride(1) > 1:
        b = b.contiguous()
    # checks constraints
    assert a.shape[1] == b.shape[0], "incompatible dimensions"
    M, K = a.shape
    _, N = b.shape
    # allocates output
    c = torch.empty((M, N), device=device, dtype=torch.float16)
    # accumulator types
    ACC_TYPE = tl.float32  # if a.dtype in [torch.float16, torch.bfloat16, torch.float32] else tl.int32
    # launch int8_matmul_rowwise_dequantize kernel
    grid = lambda META: (triton.cdiv(M, META["BLOCK_M"]) * triton.cdiv(N, META["BLOCK_N"]), META["SPLIT_K"])
    _int8_matmul_rowwise_dequantize[grid](
        a, b, c, bias, state_x, state_w, M, N, K, divfactor, has_bias,
        a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        GROUP_M=8, ACC_TYPE=ACC_TYPE,
    )
    return c


# ---- the suite's check and benchmark --------------------------------------------------------------

def _reference(x, w, sx, sw, bias):
    out = (x.double() @ w.double().t()) * sx.double()[:, None] * sw.double()[None, :] / (127.0 * 127.0)
    return out if bias is None else out + bias.double()[None, :]


def check() -> bool:
    torch.manual_seed(0)
    ok = True
    for M, N, K, with_bias in [(1000, 1100, 999, True), (300, 4100, 1024, False)]:
        x = torch.randint(-127, 128, (M, K), dtype=torch.int8, device="cuda")
        w = torch.randint(-127, 128, (N, K), dtype=torch.int8, device="cuda")
        sx = (torch.rand(M, device="cuda") * 3.5 + 0.5).half()
        sw = (torch.rand(N, device="cuda") * 3.5 + 0.5).half()
        bias = torch.randn(N, device="cuda").half() if with_bias else None
        # The original reads bias[rn] unmasked past N; give it room (the Tritium port masks it).
        if bias is not None:
            bias = torch.cat([bias, torch.zeros(256, device="cuda", dtype=torch.half)])[:N]
        out = int8_matmul_rowwise_dequantize(x, w.t(), sx, sw, bias)
        ref = _reference(x, w, sx, sw, bias)
        rel = ((out.double() - ref).norm() / ref.norm()).item()
        good = rel <= 1e-3 and bool(torch.isfinite(out).all())
        print(f"{NAME} (Triton) {M}x{N}x{K} bias={with_bias}: rel err {rel:.2e} {'OK' if good else 'FAILED'}")
        ok = ok and good
    return ok


def bench() -> list:
    rows = []
    for M, N, K in [(8192, 4096, 1024), (8192, 8192, 2048), (8192, 16384, 4096)]:
        x = (torch.randn(M, K, device="cuda") * 40).clamp(-127, 127).to(torch.int8)
        w = (torch.randn(N, K, device="cuda") * 40).clamp(-127, 127).to(torch.int8)
        sx = torch.full((M,), 1.5, device="cuda", dtype=torch.float16)
        sw = torch.full((N,), 2.5, device="cuda", dtype=torch.float16)
        wt = w.t()
        ms = triton.testing.do_bench(lambda: int8_matmul_rowwise_dequantize(x, wt, sx, sw, None), return_mode="median")
        rows.append({"shape": f"M={M} N={N} K={K} int8", "ms": ms, "rate": 2.0 * M * N * K * 1e-12 / (ms * 1e-3),
                     "unit": "TOP/s"})
    return rows
