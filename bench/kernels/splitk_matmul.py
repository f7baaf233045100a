"""Triton's own split-K library matmul (triton.ops.matmul of Triton 2.x) beside kernels/splitk_matmul.cpp.

The original, loaded from its upstream file (bench/kernels/_upstream.py says where):
triton-lang/triton python/triton/ops/matmul.py at 0922ae1a14ee: _ordered_datatypes,
get_higher_dtype, init_to_zero, get_configs_io_bound, the autotuned _kernel and _matmul._call.
Triton 3.0 removed triton.ops, and its perf model (python/triton/ops/matmul_perf_model.py) calls
driver APIs Triton 3.6 no longer has, so early_config_prune and estimate_matmul_time below are
ports of it to Triton 3.6's driver properties (the same formulas, as kernels/splitk_matmul.cpp
ports them); the file's relative imports (Config, autotune, cdiv, heuristics, jit, language) are
provided from triton. Where the installed tl.dot has no allow_tf32 argument, the kernel's call
is rewritten to the equivalent input_precision at load time (the only change to its text).
bench() times matmul on the shapes of Triton's python/test/regression/test_performance.py that
timed triton.ops.matmul (f16), with triton.testing.do_bench, median.
"""
import heapq
import inspect
import os
import re
import sys

import torch
import triton
import triton.language as tl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _upstream  # noqa: E402

NAME = "splitk_matmul"
UPSTREAM = [("triton-lang/triton", "python/triton/ops/matmul.py", "0922ae1a14ee6d5fb332f4f10e9334c911f3729c")]


# ---- matmul_perf_model, on Triton 3.6's driver properties ------------------------------------------

def _props():
    return triton.runtime.driver.active.utils.get_device_properties(torch.cuda.current_device())


def get_max_tensorcore_tflops(dtype, clock_rate):
    num_subcores = _props()["multiprocessor_count"] * 4
    if torch.cuda.get_device_capability()[0] < 8:
        ops_per_sub_core = 256
    elif dtype in [torch.float32, torch.int32]:
        ops_per_sub_core = 256
    elif dtype in [torch.float16, torch.bfloat16, torch.int16]:
        ops_per_sub_core = 512
    else:
        ops_per_sub_core = 1024
    return num_subcores * clock_rate * ops_per_sub_core * 1e-9


def get_max_simd_tflops(dtype, clock_rate):
    num_subcores = _props()["multiprocessor_count"] * 4
    ops_per_sub_core = 32 if dtype == torch.float32 else 64
    return num_subcores * clock_rate * ops_per_sub_core * 1e-9


def get_dram_gbps():
    p = _props()
    return p["mem_clock_rate"] * p["mem_bus_width"] * 2 / 1e6 / 8


def get_tflops(num_ctas, num_warps, dtype):
    total_warps = num_ctas * min(num_warps, 4)
    num_subcores = _props()["multiprocessor_count"] * 4
    clock = _props()["sm_clock_rate"]  # kHz
    if torch.cuda.get_device_capability()[0] < 8 and dtype == torch.float32:
        return min(num_subcores, total_warps) / num_subcores * get_max_simd_tflops(dtype, clock)
    return min(num_subcores, total_warps) / num_subcores * get_max_tensorcore_tflops(dtype, clock)


def estimate_matmul_time(num_warps, num_stages, A, B, C, M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, SPLIT_K, debug=False,
                         **kwargs):
    dtype = A.dtype
    dtsize = A.element_size()
    num_cta_m = triton.cdiv(M, BLOCK_M)
    num_cta_n = triton.cdiv(N, BLOCK_N)
    num_ctas = num_cta_m * num_cta_n * SPLIT_K
    M, N = max(M, BLOCK_M), max(N, BLOCK_N)
    total_ops = 2 * M * N * K / (1024 * 1024 * 1024)
    compute_ms = total_ops / get_tflops(num_ctas, num_warps, dtype)
    active_cta_ratio_bw1 = min(1, num_ctas / 32)
    active_cta_ratio_bw2 = max(min(1, (num_ctas - 32) / (108 - 32)), 0)
    dram_bw = get_dram_gbps() * (active_cta_ratio_bw1 * 0.95 + active_cta_ratio_bw2 * 0.05)
    l2_bw = dram_bw * 4
    load_a_dram = M * K * dtsize * (1 + 0.2 * (num_cta_n - 1))
    load_a_l2 = M * K * dtsize * 0.8 * (num_cta_n - 1)
    load_b_dram = N * K * dtsize * (1 + 0.2 * (num_cta_m - 1))
    load_b_l2 = N * K * dtsize * 0.8 * (num_cta_m - 1)
    total_dram = (load_a_dram + load_b_dram) / (1024 * 1024)
    total_l2 = (load_a_l2 + load_b_l2) / (1024 * 1024)
    load_ms = total_dram / dram_bw + total_l2 / l2_bw
    store_bw = dram_bw * 0.6
    store_c_dram = M * N * dtsize * SPLIT_K / (1024 * 1024)
    store_ms = store_c_dram / store_bw
    if SPLIT_K != 1:
        store_ms += M * N * 2 / (1024 * 1024) / store_bw
    return max(compute_ms, load_ms) + store_ms


