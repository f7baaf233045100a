"""Liger-Kernel's squared-ReLU kernels beside kernels/relu_squared.cpp.

The original, loaded from its upstream file (bench/kernels/_upstream.py says where; Liger's helpers
through _liger.py): linkedin/Liger-Kernel src/liger_kernel/ops/relu_squared.py at ead96b618e5c:
_relu_squared_forward_kernel, _relu_squared_backward_kernel, relu_squared_forward and
relu_squared_backward. check() runs both against float64; bench() times both wrappers on
benchmark_relu_squared.py's default model (llama_3_8b, hidden 4096, bf16) over the BT sweep, GB/s
from the bytes the kernels move.
"""
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _liger  # noqa: E402

NAME = "relu_squared"
UPSTREAM = [_liger.ops_file("relu_squared")]


def _original():
    return _liger.load("relu_squared", ["_relu_squared_forward_kernel", "_relu_squared_backward_kernel",
                                        "relu_squared_forward", "relu_squared_backward"])


def check() -> bool:
    ns = _original()
    torch.manual_seed(0)
    ok = True
    for rows, cols, dtype in [(37, 300, torch.float32), (9, 3000, torch.float32), (29, 300, torch.bfloat16)]:
        x = torch.randn(rows, cols, device="cuda").to(dtype)
        dy = torch.randn(rows, cols, device="cuda").to(dtype)
        y = ns["relu_squared_forward"](x)
        dx = ns["relu_squared_backward"](x, dy)
        r = x.double().clamp(min=0)
        bound = 1e-2 if dtype == torch.bfloat16 else 1e-5
        for what, got, want in (("y", y, r * r), ("dx", dx, dy.double() * 2 * r)):
            rel = ((got.double() - want).norm() / want.norm()).item()
            good = rel <= bound and bool(torch.isfinite(got).all())
            print(f"{NAME} (Triton) {what} {rows}x{cols} {dtype}: rel err {rel:.2e} {'OK' if good else 'FAILED'}")
            ok = ok and good
    return ok


def bench() -> list:
    ns = _original()
    rows = []
    H = 4096
    for BT in (1024, 2048, 4096, 8192, 16384, 32768):
        x = torch.randn(BT, H, device="cuda", dtype=torch.bfloat16)
        dy = torch.randn(BT, H, device="cuda", dtype=torch.bfloat16)
        nbytes = BT * H * 2
        ms = triton.testing.do_bench(lambda: ns["relu_squared_forward"](x), return_mode="median")
        rows.append({"shape": f"fwd BT={BT} H={H} bf16", "ms": ms, "rate": _liger.gbps(2 * nbytes, ms), "unit": "GB/s"})
        ms = triton.testing.do_bench(lambda: ns["relu_squared_backward"](x, dy), return_mode="median")
        rows.append({"shape": f"bwd BT={BT} H={H} bf16", "ms": ms, "rate": _liger.gbps(3 * nbytes, ms), "unit": "GB/s"})
    return rows


if __name__ == "__main__":
    ok = check()
    for r in bench():
        print(f"bench {NAME} | {r['shape']} | {r['ms']:.4f} | {r['rate']:.2f} {r['unit']}")
    raise SystemExit(0 if ok else 1)
