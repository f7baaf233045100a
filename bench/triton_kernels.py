"""Triton's tutorial kernels, one copy for the bench scripts (Triton 3.6's tutorials 02-05).

compare_reductions.py and compare_matmul.py time them beside Tritium on the GPU machine;
triton_sass.py compiles them without a GPU to compare the generated code. This module needs only
triton (no torch), so the GPU-less tool can import it.
"""
import triton
import triton.language as tl


# ---- 02: fused softmax (a persistent row loop, pipelined over STAGES) ---------------------------

@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_rows, n_cols, BLOCK: tl.constexpr,
                   STAGES: tl.constexpr):
    start = tl.program_id(0)
    step = tl.num_programs(0)
    for row in tl.range(start, n_rows, step, num_stages=STAGES):
        cols = tl.arange(0, BLOCK)
        x = tl.load(in_ptr + row * in_stride + cols, mask=cols < n_cols, other=-float("inf"))
        x = x - tl.max(x, axis=0)
        num = tl.exp(x)
        tl.store(out_ptr + row * out_stride + cols, num / tl.sum(num, axis=0), mask=cols < n_cols)



# ---- 04: low-memory dropout, and the tl.rand fingerprint ----------------------------------------

@triton.jit
def seeded_dropout_kernel(x_ptr, out_ptr, n, p, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    keep = tl.rand(seed, offs) > p
    tl.store(out_ptr + offs, tl.where(keep, x / (1 - p), 0.0), mask=mask)


@triton.jit
def rand_kernel(out_ptr, n, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.rand(seed, offs), mask=offs < n)


# ---- 05: layer norm forward, backward dx (+ partial dw/db under a lock), dw/db sums ---------------

@triton.jit
def ln_fwd(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        acc += tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
    mean = tl.sum(acc, axis=0) / N
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        d = tl.where(cols < N, x - mean, 0.)
        acc += d * d
    rstd = 1 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        m = cols < N
        w = tl.load(W + cols, mask=m)
        b = tl.load(B + cols, mask=m)
        x = tl.load(X + cols, mask=m, other=0.).to(tl.float32)
        tl.store(Y + cols, (x - mean) * rstd * w + b, mask=m)


@triton.jit
def ln_bwd_dx(DX, DY, DW, DB, X, W, Mean, Rstd, Lock, stride, N, GROUP: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < N
    X += row * stride
    DY += row * stride
    DX += row * stride
    lock_id = row % GROUP
    Lock += lock_id
    Count = Lock + GROUP
    DW = DW + lock_id * N + cols
    DB = DB + lock_id * N + cols
    x = tl.load(X + cols, mask=m, other=0).to(tl.float32)
    dy = tl.load(DY + cols, mask=m, other=0).to(tl.float32)
    w = tl.load(W + cols, mask=m).to(tl.float32)
    mean = tl.load(Mean + row)
    rstd = tl.load(Rstd + row)
    xhat = tl.where(m, (x - mean) * rstd, 0.)
    wdy = tl.where(m, w * dy, 0.)
    c1 = tl.sum(xhat * wdy, axis=0) / N
    c2 = tl.sum(wdy, axis=0) / N
    tl.store(DX + cols, (wdy - (xhat * c1 + c2)) * rstd, mask=m)
    pdw = (dy * xhat).to(w.dtype)
    pdb = dy.to(w.dtype)
    while tl.atomic_cas(Lock, 0, 1) == 1:
        pass
    count = tl.load(Count)
    if count == 0:
        tl.atomic_xchg(Count, 1)
    else:
        pdw += tl.load(DW, mask=m)
        pdb += tl.load(DB, mask=m)
    tl.store(DW, pdw, mask=m)
    tl.store(DB, pdb, mask=m)
    tl.debug_barrier()
    tl.atomic_xchg(Lock, 0)


@triton.jit
def ln_bwd_dwdb(DW, DB, FINAL_DW, FINAL_DB, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    cols = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    dw = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    db = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for i in range(0, M, BLOCK_M):
        rows = i + tl.arange(0, BLOCK_M)
        m = (rows[:, None] < M) & (cols[None, :] < N)
        offs = rows[:, None] * N + cols[None, :]
        dw += tl.load(DW + offs, mask=m, other=0.)
        db += tl.load(DB + offs, mask=m, other=0.)
    tl.store(FINAL_DW + cols, tl.sum(dw, axis=0), mask=cols < N)
    tl.store(FINAL_DB + cols, tl.sum(db, axis=0), mask=cols < N)


# ---- 03: matrix multiplication (compare_matmul.py wraps it in triton.autotune over these configs) -

def get_cuda_autotune_config():
    c = lambda bm, bn, bk, stages, warps: triton.Config(
        {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 8},
        num_stages=stages, num_warps=warps)
    return [
        c(128, 256, 64, 3, 8), c(64, 256, 32, 4, 4), c(128, 128, 32, 4, 4), c(128, 64, 32, 4, 4),
        c(64, 128, 32, 4, 4), c(128, 32, 32, 4, 4), c(64, 32, 32, 5, 2), c(32, 64, 32, 5, 2),
        # Good config for fp8 inputs.
        c(128, 256, 128, 3, 8), c(256, 128, 128, 3, 8), c(256, 64, 128, 4, 4), c(64, 256, 128, 4, 4),
        c(128, 128, 128, 4, 4), c(128, 64, 64, 4, 4), c(64, 128, 64, 4, 4), c(128, 32, 64, 4, 4),
    ]


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                  GROUP_SIZE_M: tl.constexpr, ACTIVATION: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    if ACTIVATION == "leaky_relu":
        accumulator = leaky_relu(accumulator)
    c = accumulator.to(tl.float16)
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


@triton.jit
def matmul_kernel_block_ptr(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                            BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr):
    """The tutorial's kernel written with block pointers (row-major A, B and C), as
    bench/block_ptr_matmul.cpp writes Tritium's."""
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    first_pid_m = (pid // num_pid_in_group) * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    a_bp = tl.make_block_ptr(a_ptr, (M, K), (K, 1), (pid_m * BLOCK_SIZE_M, 0), (BLOCK_SIZE_M, BLOCK_SIZE_K), (1, 0))
    b_bp = tl.make_block_ptr(b_ptr, (K, N), (N, 1), (0, pid_n * BLOCK_SIZE_N), (BLOCK_SIZE_K, BLOCK_SIZE_N), (1, 0))
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_bp, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_bp, boundary_check=(0, 1), padding_option="zero")
        accumulator = tl.dot(a, b, accumulator)
        a_bp = tl.advance(a_bp, (0, BLOCK_SIZE_K))
        b_bp = tl.advance(b_bp, (BLOCK_SIZE_K, 0))
    c_bp = tl.make_block_ptr(c_ptr, (M, N), (N, 1), (pid_m * BLOCK_SIZE_M, pid_n * BLOCK_SIZE_N),
                             (BLOCK_SIZE_M, BLOCK_SIZE_N), (1, 0))
    tl.store(c_bp, accumulator.to(tl.float16), boundary_check=(0, 1))


@triton.jit
def leaky_relu(x):
    return tl.where(x >= 0, x, 0.01 * x)
