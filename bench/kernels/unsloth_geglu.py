"""Unsloth's GEGLU beside kernels/unsloth_geglu.cpp.

The original, loaded from its upstream file (bench/kernels/_upstream.py says where):
unslothai/unsloth unsloth/kernels/geglu.py at 02540371c20f (the constants NUM_INT32_ELEMENTS,
SAFE_INT32_BUFFER_MULTIPLIER, BLOCK_SIZE, INT32_SAFETY_BUFFER and the exact and approximate forward
and backward kernels with their launchers). Unsloth's package is not imported (it patches
transformers on import); its helpers are stood in for as utils.py defines them for Triton >= 3 on
NVIDIA: triton_tanh = libdevice.tanh, torch_gpu_device = torch.cuda.device.
Unsloth ships no benchmark for these kernels: bench() times forward and (in-place) backward, exact
and approximate, on Gemma MLP activations (4 x 2048 tokens, intermediate sizes 14336 and 24576) in
bf16 with triton.testing.do_bench, median, the same shapes as the port's bench.
"""
import math
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _upstream  # noqa: E402

NAME = "unsloth_geglu"
UNSLOTH = "unslothai/unsloth"
UPSTREAM = [(UNSLOTH, "unsloth/kernels/geglu.py", "02540371c20fd468cfee358cc850f56527b54957")]


def _original():
    _upstream.require(UPSTREAM)
    from triton.language.extra import libdevice
    ns = {"triton_tanh": libdevice.tanh, "torch_gpu_device": torch.cuda.device}
    return _upstream.load(UNSLOTH, UPSTREAM[0][1], [
        "NUM_INT32_ELEMENTS", "SAFE_INT32_BUFFER_MULTIPLIER", "BLOCK_SIZE", "INT32_SAFETY_BUFFER",
        "_exact_forward_kernel", "geglu_exact_forward_kernel", "_exact_backward_kernel", "geglu_exact_backward_kernel",
        "_approx_forward_kernel", "geglu_approx_forward_kernel", "_approx_backward_kernel",
        "geglu_approx_backward_kernel"], ns)


def _gelu(x, approx):
    if not approx:
        cdf = 0.5 * (1 + torch.erf(x / math.sqrt(2)))
        return x * cdf, cdf + x * torch.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
    k = math.sqrt(2 / math.pi)
    t = torch.tanh(k * (x + 0.044715 * x ** 3))
    return 0.5 * x * (1 + t), 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x)


def check() -> bool:
    ns = _original()
    torch.manual_seed(0)
    ok = True
    for b, s, hd, dtype, approx, bound in [(2, 3, 333, torch.float32, False, 1e-5), (1, 5, 1000, torch.float16, False, 1e-3),
                                           (3, 2, 777, torch.bfloat16, True, 1e-2), (2, 3, 333, torch.float32, True, 1e-5)]:
        e, g, dw = [(2 * torch.randn((b, s, hd), device="cuda")).to(dtype) for _ in range(3)]
        f, dfde = _gelu(e.double(), approx)
        refs = [f * g.double(), f * g.double(), dw.double() * f, dw.double() * g.double() * dfde]
        kind = "approx" if approx else "exact"
        h = ns[f"geglu_{kind}_forward_kernel"](e, g)
        DW, E, G = dw.clone().view(b * s, hd), e.clone().view(b * s, hd), g.clone().view(b * s, hd)
        ns[f"geglu_{kind}_backward_kernel"](DW, E, G)
        rels = [((t.double().view(-1) - r.view(-1)).norm() / r.norm()).item() for t, r in zip([h, DW, E, G], refs)]
        print(f"{NAME} (Triton) {kind} {b}x{s}x{hd} {dtype}: rel err h {rels[0]:.2e} bwd h {rels[1]:.2e} "
              f"df {rels[2]:.2e} de {rels[3]:.2e} (bound {bound:.0e})")
        ok = ok and max(rels) <= bound
    return ok


def bench() -> list:
    ns = _original()
    rows = []
    batch, seq = 4, 2048
    for approx in (False, True):
        kind = "approx" if approx else "exact"
        for hd in (14336, 24576):
            e, g, dw = [torch.randn((batch, seq, hd), device="cuda").to(torch.bfloat16) for _ in range(3)]
            n = batch * seq * hd
            fwd = triton.testing.do_bench(lambda: ns[f"geglu_{kind}_forward_kernel"](e, g), return_mode="median")
            DW, E, G = dw.view(batch * seq, hd), e.view(batch * seq, hd), g.view(batch * seq, hd)
            bwd = triton.testing.do_bench(lambda: ns[f"geglu_{kind}_backward_kernel"](DW, E, G), return_mode="median")
            shape = f"{kind} {batch}x{seq}x{hd} bf16"
            rows.append({"shape": "forward " + shape, "ms": fwd, "rate": 3 * n * 2 * 1e-9 / (fwd * 1e-3), "unit": "GB/s"})
            rows.append({"shape": "backward " + shape, "ms": bwd, "rate": 6 * n * 2 * 1e-9 / (bwd * 1e-3), "unit": "GB/s"})
    return rows


if __name__ == "__main__":
    ok = check()
    for r in bench():
        print(f"bench {NAME} | {r['shape']} | {r['ms']:.4f} | {r['rate']:.2f} {r['unit']}")
    raise SystemExit(0 if ok else 1)
