"""fused_moe: vLLM's fused MoE grouped GEMM (fused_moe_kernel), under Triton.

The original kernel, its helper and the launching wrapper, transcribed for the benchmark from
vllm-project/vllm vllm/model_executor/layers/fused_moe/fused_moe.py (commit
13cb3e44373beb1c8b9d2c017f565af6f7a1b601, Apache-2.0): write_zeros_to_output, fused_moe_kernel,
invoke_fused_moe_kernel (its fused_moe_kernel branch) and get_default_config. moe_align_block_size
is vLLM's CUDA op; here it is a torch function with the same outputs (the Tritium port does it on
the host), run outside the timing. kernels/fused_moe.cpp is the Tritium port; bench() prints the
shapes its --bench prints.
"""
import torch
import triton
import triton.language as tl

NAME = "fused_moe"


@triton.jit
def write_zeros_to_output(
    c_ptr,
    stride_cm,
    stride_cn,
    pid_n,
    N,
    offs_token,
    token_mask,
    BLOCK_SIZE_M,
    BLOCK_SIZE_N,
    compute_type,
):
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=compute_type)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_token[:, None] + stride_cn * offs_cn[None, :]
    c_mask = token_mask[:, None] & (offs_cn[None, :] < N)
    tl.store(c_ptrs, accumulator, mask=c_mask)


