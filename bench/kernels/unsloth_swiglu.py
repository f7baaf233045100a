"""Unsloth's SwiGLU beside kernels/unsloth_swiglu.cpp.

The original, loaded from its upstream file (bench/kernels/_upstream.py says where):
unslothai/unsloth unsloth/kernels/swiglu.py at 3ce187da021b (the constants NUM_INT32_ELEMENTS,
SAFE_INT32_BUFFER_MULTIPLIER, BLOCK_SIZE, INT32_SAFETY_BUFFER, _fg_kernel, swiglu_fg_kernel,
_DWf_DW_dfg_kernel, swiglu_DWf_DW_dfg_kernel). Unsloth's package is not imported (it patches
transformers on import); its torch_gpu_device is stood in for by torch.cuda.device.
Unsloth ships no benchmark for this kernel: bench() times the forward and the (in-place) backward
on Llama MLP activations (4 x 2048 tokens, intermediate sizes 11008 and 14336) in bf16 and f16
with triton.testing.do_bench, median, the same shapes as the port's bench.
"""
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _upstream  # noqa: E402

NAME = "unsloth_swiglu"
UNSLOTH = "unslothai/unsloth"
UPSTREAM = [(UNSLOTH, "unsloth/kernels/swiglu.py", "3ce187da021b17ef8ca001f1abf20817f28f23e0")]


def _original():
    _upstream.require(UPSTREAM)
    ns = {"torch_gpu_device": torch.cuda.device}
    return _upstream.load(UNSLOTH, UPSTREAM[0][1], [
        "NUM_INT32_ELEMENTS", "SAFE_INT32_BUFFER_MULTIPLIER", "BLOCK_SIZE", "INT32_SAFETY_BUFFER", "_fg_kernel",
        "swiglu_fg_kernel", "_DWf_DW_dfg_kernel", "swiglu_DWf_DW_dfg_kernel"], ns)


def check() -> bool:
    ns = _original()
    torch.manual_seed(0)
    ok = True
    for b, s, hd, dtype, bound in [(2, 3, 333, torch.float32, 1e-5), (1, 5, 1000, torch.float16, 1e-3),
                                   (3, 2, 777, torch.bfloat16, 1e-2)]:
        e, g, dw = [(2 * torch.randn((b, s, hd), device="cuda")).to(dtype) for _ in range(3)]
        ed, gd, dwd = e.double(), g.double(), dw.double()
        se = torch.sigmoid(ed)
        f = ed * se
        refs = [f * gd, f * gd, dwd * f, dwd * gd * se * (1 + ed * (1 - se))]
        h = ns["swiglu_fg_kernel"](e, g)
        DW, E, G = dw.clone().view(b * s, hd), e.clone().view(b * s, hd), g.clone().view(b * s, hd)
        ns["swiglu_DWf_DW_dfg_kernel"](DW, E, G)
        rels = [((t.double().view(-1) - r.view(-1)).norm() / r.norm()).item() for t, r in zip([h, DW, E, G], refs)]
        print(f"{NAME} (Triton) {b}x{s}x{hd} {dtype}: rel err h {rels[0]:.2e} bwd h {rels[1]:.2e} df {rels[2]:.2e} "
              f"de {rels[3]:.2e} (bound {bound:.0e})")
        ok = ok and max(rels) <= bound
    return ok


def bench() -> list:
    ns = _original()
    rows = []
    batch, seq = 4, 2048
    for dtype, name in [(torch.bfloat16, "bf16"), (torch.float16, "f16")]:
        for hd in (11008, 14336):
            e, g, dw = [torch.randn((batch, seq, hd), device="cuda").to(dtype) for _ in range(3)]
            es, n = e.element_size(), batch * seq * hd
            fwd = triton.testing.do_bench(lambda: ns["swiglu_fg_kernel"](e, g), return_mode="median")
            DW, E, G = dw.view(batch * seq, hd), e.view(batch * seq, hd), g.view(batch * seq, hd)
            bwd = triton.testing.do_bench(lambda: ns["swiglu_DWf_DW_dfg_kernel"](DW, E, G), return_mode="median")
            shape = f"{batch}x{seq}x{hd} {name}"
            rows.append({"shape": "forward " + shape, "ms": fwd, "rate": 3 * n * es * 1e-9 / (fwd * 1e-3), "unit": "GB/s"})
            rows.append({"shape": "backward " + shape, "ms": bwd, "rate": 6 * n * es * 1e-9 / (bwd * 1e-3), "unit": "GB/s"})
    return rows


if __name__ == "__main__":
    ok = check()
    for r in bench():
        print(f"bench {NAME} | {r['shape']} | {r['ms']:.4f} | {r['rate']:.2f} {r['unit']}")
    raise SystemExit(0 if ok else 1)
