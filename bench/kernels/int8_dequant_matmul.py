"""int8_dequant_matmul: bitsandbytes' SwitchBack int8 matmul with row-wise dequantisation, under Triton.

The original, loaded from its upstream file (bench/kernels/_upstream.py says where):
bitsandbytes-foundation/bitsandbytes bitsandbytes/triton/int8_matmul_rowwise_dequantize.py at
5754411e6f6c: _int8_matmul_rowwise_dequantize (one autotune config, EVEN_K heuristic) and its wrapper
int8_matmul_rowwise_dequantize, both defined in the file's `else:` branch of
`if not is_triton_available()`. Stand-ins for the file's imports: early_config_prune and
estimate_matmul_time (its matmul_perf_model), which keep every config: with the single config
Triton's autotuner does not prune. kernels/int8_dequant_matmul.cpp is the Tritium port; bench() prints the shapes its --bench prints.
"""
import ast
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _upstream  # noqa: E402

NAME = "int8_dequant_matmul"
UPSTREAM = [("bitsandbytes-foundation/bitsandbytes", "bitsandbytes/triton/int8_matmul_rowwise_dequantize.py",
             "5754411e6f6ca1d57c887ca66b6be64ef7058883")]


def _keep_configs(configs, named_args, **kwargs):
    return configs


def _no_estimate(*args, **kwargs):
    return 0.0


def _else_branch(module):
    """The statements of the file's `if not is_triton_available(): ... else: ...` else branch."""
    guard = next(node for node in module.body if isinstance(node, ast.If))
    return guard.orelse


def _original():
    _upstream.require(UPSTREAM)
    repo, path, _ = UPSTREAM[0]
    ns = {"early_config_prune": _keep_configs, "estimate_matmul_time": _no_estimate}
    return _upstream.load(repo, path, ["init_to_zero", "_int8_matmul_rowwise_dequantize",
                                       "int8_matmul_rowwise_dequantize"], namespace=ns, block=_else_branch)


# ---- the suite's check and benchmark --------------------------------------------------------------

def _reference(x, w, sx, sw, bias):
    out = (x.double() @ w.double().t()) * sx.double()[:, None] * sw.double()[None, :] / (127.0 * 127.0)
    return out if bias is None else out + bias.double()[None, :]


def check() -> bool:
    ns = _original()
    torch.manual_seed(0)
    ok = True
    for M, N, K, with_bias in [(1000, 1100, 999, True), (300, 4100, 1024, False)]:
        x = torch.randint(-127, 128, (M, K), dtype=torch.int8, device="cuda")
        w = torch.randint(-127, 128, (N, K), dtype=torch.int8, device="cuda")
        sx = (torch.rand(M, device="cuda") * 3.5 + 0.5).half()
        sw = (torch.rand(N, device="cuda") * 3.5 + 0.5).half()
        bias = torch.randn(N, device="cuda").half() if with_bias else None
        # The original reads bias[rn] unmasked past N; give it room (the Tritium port masks it).
        if bias is not None:
            bias = torch.cat([bias, torch.zeros(256, device="cuda", dtype=torch.half)])[:N]
        out = ns["int8_matmul_rowwise_dequantize"](x, w.t(), sx, sw, bias)
        ref = _reference(x, w, sx, sw, bias)
        rel = ((out.double() - ref).norm() / ref.norm()).item()
        good = rel <= 1e-3 and bool(torch.isfinite(out).all())
        print(f"{NAME} (Triton) {M}x{N}x{K} bias={with_bias}: rel err {rel:.2e} {'OK' if good else 'FAILED'}")
        ok = ok and good
    return ok


def bench() -> list:
    ns = _original()
    matmul = ns["int8_matmul_rowwise_dequantize"]
    rows = []
    for M, N, K in [(8192, 4096, 1024), (8192, 8192, 2048), (8192, 16384, 4096)]:
        x = (torch.randn(M, K, device="cuda") * 40).clamp(-127, 127).to(torch.int8)
        w = (torch.randn(N, K, device="cuda") * 40).clamp(-127, 127).to(torch.int8)
        sx = torch.full((M,), 1.5, device="cuda", dtype=torch.float16)
        sw = torch.full((N,), 2.5, device="cuda", dtype=torch.float16)
        wt = w.t()
        ms = triton.testing.do_bench(lambda: matmul(x, wt, sx, sw, None), return_mode="median")
        rows.append({"shape": f"M={M} N={N} K={K} int8", "ms": ms, "rate": 2.0 * M * N * K * 1e-12 / (ms * 1e-3),
                     "unit": "TOP/s"})
    return rows