def early_config_prune(configs, named_args, **kwargs):
    capability = torch.cuda.get_device_capability()
    dtsize = named_args["A"].element_size()
    dtype = named_args["A"].dtype
    max_shared_memory = _props()["max_shared_mem"]
    configs = [c for c in configs
               if (c.kwargs["BLOCK_M"] + c.kwargs["BLOCK_N"]) * c.kwargs["BLOCK_K"] * c.num_stages * dtsize <= max_shared_memory]
    if dtype not in [torch.float16, torch.float32]:
        configs = [c for c in configs if c.kwargs["SPLIT_K"] == 1]
    configs_map = {}
    for c in configs:
        kw = c.kwargs
        configs_map.setdefault((kw["BLOCK_M"], kw["BLOCK_N"], kw["BLOCK_K"], kw["SPLIT_K"], c.num_warps), []).append(
            (c, c.num_stages))
    pruned = []
    for (bm, bn, bk, _sk, num_warps), v in configs_map.items():
        if capability[0] >= 8:
            mma_cycles = bm * bn * bk / (16 * 8 * 16) / min(4, num_warps) * 8
            optimal = 300 / mma_cycles
            nearest = heapq.nsmallest(2, v, key=lambda x: 10 + abs(x[1] - optimal) if (x[1] - optimal) < 0 else x[1] - optimal)
            pruned += [n[0] for n in nearest]
        else:
            v[0][0].num_stages = 2
            pruned.append(v[0][0])
    return pruned


def _patch(source):
    """tl.dot(..., allow_tf32=x) -> input_precision where the installed Triton dropped allow_tf32."""
    if "allow_tf32" in inspect.signature(tl.dot).parameters:
        return source
    return re.sub(r"allow_tf32=allow_tf32\)", 'input_precision="tf32" if allow_tf32 else "ieee")', source)


def _original():
    _upstream.require(UPSTREAM)
    repo, path, _ = UPSTREAM[0]
    ns = {"Config": triton.Config, "autotune": triton.autotune, "cdiv": triton.cdiv, "heuristics": triton.heuristics,
          "jit": triton.jit, "early_config_prune": early_config_prune, "estimate_matmul_time": estimate_matmul_time}
    return _upstream.load(repo, path, ["_ordered_datatypes", "get_higher_dtype", "init_to_zero", "get_configs_io_bound",
                                       "_kernel", "_matmul"], ns, patch=_patch)


def _matmul(ns, a, b):
    return ns["_matmul"]._call(a, b, None, True, True)  # forward's defaults


def check() -> bool:
    ns = _original()
    torch.manual_seed(0)
    ok = True
    for m, n, k, dtype, bound in [(130, 66, 250, torch.float16, 1e-3), (16, 1024, 4096, torch.float16, 1e-3),
                                  (61, 90, 77, torch.bfloat16, 1e-2), (50, 33, 200, torch.float32, 1e-3)]:
        a = torch.randn((m, k), device="cuda", dtype=dtype)
        b = torch.randn((k, n), device="cuda", dtype=dtype)
        c = _matmul(ns, a, b)
        ref = a.double() @ b.double()
        rel = ((c.double() - ref).norm() / ref.norm()).item()
        print(f"{NAME} (Triton) {m}x{n}x{k} {dtype}: rel err {rel:.2e} (bound {bound:.0e})")
        ok = ok and rel <= bound
    return ok


SHAPES = [(1024, 1024, 1024), (8192, 8192, 8192), (16, 4096, 4096), (64, 8192, 8192), (4096, 64, 4096), (16, 1024, 1024)]


def bench() -> list:
    ns = _original()
    rows = []
    for m, n, k in SHAPES:
        a = torch.randn((m, k), device="cuda", dtype=torch.float32).to(torch.float16)
        b = torch.randn((k, n), device="cuda", dtype=torch.float32).to(torch.float16)
        ms = triton.testing.do_bench(lambda: _matmul(ns, a, b), return_mode="median")
        rows.append({"shape": f"M={m} N={n} K={k} f16", "ms": ms, "rate": _upstream.tflops(2.0 * m * n * k, ms),
                     "unit": "TFLOP/s"})
    return rows


if __name__ == "__main__":
    ok = check()
    for r in bench():
        print(f"bench {NAME} | {r['shape']} | {r['ms']:.4f} | {r['rate']:.2f} {r['unit']}")
    raise SystemExit(0 if ok else 1)
