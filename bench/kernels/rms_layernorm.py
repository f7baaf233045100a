"""Unsloth's fast RMS LayerNorm beside kernels/rms_layernorm.cpp.

The original, loaded from its upstream files (bench/kernels/_upstream.py says where):
unslothai/unsloth unsloth/kernels/rms_layernorm.py at ee73bcb209df (_rms_layernorm_forward,
_gemma_rms_layernorm_forward, _rms_layernorm_backward with its heuristics, Fast_RMS_Layernorm) and
calculate_settings / MAX_FUSED_SIZE / next_power_of_2 of unsloth/kernels/utils.py. Unsloth's
package is not imported (it patches transformers on import); its torch_gpu_device is stood in for
by torch.cuda.device. Unsloth ships no benchmark for this kernel: bench() times the forward and
the backward on Llama-sized rows (4 x 2048 tokens, hidden 2048 to 16384) in bf16 and f16 with
triton.testing.do_bench, median, the same shapes as the port's bench.
"""
import os
import sys
import types

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _upstream  # noqa: E402

NAME = "rms_layernorm"
UNSLOTH = "unslothai/unsloth"
UPSTREAM = [
    (UNSLOTH, "unsloth/kernels/rms_layernorm.py", "ee73bcb209dfe54818719e4b0b50ed560fa44639"),
    (UNSLOTH, "unsloth/kernels/utils.py", "015bdef0d94a241bcd94eec7a405b1700632180d"),
]


def _original():
    _upstream.require(UPSTREAM)
    ns = _upstream.load(UNSLOTH, UPSTREAM[1][1], ["MAX_FUSED_SIZE", "next_power_of_2", "calculate_settings"])
    ns["torch_gpu_device"] = torch.cuda.device
    return _upstream.load(UNSLOTH, UPSTREAM[0][1], ["_rms_layernorm_forward", "_gemma_rms_layernorm_forward",
                                                    "_rms_layernorm_backward", "Fast_RMS_Layernorm"], ns)


def _forward_backward(ns, X, W, dY, eps, gemma):
    """Fast_RMS_Layernorm.forward then .backward with a stand-in ctx (no autograd graph)."""
    fn = ns["Fast_RMS_Layernorm"]
    saved = {}
    ctx = types.SimpleNamespace(save_for_backward=lambda *t: saved.update(t=t))
    Y = fn.forward(ctx, X, W, eps, gemma)
    ctx.saved_tensors = saved["t"]
    dX = fn.backward(ctx, dY)[0]
    return Y, ctx, dX


def check() -> bool:
    ns = _original()
    torch.manual_seed(0)
    ok = True
    for b, r, c, dtype, gemma, bound in [(2, 5, 100, torch.float32, False, 1e-5), (1, 7, 2500, torch.float16, False, 1e-3),
                                         (3, 3, 333, torch.bfloat16, False, 1e-2), (2, 4, 77, torch.float32, True, 1e-5),
                                         (1, 6, 1000, torch.float16, True, 1e-3), (1, 3, 129, torch.bfloat16, True, 1e-2)]:
        X = torch.randn((b, r, c), device="cuda").to(dtype)
        W = (torch.randn(c, device="cuda") + (0.0 if gemma else 1.0)).to(dtype)
        dY = torch.randn((b, r, c), device="cuda").to(dtype)
        x, w, dy = X.double().requires_grad_(), W.double(), dY.double()
        ref = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * ((w + 1) if gemma else w)
        ref.backward(dy)
        Y, _, dX = _forward_backward(ns, X, W, dY.clone(), 1e-6, gemma)
        rel_y = ((Y.double() - ref.detach()).norm() / ref.norm()).item()
        rel_dx = ((dX.double() - x.grad).norm() / x.grad.norm()).item()
        print(f"{NAME} (Triton) {'gemma ' if gemma else ''}{b}x{r}x{c} {dtype}: rel err Y {rel_y:.2e} dX {rel_dx:.2e} "
              f"(bound {bound:.0e})")
        ok = ok and rel_y <= bound and rel_dx <= bound
    return ok


def bench() -> list:
    ns = _original()
    fn = ns["Fast_RMS_Layernorm"]
    rows = []
    tokens = 4 * 2048
    for dtype, name in [(torch.bfloat16, "bf16"), (torch.float16, "f16")]:
        for n in (2048, 4096, 8192, 16384):
            X = torch.randn((tokens, n), device="cuda").to(dtype)
            W = torch.randn(n, device="cuda").to(dtype)
            dY = torch.randn((tokens, n), device="cuda").to(dtype)
            es = X.element_size()
            _, ctx, _ = _forward_backward(ns, X, W, dY.clone(), 1e-6, False)
            fwd = triton.testing.do_bench(lambda: fn.forward(types.SimpleNamespace(save_for_backward=lambda *t: None),
                                                             X, W, 1e-6, False), return_mode="median")
            bwd = triton.testing.do_bench(lambda: fn.backward(ctx, dY), return_mode="median")
            fwd_bytes = (2.0 * tokens * n + n) * es + 4.0 * tokens
            bwd_bytes = (3.0 * tokens * n + n) * es + 4.0 * tokens
            shape = f"{tokens}x{n} {name}"
            rows.append({"shape": "forward " + shape, "ms": fwd, "rate": fwd_bytes * 1e-9 / (fwd * 1e-3), "unit": "GB/s"})
            rows.append({"shape": "backward " + shape, "ms": bwd, "rate": bwd_bytes * 1e-9 / (bwd * 1e-3), "unit": "GB/s"})
    return rows


if __name__ == "__main__":
    ok = check()
    for r in bench():
        print(f"bench {NAME} | {r['shape']} | {r['ms']:.4f} | {r['rate']:.2f} {r['unit']}")
    raise SystemExit(0 if ok else 1)