@triton.jit
def fused_moe_kernel(
    # Pointers to matrices
    a_ptr,
    b_ptr,
    c_ptr,
    b_bias_ptr,
    a_scale_ptr,
    b_scale_ptr,
    topk_weights_ptr,
    sorted_token_ids_ptr,
    expert_ids_ptr,
    num_tokens_post_padded_ptr,
    # Matrix dimensions
    N,
    K,
    EM,
    num_valid_tokens,
    # The stride variables represent how much to increase the ptr by when
    # moving by 1 element in a particular dimension. E.g. `stride_am` is
    # how much to increase `a_ptr` by to get the element one row down
    # (A has M rows).
    stride_am,
    stride_ak,
    stride_be,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    stride_asm,
    stride_ask,
    stride_bse,
    stride_bsk,
    stride_bsn,
    stride_bbe,  # bias expert stride
    stride_bbn,  # bias N stride
    # Block size for block-wise quantization
    group_n: tl.constexpr,
    group_k: tl.constexpr,
    # Meta-parameters
    BLOCK_SIZE_M: tl.constexpr,
    BLOCK_SIZE_N: tl.constexpr,
    BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr,
    SPLIT_K: tl.constexpr,
    MUL_ROUTED_WEIGHT: tl.constexpr,
    top_k: tl.constexpr,
    compute_type: tl.constexpr,
    use_fp8_w8a8: tl.constexpr,
    use_int8_w8a8: tl.constexpr,
    use_int8_w8a16: tl.constexpr,
    per_channel_quant: tl.constexpr,
    HAS_BIAS: tl.constexpr,
):
    # -----------------------------------------------------------
    # Map program ids `pid` to the block of C it should compute.
    # This is done in a grouped ordering to promote L2 data reuse.
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(EM, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    # ----------------------------------------------------------
    # Create pointers for the first blocks of A and B.
    num_tokens_post_padded = tl.load(num_tokens_post_padded_ptr)
    if pid_m * BLOCK_SIZE_M >= num_tokens_post_padded:
        return
    offs_token_id = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M).to(tl.int64)
    offs_token = tl.load(sorted_token_ids_ptr + offs_token_id)
    token_mask = offs_token < num_valid_tokens

    off_experts = tl.load(expert_ids_ptr + pid_m).to(tl.int64)
    if off_experts == -1:
        # Write back zeros to the output when the expert is not
        # in the current expert parallel rank.
        write_zeros_to_output(
            c_ptr, stride_cm, stride_cn, pid_n, N, offs_token, token_mask, BLOCK_SIZE_M, BLOCK_SIZE_N, compute_type,
        )
        return

    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N).to(tl.int64)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_token[:, None] // top_k * stride_am + offs_k[None, :] * stride_ak)

    b_ptrs = b_ptr + off_experts * stride_be + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    if use_int8_w8a16:
        b_scale_ptrs = b_scale_ptr + off_experts * stride_bse + offs_bn[None, :] * stride_bsn
        b_scale = tl.load(b_scale_ptrs)

    if use_fp8_w8a8 or use_int8_w8a8:
        # block-wise
        if group_k > 0 and group_n > 0:
            a_scale_ptrs = a_scale_ptr + (offs_token // top_k) * stride_asm
            offs_bsn = offs_bn // group_n
            b_scale_ptrs = b_scale_ptr + off_experts * stride_bse + offs_bsn * stride_bsn
        # channel-wise
        elif per_channel_quant:
            b_scale_ptrs = b_scale_ptr + off_experts * stride_bse + offs_bn[None, :] * stride_bsn
            b_scale = tl.load(b_scale_ptrs)
            # Load per-token scale for activations
            a_scale_ptrs = a_scale_ptr + (offs_token // top_k) * stride_asm
            a_scale = tl.load(a_scale_ptrs, mask=token_mask, other=0.0)[:, None]
        # tensor-wise
        else:
            a_scale = tl.load(a_scale_ptr)
            b_scale = tl.load(b_scale_ptr + off_experts)
    if HAS_BIAS:
        # bias shape: [num_experts, N]
        bias_ptrs = b_bias_ptr + off_experts * stride_bbe + offs_bn * stride_bbn
        bias = tl.load(bias_ptrs, mask=(offs_bn < N), other=0.0)
    # -----------------------------------------------------------
    # Iterate to compute a block of the C matrix.
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        # Load the next block of A and B, generate a mask by checking the
        # K dimension.
        a = tl.load(a_ptrs, mask=token_mask[:, None] & (offs_k[None, :] < K - k * BLOCK_SIZE_K), other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        # We accumulate along the K dimension.
        if use_int8_w8a16:
            accumulator = tl.dot(a, b.to(compute_type), acc=accumulator)
        elif use_fp8_w8a8 or use_int8_w8a8:
            if group_k > 0 and group_n > 0:
                k_start = k * BLOCK_SIZE_K
                offs_ks = k_start // group_k
                a_scale = tl.load(a_scale_ptrs + offs_ks * stride_ask, mask=token_mask, other=0.0)
                b_scale = tl.load(b_scale_ptrs + offs_ks * stride_bsk)

                accumulator += tl.dot(a, b) * a_scale[:, None] * b_scale[None, :]
            else:
                if use_fp8_w8a8:
                    # acc used to enable fp8_fast_accum
                    accumulator = tl.dot(a, b, acc=accumulator)
                else:
                    accumulator += tl.dot(a, b)
        else:
            accumulator += tl.dot(a, b)
        # Advance the ptrs to the next K block.
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    if HAS_BIAS:
        accumulator = accumulator + bias[None, :]
    if MUL_ROUTED_WEIGHT:
        moe_weight = tl.load(topk_weights_ptr + offs_token, mask=token_mask, other=0)
        accumulator = accumulator * moe_weight[:, None]
    if use_int8_w8a16:
        accumulator = (accumulator * b_scale).to(compute_type)
    elif use_fp8_w8a8 or use_int8_w8a8:
        if group_k > 0 and group_n > 0:
            accumulator = accumulator.to(compute_type)
        else:
            accumulator = (accumulator * a_scale * b_scale).to(compute_type)
    else:
        accumulator = accumulator.to(compute_type)

    # -----------------------------------------------------------
    # Write back the block of the output
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_token[:, None] + stride_cn * offs_cn[None, :]
    c_mask = token_mask[:, None] & (offs_cn[None, :] < N)
    tl.store(c_ptrs, accumulator, mask=c_mask)


def invoke_fused_moe_kernel(A, B, C, A_scale, B_scale, topk_weights, sorted_token_ids, expert_ids,
                            num_tokens_post_padded, mul_routed_weight, top_k, config, compute_type,
                            use_fp8_w8a8, use_int8_w8a8, use_int8_w8a16, per_channel_quant, block_shape=None,
                            B_bias=None):
    assert topk_weights is not None or not mul_routed_weight
    assert topk_weights is None or topk_weights.stride(1) == 1
    assert sorted_token_ids.stride(0) == 1
    if use_fp8_w8a8 or use_int8_w8a8:
        assert B_scale is not None
        assert block_shape is None or triton.cdiv(B.size(-2), block_shape[0]) == B_scale.size(-2)
        assert block_shape is None or triton.cdiv(B.size(-1), block_shape[1]) == B_scale.size(-1)
    elif use_int8_w8a16:
        assert B_scale is not None
        assert block_shape is None or block_shape[0] == 0
    else:
        assert A_scale is None
        assert B_scale is None

    M = A.size(0)
    num_tokens = M * top_k

    EM = sorted_token_ids.size(0)
    if A.size(0) < config["BLOCK_SIZE_M"]:
        # optimize for small batch_size.
        EM = min(sorted_token_ids.size(0), A.size(0) * top_k * config["BLOCK_SIZE_M"])
    grid = lambda META: (triton.cdiv(EM, META["BLOCK_SIZE_M"]) * triton.cdiv(B.size(1), META["BLOCK_SIZE_N"]),)
    HAS_BIAS = B_bias is not None
    config = config.copy()
    config["SPLIT_K"] = 1
    BLOCK_SIZE_K = config.pop("BLOCK_SIZE_K")
    if block_shape is not None:
        BLOCK_SIZE_K = min(BLOCK_SIZE_K, min(block_shape[0], block_shape[1]))
    fused_moe_kernel[grid](
        A, B, C, B_bias, A_scale, B_scale, topk_weights, sorted_token_ids, expert_ids, num_tokens_post_padded,
        B.size(1), B.size(2), EM, num_tokens,
        A.stride(0), A.stride(1), B.stride(0), B.stride(2), B.stride(1), C.stride(1), C.stride(2),
        A_scale.stride(0) if A_scale is not None and A_scale.ndim == 2 else 0,
        A_scale.stride(1) if A_scale is not None and A_scale.ndim == 2 else 0,
        B_scale.stride(0) if B_scale is not None and B_scale.ndim >= 2 else 0,
        B_scale.stride(2) if B_scale is not None and B_scale.ndim == 3 else 0,
        B_scale.stride(1) if B_scale is not None and B_scale.ndim >= 2 else 0,
        B_bias.stride(0) if B_bias is not None else 0,
        B_bias.stride(1) if B_bias is not None else 0,
        0 if block_shape is None else block_shape[0],
        0 if block_shape is None else block_shape[1],
        MUL_ROUTED_WEIGHT=mul_routed_weight,
        top_k=top_k,
        compute_type=compute_type,
        use_fp8_w8a8=use_fp8_w8a8,
        use_int8_w8a8=use_int8_w8a8,
        use_int8_w8a16=use_int8_w8a16,
        per_channel_quant=per_channel_quant,
        HAS_BIAS=HAS_BIAS,
        BLOCK_SIZE_K=BLOCK_SIZE_K,
        **config,
    )


def get_default_config(M, E, N, K, topk, dtype, block_shape=None):
    if dtype == "fp8_w8a8" and block_shape is not None:
        # Block-wise quant: BLOCK_SIZE_N must be divisible by block_shape[0]
        # BLOCK_SIZE_K must be divisible by block_shape[1]
        config = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": block_shape[0], "BLOCK_SIZE_K": block_shape[1],
                  "GROUP_SIZE_M": 32, "SPLIT_K": 1, "num_warps": 4, "num_stages": 3}
    elif M <= E:
        config = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1, "SPLIT_K": 1}
    else:
        config = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8, "SPLIT_K": 1}
    return config


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
        invoke_fused_moe_kernel(A, W, C, A_scale, B_scale, weights if routed else None, *ids, routed, top_k, config,
                                TL_DTYPE[dtype], fp8, False, w8a16, False, block_shape, bias)
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
        fn = lambda: invoke_fused_moe_kernel(A, W, C, A_scale, B_scale, None, *ids, False, top_k, config, tl.bfloat16,
                                             fp8, False, False, False, block_shape, None)
        ms = triton.testing.do_bench(fn, return_mode="median")
        rows.append({"shape": f"M={M} E={E} top_k={top_k} N={N} K={K} " + ("fp8_w8a8 block=[128,128]" if fp8 else "bf16"),
                     "ms": ms, "rate": 2.0 * M * top_k * N * K * 1e-12 / (ms * 1e-3), "unit": "TFLOP/s"})
    return rows
