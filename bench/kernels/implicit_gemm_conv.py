"""implicit_gemm_conv: FlagGems' implicit-GEMM 2-D convolution forward, under Triton.

The original, loaded from its upstream file (bench/kernels/_upstream.py says where): flagos-ai/FlagGems
src/flag_gems/ops/conv2d.py at 24bf03cd7f48: conv2d_output_size, conv2d_forward_kernel (autotuned,
the original key), Conv2d (its forward; backward is not run) and conv2d. Stand-ins for the file's
imports: runtime.get_tuned_config("conv2d_forward") returns the 20 conv2d_forward configs of
src/flag_gems/runtime/backend/_nvidia/tune_configs.yaml (commit 01bfbda46015); FlagGems' libentry
(a dispatch cache, not the kernel) is the identity; logger, math.
kernels/implicit_gemm_conv.cpp is the Tritium port; bench() prints the shapes its --bench prints.
"""
import logging
import math
import os
import sys
import types

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _upstream  # noqa: E402

NAME = "implicit_gemm_conv"
UPSTREAM = [("flagos-ai/FlagGems", "src/flag_gems/ops/conv2d.py", "24bf03cd7f4893928e9b032d3bc2be2fd056f209")]


def _configs():
    rows = [(32, 32, 32, 4, 2), (64, 32, 32, 4, 2), (64, 64, 32, 4, 2), (128, 32, 32, 4, 2), (128, 64, 32, 4, 2),
            (128, 128, 32, 4, 2), (32, 32, 32, 4, 3), (64, 32, 32, 4, 3), (64, 64, 32, 4, 3), (128, 32, 32, 4, 3),
            (128, 64, 32, 4, 3), (128, 128, 32, 4, 3), (128, 256, 32, 8, 3), (256, 128, 32, 8, 3), (256, 64, 32, 4, 4),
            (64, 256, 32, 4, 4), (128, 128, 32, 4, 4), (64, 128, 32, 4, 4), (128, 32, 32, 4, 4), (64, 32, 32, 2, 5)]
    return [triton.Config({"BLOCK_NI_HO_WO": m, "BLOCK_CO": co, "BLOCK_CI": ci}, num_warps=w, num_stages=s)
            for m, co, ci, w, s in rows]


def _get_tuned_config(op):
    assert op == "conv2d_forward", f"no stand-in configs for {op}"
    return _configs()


def _libentry():
    return lambda fn: fn


def _original():
    _upstream.require(UPSTREAM)
    repo, path, _ = UPSTREAM[0]
    ns = {"runtime": types.SimpleNamespace(get_tuned_config=_get_tuned_config), "libentry": _libentry,
          "logger": logging.getLogger(NAME), "math": math}
    return _upstream.load(repo, path, ["conv2d_output_size", "conv2d_forward_kernel", "Conv2d", "conv2d"],
                          namespace=ns)


# ---- the suite's check and benchmark --------------------------------------------------------------

def check() -> bool:
    conv2d = _original()["conv2d"]
    torch.manual_seed(0)
    ok = True
    # kernels/implicit_gemm_conv.cpp's CUDA cases:
    # (batch, input_c, input_h, input_w, out_c, kernel_h, kernel_w, stride, padding, dilation, groups, dtype, bias)
    cases = [(16, 32, 24, 24, 24, 3, 3, 2, 1, 1, 1, torch.float32, True),
             (16, 32, 24, 24, 24, 3, 3, 1, "same", 2, 2, torch.float16, False),
             (4, 3, 33, 30, 40, 5, 3, 1, "valid", 1, 1, torch.bfloat16, True),
             (2, 64, 40, 40, 32, 3, 3, 1, 2, 1, 1, torch.float16, True)]
    for n, ci, h, w, co, kh, kw, s, p, d, g, dtype, with_bias in cases:
        x = torch.randn(n, ci, h, w, device="cuda").to(dtype)
        wt = torch.randn(co, ci // g, kh, kw, device="cuda").to(dtype)
        b = torch.randn(co, device="cuda").to(dtype) if with_bias else None
        out = conv2d(x, wt, b, s, p, d, g)
        ref = torch.nn.functional.conv2d(x.double(), wt.double(), None if b is None else b.double(), s, p, d, g)
        rel = ((out.double() - ref).norm() / ref.norm()).item()
        bound = {torch.float32: 1e-5, torch.float16: 1e-3, torch.bfloat16: 1e-2}[dtype]
        good = out.shape == ref.shape and rel <= bound and bool(torch.isfinite(out).all())
        print(f"{NAME} (Triton) {n}x{ci}x{h}x{w} k{kh}x{kw} co{co} s{s} p={p} d{d} g{g} {dtype}: rel err {rel:.2e} "
              f"{'OK' if good else 'FAILED'}")
        ok = ok and good
    return ok


def bench() -> list:
    conv2d = _original()["conv2d"]
    torch.manual_seed(0)
    rows = []
    # FlagGems' Conv2DBenchmark shapes: (batch, input_c, input_h, input_w, out_c, kernel_h, kernel_w, stride, padding, groups)
    for n, ci, h, w, co, kh, kw, s, p, g in [(32, 64, 128, 128, 32, 3, 3, 1, 2, 1), (32, 64, 210, 210, 16, 5, 5, 2, 1, 1),
                                             (16, 32, 24, 24, 24, 3, 3, 2, 2, 2)]:
        x = torch.randn(n, ci, h, w, device="cuda").to(torch.float16)
        wt = torch.randn(co, ci // g, kh, kw, device="cuda").to(torch.float16)
        out = conv2d(x, wt, None, s, p, 1, g)
        ms = triton.testing.do_bench(lambda: conv2d(x, wt, None, s, p, 1, g), return_mode="median")
        flops = 2.0 * out.numel() * (ci // g) * kh * kw
        rows.append({"shape": f"N={n} C={ci} H={h} W={w} K={co} R={kh} S={kw} stride={s} pad={p} groups={g} f16",
                     "ms": ms, "rate": flops * 1e-12 / (ms * 1e-3), "unit": "TFLOP/s"})
    return rows
