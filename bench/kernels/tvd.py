"""Liger-Kernel's total variation distance loss beside kernels/tvd.cpp.

The original, loaded from its upstream file (bench/kernels/_upstream.py says where; Liger's helpers
through _liger.py): linkedin/Liger-Kernel src/liger_kernel/ops/tvd.py at ead96b618e5c: MAX_FUSED_SIZE,
the reduction-mode constants, get_num_warps, _tv_distance_kernel, tv_distance_forward_triton and
tvd_backward_triton. check() runs both against float64 (every reduction, labels with ignore_index
rows, f32, bf16 and f16); bench() times the forward on benchmark_tvd.py's default model vocabulary
(llama_3_8b, V = 128256, fp32 softmax distributions, batchmean) over the BT sweep, GB/s from the
bytes the kernel moves (p and q read, the gradient written).
"""
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _liger  # noqa: E402

NAME = "tvd"
UPSTREAM = [_liger.ops_file("tvd")]


def _original():
    return _liger.load("tvd", ["MAX_FUSED_SIZE", "_REDUCTION_MODE_NONE", "_REDUCTION_MODE_SUM", "_REDUCTION_MODE_MEAN",
                               "_REDUCTION_MODE_BATCHMEAN", "_str_to_reduction_mode", "get_num_warps",
                               "_tv_distance_kernel", "tv_distance_forward_triton", "tvd_backward_triton"])


def check() -> bool:
    ns = _original()
    torch.manual_seed(0)
    ok = True
    for BT, V, dtype, reduction, has_label in [(7, 20000, torch.float32, "batchmean", True),
                                               (9, 700, torch.float32, "none", True),
                                               (9, 700, torch.float32, "sum", False),
                                               (8, 1100, torch.bfloat16, "mean", True),
                                               (5, 900, torch.float16, "batchmean", False)]:
        p = torch.randn(BT, V, device="cuda").softmax(-1).to(dtype)
        q = torch.randn(BT, V, device="cuda").softmax(-1).to(dtype)
        labels = torch.randint(0, V, (BT,), device="cuda")
        labels[2::3] = -100
        keep = (labels != -100)[:, None].double() if has_label else torch.ones(BT, 1, device="cuda", dtype=torch.float64)
        n = keep.sum().item()
        scale = {"batchmean": 1 / n, "mean": 1 / (n * V)}.get(reduction, 1.0)
        pointwise = 0.5 * (p.double() - q.double()).abs() * keep
        ref = pointwise if reduction == "none" else pointwise.sum() * scale
        ref_grad = torch.where(p > q, 0.5, -0.5).double() * scale * keep * 0.5
        loss, grads = ns["tv_distance_forward_triton"](p, q, labels if has_label else None, reduction, -100, has_label)
        grad = ns["tvd_backward_triton"](torch.tensor(0.5, device="cuda"), grads)
        bound = {torch.bfloat16: 1e-2, torch.float16: 1e-3}.get(dtype, 1e-5)
        for what, got, want in (("loss", loss, ref), ("grad", grad, ref_grad)):
            rel = ((got.double() - want).norm() / want.norm()).item()
            good = rel <= bound and bool(torch.isfinite(got).all())
            print(f"{NAME} (Triton) {what} {BT}x{V} {dtype} {reduction} labels={has_label}: rel err {rel:.2e} "
                  f"{'OK' if good else 'FAILED'}")
            ok = ok and good
    return ok


def bench() -> list:
    ns = _original()
    rows = []
    V = 128256
    for BT in (1024, 2048, 4096, 8192):
        p = torch.randn(BT, V, device="cuda").softmax(-1)
        q = torch.randn(BT, V, device="cuda").softmax(-1)
        nbytes = 3 * BT * V * 4
        ms = triton.testing.do_bench(lambda: ns["tv_distance_forward_triton"](p, q, None, "batchmean", -100, False),
                                     return_mode="median")
        rows.append({"shape": f"fwd+grad BT={BT} V={V} f32 batchmean", "ms": ms, "rate": _liger.gbps(nbytes, ms),
                     "unit": "GB/s"})
        del p, q
    return rows


if __name__ == "__main__":
    ok = check()
    for r in bench():
        print(f"bench {NAME} | {r['shape']} | {r['ms']:.4f} | {r['rate']:.2f} {r['unit']}")
    raise SystemExit(0 if ok else 1)
