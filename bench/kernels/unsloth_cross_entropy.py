"""Unsloth's fast cross-entropy loss beside kernels/unsloth_cross_entropy.cpp.

The original, loaded from its upstream files (bench/kernels/_upstream.py says where):
unslothai/unsloth unsloth/kernels/cross_entropy_loss.py at ee73bcb209df (_cross_entropy_forward,
_chunked_cross_entropy_forward, _cross_entropy_backward with their heuristics,
Fast_CrossEntropyLoss) and MAX_FUSED_SIZE / next_power_of_2 / calculate_settings of
unsloth/kernels/utils.py. Unsloth's package is not imported (it patches transformers on import);
its helpers are stood in for as utils.py defines them for Triton >= 3 on NVIDIA (they sit in an
`if` there, so they cannot be loaded by name): triton_tanh = libdevice.tanh, triton_cast =
tl.cast, is_cdna() False, torch_gpu_device = torch.cuda.device. The autograd function's forward
and backward are called with a plain object as ctx.
Unsloth ships no benchmark for this kernel: bench() times the forward and the (in-place) backward
on 4 x 1024 tokens over Llama-2's (32000), Llama-3's (128256) and Gemma 2's (256000, softcap 30)
vocabularies in bf16 with triton.testing.do_bench, median, as the port's bench.
"""
import os
import sys
import types

import torch
import triton
import triton.language as tl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _upstream  # noqa: E402

NAME = "unsloth_cross_entropy"
UNSLOTH = "unslothai/unsloth"
UPSTREAM = [
    (UNSLOTH, "unsloth/kernels/cross_entropy_loss.py", "ee73bcb209dfe54818719e4b0b50ed560fa44639"),
    (UNSLOTH, "unsloth/kernels/utils.py", "015bdef0d94a241bcd94eec7a405b1700632180d"),
]


def _original():
    _upstream.require(UPSTREAM)
    from triton.language.extra import libdevice
    ns = _upstream.load(UNSLOTH, UPSTREAM[1][1], ["MAX_FUSED_SIZE", "next_power_of_2", "calculate_settings"])
    ns.update(triton_tanh=libdevice.tanh, triton_cast=tl.cast, is_cdna=lambda: False, torch_gpu_device=torch.cuda.device)
    return _upstream.load(UNSLOTH, UPSTREAM[0][1], ["_cross_entropy_forward", "_chunked_cross_entropy_forward",
                                                    "_cross_entropy_backward", "Fast_CrossEntropyLoss"], ns)


class _Ctx(types.SimpleNamespace):
    def save_for_backward(self, *t):
        self.saved_tensors = t


def check() -> bool:
    ns = _original()
    fn = ns["Fast_CrossEntropyLoss"]
    torch.manual_seed(0)
    ok = True
    for rows, vocab, dtype, softcap, scale, bound in [(9, 1000, torch.float32, 0, 0, 1e-5),
                                                      (6, 5000, torch.bfloat16, 30.0, 0, 1e-2),
                                                      (5, 777, torch.float16, 0, 0.125, 1e-3),
                                                      (4, 70000, torch.float32, 30.0, 0.5, 1e-5)]:
        logits = (3 * torch.randn((rows, vocab), device="cuda")).to(dtype)
        labels = torch.randint(0, vocab, (rows,), device="cuda")
        labels[1::4] = -100
        dloss = 1 + 0.5 * torch.randn(rows, device="cuda")
        x = logits.double().requires_grad_()
        z = x * scale if scale else x
        z = softcap * torch.tanh(z / softcap) if softcap else z
        ref = torch.nn.functional.cross_entropy(z, labels, ignore_index=-100, reduction="none")
        ref.backward(dloss.double())
        ctx = _Ctx()
        loss = fn.forward(ctx, logits.clone(), labels, softcap, scale)
        grad = fn.backward(ctx, dloss)[0]
        el = ((loss.double() - ref.detach()).norm() / ref.norm()).item()
        eg = ((grad.double() - x.grad).norm() / x.grad.norm()).item()
        print(f"{NAME} (Triton) {rows}x{vocab} {dtype} softcap {softcap} scale {scale}: rel err loss {el:.2e} "
              f"grad {eg:.2e} (bound {bound:.0e})")
        ok = ok and max(el, eg) <= bound
    return ok


def bench() -> list:
    ns = _original()
    fn = ns["Fast_CrossEntropyLoss"]
    rows = 4096
    out = []
    for vocab, softcap in [(32000, 0), (128256, 0), (256000, 30.0)]:
        logits = torch.randn((rows, vocab), device="cuda").to(torch.bfloat16)
        labels = torch.randint(0, vocab, (rows,), device="cuda")
        dloss = torch.full((rows,), 1.0 / rows, device="cuda")
        nbytes = logits.numel() * logits.element_size()
        ctx = _Ctx()
        fn.forward(ctx, logits, labels, softcap, 0)
        fwd = triton.testing.do_bench(lambda: fn.forward(_Ctx(), logits, labels, softcap, 0), return_mode="median")
        bwd = triton.testing.do_bench(lambda: fn.backward(ctx, dloss), return_mode="median")
        shape = f"{rows}x{vocab} bf16{' softcap' if softcap else ''}"
        out.append({"shape": "forward " + shape, "ms": fwd, "rate": nbytes * 1e-9 / (fwd * 1e-3), "unit": "GB/s"})
        out.append({"shape": "backward " + shape, "ms": bwd, "rate": 2 * nbytes * 1e-9 / (bwd * 1e-3), "unit": "GB/s"})
    return out


if __name__ == "__main__":
    ok = check()
    for r in bench():
        print(f"bench {NAME} | {r['shape']} | {r['ms']:.4f} | {r['rate']:.2f} {r['unit']}")
    raise SystemExit(0 if ok else 1)
