"""Triton's tutorial 08 (grouped GEMM, pointer arrays) beside kernels/grouped_gemm.cpp.

The original, loaded from its upstream file (bench/kernels/_upstream.py says where):
triton-lang/triton python/tutorials/08-grouped-gemm.py at 7649d87cce6c: grouped_matmul_kernel
(autotuned, key group_size), group_gemm_fn and triton_perf_fn. check() runs group_gemm_fn against
torch.matmul; bench() times triton_perf_fn (the kernel launch alone, as the tutorial's
benchmark_square_matrices and benchmark_batches) with triton.testing.do_bench, median.
"""
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _upstream  # noqa: E402

NAME = "grouped_gemm"
UPSTREAM = [("triton-lang/triton", "python/tutorials/08-grouped-gemm.py", "7649d87cce6c12361bb9da234b9b227b2880b499")]


def _original():
    _upstream.require(UPSTREAM)
    repo, path, _ = UPSTREAM[0]
    return _upstream.load(repo, path, ["DEVICE", "is_cuda", "supports_tma", "num_sms", "grouped_matmul_kernel",
                                       "group_gemm_fn", "triton_perf_fn"])


def _arrays(group_A, group_B, group_C):
    """The device arrays triton_perf_fn takes, built as the tutorial's benchmarks build them."""
    dev = group_A[0].device
    return (torch.tensor([a.data_ptr() for a in group_A], device=dev),
            torch.tensor([b.data_ptr() for b in group_B], device=dev),
            torch.tensor([c.data_ptr() for c in group_C], device=dev),
            torch.tensor([s for a, b in zip(group_A, group_B) for s in (a.shape[0], b.shape[1], a.shape[1])],
                         dtype=torch.int32, device=dev),
            torch.tensor([s for a, b, c in zip(group_A, group_B, group_C) for s in (a.stride(0), b.stride(0), c.stride(0))],
                         dtype=torch.int32, device=dev))


def check() -> bool:
    ns = _original()
    torch.manual_seed(0)
    # Multiples of the largest tiles (the kernel assumes full tiles), different tile counts per gemm.
    sizes = [(384, 256, 320), (128, 128, 64), (256, 640, 192), (128, 384, 128)]
    group_A = [torch.randn((m, k), device="cuda", dtype=torch.float16) for m, n, k in sizes]
    group_B = [torch.randn((k, n), device="cuda", dtype=torch.float16) for m, n, k in sizes]
    out = ns["group_gemm_fn"](group_A, group_B)
    num = den = 0.0
    for a, b, c in zip(group_A, group_B, out):
        ref = a.double() @ b.double()
        num += (c.double() - ref).pow(2).sum().item()
        den += ref.pow(2).sum().item()
    rel = (num / den) ** 0.5
    print(f"{NAME} (Triton): rel err {rel:.2e} (bound 1e-03)")
    return rel <= 1e-3


def _shapes():
    for n in (128, 256, 512, 1024):
        yield n, n, n, f"group 4 x M=N=K={n} f16"
    for m in (128, 256, 512, 1024):
        yield m, 8192, 8192, f"group 4 x M={m} N=K=8192 f16"


def bench() -> list:
    ns = _original()
    rows = []
    for m, n, k, shape in _shapes():
        group_size = 4
        group_A = [torch.rand((m, k), device="cuda", dtype=torch.float16) for _ in range(group_size)]
        group_B = [torch.rand((k, n), device="cuda", dtype=torch.float16) for _ in range(group_size)]
        group_C = [torch.empty((m, n), device="cuda", dtype=torch.float16) for _ in range(group_size)]
        arrays = _arrays(group_A, group_B, group_C)
        ms = triton.testing.do_bench(lambda: ns["triton_perf_fn"](*arrays, group_size), return_mode="median")
        rows.append({"shape": shape, "ms": ms, "rate": _upstream.tflops(2.0 * group_size * m * n * k, ms),
                     "unit": "TFLOP/s"})
    return rows


if __name__ == "__main__":
    ok = check()
    for r in bench():
        print(f"bench {NAME} | {r['shape']} | {r['ms']:.4f} | {r['rate']:.2f} {r['unit']}")
    raise SystemExit(0 if ok else 1)
