"""Liger-Kernel's GroupNorm kernels beside kernels/group_norm.cpp.

The original, loaded from its upstream file (bench/kernels/_upstream.py says where; Liger's helpers
through _liger.py): linkedin/Liger-Kernel src/liger_kernel/ops/group_norm.py at ead96b618e5c:
MAX_FUSED_SIZE (its non-NPU branch), _group_norm_forward_kernel, _group_norm_backward_kernel,
group_norm_forward and group_norm_backward, with libdevice's rsqrt imported as the file imports it.
check() runs both against float64; bench() times both wrappers on benchmark_group_norm.py's
default model (llama_3_8b: 4096 channels, 4 a group, H = 512, bf16) over the BT sweep, GB/s from
the bytes the kernels move.
"""
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _liger  # noqa: E402

NAME = "group_norm"
UPSTREAM = [_liger.ops_file("group_norm")]


def _original():
    try:
        from triton.language.extra.libdevice import rsqrt
    except ModuleNotFoundError:
        from triton.language.extra.cuda.libdevice import rsqrt
    return _liger.load("group_norm", ["_group_norm_forward_kernel", "_group_norm_backward_kernel", "group_norm_forward",
                                      "group_norm_backward"], extra={"rsqrt": rsqrt, "MAX_FUSED_SIZE": 65536})


def check() -> bool:
    ns = _original()
    torch.manual_seed(0)
    ok = True
    for batch, C, groups, H, dtype in [(3, 12, 3, 50, torch.float32), (2, 8, 4, 37, torch.float32),
                                       (3, 8, 4, 37, torch.bfloat16)]:
        x = (torch.randn(batch, C, H, device="cuda") * 1.5 + 0.7).to(dtype)
        w = (torch.randn(C, device="cuda") * 0.5 + 1.0).to(dtype)
        b = (torch.randn(C, device="cuda") * 0.5).to(dtype)
        dy = torch.randn(batch, C, H, device="cuda").to(dtype)
        xd, wd, bd = (t.double().requires_grad_() for t in (x, w, b))
        ref = torch.nn.functional.group_norm(xd, groups, wd, bd, 1e-6)
        ref.backward(dy.double())
        y, _, mean, rstd, _ = ns["group_norm_forward"](x, C, groups, w, b, 1e-6)
        dx, dw, db = ns["group_norm_backward"](dy, x, w, b, mean, rstd, C, groups)
        bound = 1e-2 if dtype == torch.bfloat16 else 1e-5
        for what, got, want in (("y", y, ref), ("dx", dx, xd.grad), ("dw", dw, wd.grad), ("db", db, bd.grad)):
            want = want.detach()
            rel = ((got.double() - want).norm() / want.norm()).item()
            good = rel <= bound and bool(torch.isfinite(got).all())
            print(f"{NAME} (Triton) {what} {batch}x{C}x{H} groups {groups} {dtype}: rel err {rel:.2e} {'OK' if good else 'FAILED'}")
            ok = ok and good
    return ok


def bench() -> list:
    ns = _original()
    rows = []
    C, H = 4096, 512
    groups = C // 4
    for BT in (1024, 2048, 4096, 8192, 16384):
        M = max(1, BT // H)
        x = torch.randn(M, C, H, device="cuda", dtype=torch.bfloat16)
        dy = torch.randn(M, C, H, device="cuda", dtype=torch.bfloat16)
        w = torch.ones(C, device="cuda", dtype=torch.bfloat16)
        b = torch.zeros(C, device="cuda", dtype=torch.bfloat16)
        _, _, mean, rstd, _ = ns["group_norm_forward"](x, C, groups, w, b, 1e-6)
        nbytes = M * C * H * 2
        shape = f"M={M} C={C} H={H} groups {groups} bf16"
        ms = triton.testing.do_bench(lambda: ns["group_norm_forward"](x, C, groups, w, b, 1e-6), return_mode="median")
        rows.append({"shape": f"fwd {shape}", "ms": ms, "rate": _liger.gbps(3 * nbytes, ms), "unit": "GB/s"})
        ms = triton.testing.do_bench(lambda: ns["group_norm_backward"](dy, x, w, b, mean, rstd, C, groups), return_mode="median")
        rows.append({"shape": f"bwd {shape}", "ms": ms, "rate": _liger.gbps(5 * nbytes, ms), "unit": "GB/s"})
    return rows


if __name__ == "__main__":
    ok = check()
    for r in bench():
        print(f"bench {NAME} | {r['shape']} | {r['ms']:.4f} | {r['rate']:.2f} {r['unit']}")
    raise SystemExit(0 if ok else 1)
