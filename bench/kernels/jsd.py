"""Liger-Kernel's generalised Jensen-Shannon divergence beside kernels/jsd.cpp.

The original, loaded from its upstream file (bench/kernels/_upstream.py says where; Liger's helpers
through _liger.py): linkedin/Liger-Kernel src/liger_kernel/ops/jsd.py at ead96b618e5c: _jsd_kernel,
MAX_FUSED_SIZE (on infer_device(), "cuda" here), jsd_forward and jsd_backward. check() runs both
against float64 (the three beta branches, labels with ignore_index rows, f32 and bf16); bench()
times jsd_forward on benchmark_jsd.py's default model vocabulary (llama_3_8b, V = 128256, fp32
log_softmax inputs, beta 0.5, no labels) over the BT sweep, GB/s from the bytes the kernel moves
(X and Y read, the f32 loss and dX written).
"""
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _liger  # noqa: E402

NAME = "jsd"
UPSTREAM = [_liger.ops_file("jsd")]


def _original():
    return _liger.load("jsd", ["_jsd_kernel", "MAX_FUSED_SIZE", "jsd_forward", "jsd_backward"])


def _reference(x, y, labels, beta, ignore_index):
    q, p = x.exp(), y.exp()
    if beta == 0.0:
        loss, dx = p * (y - x), -p
    elif beta == 1.0:
        loss = q * (x - y)
        dx = loss + q
    else:
        m = beta * p + (1 - beta) * q
        loss = beta * p * y + (1 - beta) * q * x - m * m.log()
        dx = (1 - beta) * q * (x - m.log())
    n = x.shape[0]
    if labels is not None:
        keep = (labels != ignore_index)[:, None]
        loss, dx = loss * keep, dx * keep
        n = int(keep.sum())
    return loss.sum() / n, dx / n


def check() -> bool:
    ns = _original()
    torch.manual_seed(0)
    ok = True
    for BT, V, dtype, beta, has_label in [(3, 66000, torch.float32, 0.5, True), (9, 700, torch.float32, 0.0, True),
                                          (9, 700, torch.float32, 1.0, False), (7, 1100, torch.bfloat16, 0.3, True),
                                          (5, 900, torch.float32, 0.5, False)]:
        x = torch.randn(BT, V, device="cuda").log_softmax(-1).to(dtype)
        y = torch.randn(BT, V, device="cuda").log_softmax(-1).to(dtype)
        labels = torch.randint(0, V, (BT,), device="cuda")
        labels[1::3] = -100
        labels = labels if has_label else None
        ref_loss, ref_dx = _reference(x.double(), y.double(), labels, beta, -100)
        loss, dx = ns["jsd_forward"](x, y, labels, beta, -100, has_label)
        grad = ns["jsd_backward"](dx, torch.tensor(0.75, device="cuda"))
        bound = 1e-2 if dtype == torch.bfloat16 else 1e-5
        for what, got, want in (("loss", loss, ref_loss), ("grad", grad, ref_dx * 0.75)):
            rel = ((got.double() - want).norm() / want.norm()).item()
            good = rel <= bound and bool(torch.isfinite(got).all())
            print(f"{NAME} (Triton) {what} {BT}x{V} {dtype} beta={beta} labels={has_label}: rel err {rel:.2e} "
                  f"{'OK' if good else 'FAILED'}")
            ok = ok and good
    return ok


def bench() -> list:
    ns = _original()
    rows = []
    V = 128256
    for BT in (1024, 2048, 4096, 8192):
        x = torch.randn(BT, V, device="cuda").log_softmax(-1)
        y = torch.randn(BT, V, device="cuda").log_softmax(-1)
        nbytes = 4 * BT * V * 4
        ms = triton.testing.do_bench(lambda: ns["jsd_forward"](x, y, None, 0.5, -100, False), return_mode="median")
        rows.append({"shape": f"fwd+grad BT={BT} V={V} f32 beta=0.5", "ms": ms, "rate": _liger.gbps(nbytes, ms),
                     "unit": "GB/s"})
        del x, y
    return rows


if __name__ == "__main__":
    ok = check()
    for r in bench():
        print(f"bench {NAME} | {r['shape']} | {r['ms']:.4f} | {r['rate']:.2f} {r['unit']}")
    raise SystemExit(0 if ok else 1)
