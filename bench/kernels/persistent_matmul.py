"""Triton's tutorial 09 (the non-TMA persistent matmul) beside kernels/persistent_matmul.cpp.

The original, loaded from its upstream file (bench/kernels/_upstream.py says where):
triton-lang/triton python/tutorials/09-persistent-matmul.py at commit 02936a198800 (its tile loop
is tl.range(start_pid, num_tiles, NUM_SMS, flatten=True); its matmul_get_configs has stages 3 and 4):
matmul_get_configs, _matmul_launch_metadata, _compute_pid, matmul_kernel_persistent and
matmul_persistent. check() runs matmul_persistent against a float64 torch product; bench() times
matmul_persistent(a, b.T) as the tutorial's bench(K, dtype) does (M = N = 8192, b = b.T.contiguous()
first, so B reaches the kernel as a column-major view), with triton.testing.do_bench, median.
"""
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _upstream  # noqa: E402

NAME = "persistent_matmul"
UPSTREAM = [("triton-lang/triton", "python/tutorials/09-persistent-matmul.py", "02936a198800b2c0180cf63f2a69e776bcca6d7d")]


def _original():
    _upstream.require(UPSTREAM)
    repo, path, _ = UPSTREAM[0]
    return _upstream.load(repo, path, ["matmul_get_configs", "_matmul_launch_metadata", "_compute_pid",
                                       "matmul_kernel_persistent", "matmul_persistent"])


def check() -> bool:
    ns = _original()
    torch.manual_seed(0)
    ok = True
    for m, n, k, dtype, bound in [(800, 680, 77, torch.float16, 1e-3), (520, 396, 300, torch.float16, 1e-3),
                                  (600, 360, 100, torch.float8_e4m3fn, 5e-2)]:
        a = torch.randn((m, k), device="cuda", dtype=torch.float16).to(dtype)
        b = torch.randn((n, k), device="cuda", dtype=torch.float16).to(dtype).T  # the tutorial's b.T
        c = ns["matmul_persistent"](a, b)
        ref = a.double() @ b.double()
        rel = ((c.double() - ref).norm() / ref.norm()).item()
        print(f"{NAME} (Triton) {m}x{n}x{k} {dtype}: rel err {rel:.2e} (bound {bound:.0e})")
        ok = ok and rel <= bound
    return ok


def bench() -> list:
    ns = _original()
    rows = []
    for k, dtype, name in [(512, torch.float16, "f16"), (4096, torch.float16, "f16"), (512, torch.float8_e4m3fn, "f8e4m3")]:
        m = n = 8192
        a = torch.randn((m, k), device="cuda", dtype=torch.float16).to(dtype)
        b = torch.randn((k, n), device="cuda", dtype=torch.float16).to(dtype)
        b = b.T.contiguous()
        ms = triton.testing.do_bench(lambda: ns["matmul_persistent"](a, b.T), return_mode="median")
        rows.append({"shape": f"M=N={m} K={k} {name}", "ms": ms, "rate": _upstream.tflops(2.0 * m * n * k, ms),
                     "unit": "TFLOP/s"})
    return rows


if __name__ == "__main__":
    ok = check()
    for r in bench():
        print(f"bench {NAME} | {r['shape']} | {r['ms']:.4f} | {r['rate']:.2f} {r['unit']}")
    raise SystemExit(0 if ok else 1)
