"""Liger-Kernel's KL-divergence kernels beside kernels/kl_div.cpp.

The original, loaded from its upstream file (bench/kernels/_upstream.py says where; Liger's helpers
through _liger.py): linkedin/Liger-Kernel src/liger_kernel/ops/kl_div.py at ead96b618e5c:
get_num_warps, MAX_FUSED_SIZE (its CUDA branch), the reduction-mode constants, _kldiv_kernel_forward,
_kldiv_kernel_backward, kldiv_forward_triton and kldiv_backward_triton. check() runs both against
float64 (every reduction, both target spaces); bench() times both wrappers on benchmark_kl_div.py's
default model vocabulary (llama_3_8b, V = 128256, fp32, batchmean) over the BT sweep, GB/s from the
bytes the kernels move.
"""
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _liger  # noqa: E402

NAME = "kl_div"
UPSTREAM = [_liger.ops_file("kl_div")]


def _original():
    # MAX_FUSED_SIZE is set by a top-level if on infer_device(); the CUDA branch's value.
    return _liger.load("kl_div", ["get_num_warps", "_REDUCTION_MODE_NONE", "_REDUCTION_MODE_SUM", "_REDUCTION_MODE_MEAN",
                                  "_REDUCTION_MODE_BATCHMEAN", "_str_to_reduction_mode", "_kldiv_kernel_forward",
                                  "_kldiv_kernel_backward", "kldiv_forward_triton", "kldiv_backward_triton"],
                       extra={"MAX_FUSED_SIZE": 65536 // 4})


def check() -> bool:
    ns = _original()
    torch.manual_seed(0)
    ok = True
    for BT, V, dtype, log_target, reduction in [(7, 20000, torch.float32, False, "batchmean"),
                                                (9, 700, torch.float32, True, "none"),
                                                (9, 700, torch.float32, False, "sum"),
                                                (5, 1100, torch.bfloat16, True, "mean")]:
        y_pred = torch.randn(BT, V, device="cuda").log_softmax(-1).to(dtype)
        t = torch.randn(BT, V, device="cuda")
        y_true = (t.log_softmax(-1) if log_target else t.softmax(-1)).to(dtype)
        ref = torch.nn.functional.kl_div(y_pred.double(), y_true.double(), reduction=reduction, log_target=log_target)
        ref_grad = -(y_true.double().exp() if log_target else y_true.double()) * 0.5
        loss = ns["kldiv_forward_triton"](y_pred, y_true, log_target, reduction, 1e-10)
        grads = torch.empty_like(y_true)
        grad = ns["kldiv_backward_triton"](y_true, torch.tensor(0.5, device="cuda"), grads, log_target)
        bound = 1e-2 if dtype == torch.bfloat16 else 1e-5
        for what, got, want in (("loss", loss, ref), ("grad", grad, ref_grad)):
            rel = ((got.double() - want).norm() / want.norm()).item()
            good = rel <= bound and bool(torch.isfinite(got).all())
            print(f"{NAME} (Triton) {what} {BT}x{V} {dtype} {reduction} log_target={log_target}: rel err {rel:.2e} "
                  f"{'OK' if good else 'FAILED'}")
            ok = ok and good
    return ok


def bench() -> list:
    ns = _original()
    rows = []
    V = 128256
    for BT in (1024, 2048, 4096, 8192):
        y_pred = torch.randn(BT, V, device="cuda")
        y_true = torch.rand(BT, V, device="cuda")
        grads = torch.empty(BT, V, device="cuda")
        one = torch.tensor(1.0, device="cuda")
        nbytes = BT * V * 4
        ms = triton.testing.do_bench(lambda: ns["kldiv_forward_triton"](y_pred, y_true, False, "batchmean", 1e-10),
                                     return_mode="median")
        rows.append({"shape": f"fwd BT={BT} V={V} f32 batchmean", "ms": ms, "rate": _liger.gbps(2 * nbytes, ms), "unit": "GB/s"})
        ms = triton.testing.do_bench(lambda: ns["kldiv_backward_triton"](y_true, one, grads, False), return_mode="median")
        rows.append({"shape": f"bwd BT={BT} V={V} f32", "ms": ms, "rate": _liger.gbps(2 * nbytes, ms), "unit": "GB/s"})
    return rows


if __name__ == "__main__":
    ok = check()
    for r in bench():
        print(f"bench {NAME} | {r['shape']} | {r['ms']:.4f} | {r['rate']:.2f} {r['unit']}")
    raise SystemExit(0 if ok else 1)
