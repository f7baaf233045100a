"""vLLM's per-token-group fp8 quantisation (Triton fallback) beside kernels/per_token_group_quant_fp8.cpp.

The original, loaded from its upstream file (bench/kernels/_upstream.py says where):
vllm-project/vllm vllm/model_executor/layers/quantization/utils/fp8_utils.py at 007d50058a06
(_per_token_group_quant_fp8, _per_token_group_quant_fp8_colmajor, per_token_group_quant_fp8).
vLLM's package is not imported; its helpers are stood in for: current_platform by an object whose
fp8_dtype() is torch.float8_e4m3fn and whose is_cuda() is False - so that per_token_group_quant_fp8
takes its Triton fallback, the code ported, instead of vLLM's CUDA kernel - and get_fp8_min_max by
e4m3fn's (-448, 448), what it returns on CUDA (quant_utils.py).
vLLM ships no benchmark for the Triton fallback: bench() times DeepSeek-V3 activations (hidden
7168, groups of 128) for 128 to 16384 tokens in bf16, with row-major scales and with column-major
UE8M0 scales, with triton.testing.do_bench, median, as the port's bench.
"""
import os
import sys
import types

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _upstream  # noqa: E402

NAME = "per_token_group_quant_fp8"
VLLM = "vllm-project/vllm"
UPSTREAM = [(VLLM, "vllm/model_executor/layers/quantization/utils/fp8_utils.py", "007d50058a06dec0f82472d63c819244d460c40d")]


def _original():
    _upstream.require(UPSTREAM)
    ns = {
        "current_platform": types.SimpleNamespace(fp8_dtype=lambda: torch.float8_e4m3fn, is_cuda=lambda: False),
        "get_fp8_min_max": lambda: (-448.0, 448.0),
        "is_deep_gemm_e8m0_used": lambda: False,
    }
    return _upstream.load(VLLM, UPSTREAM[0][1], ["_per_token_group_quant_fp8", "_per_token_group_quant_fp8_colmajor",
                                                 "per_token_group_quant_fp8"], ns)


def check() -> bool:
    ns = _original()
    torch.manual_seed(0)
    ok = True
    for m, n, group, dtype, colmajor, ue8m0 in [(7, 512, 128, torch.bfloat16, False, False),
                                                (5, 384, 96, torch.float16, True, False),
                                                (9, 256, 64, torch.float32, False, True),
                                                (6, 600, 200, torch.bfloat16, True, True)]:
        x = torch.randn((m, n), device="cuda").to(dtype)
        q, s = ns["per_token_group_quant_fp8"](x, group, column_major_scales=colmajor, use_ue8m0=ue8m0)
        xg = x.double().view(m, n // group, group)
        ref_s = (xg.abs().amax(-1).clamp(min=1e-10) / 448.0)
        if ue8m0:
            ref_s = torch.exp2(torch.ceil(torch.log2(ref_s)))
        scale_err = ((s.double() - ref_s).abs() / ref_s).max().item()
        ref_q = (xg / s.double()[..., None]).clamp(-448, 448).view(m, n).float().to(torch.float8_e4m3fn)
        off = (q.float() != ref_q.float()).double().mean().item()
        print(f"{NAME} (Triton) {m}x{n} group {group} {dtype} col-major {colmajor} ue8m0 {ue8m0}: "
              f"scale err {scale_err:.1e}, e4m3 values off {100 * off:.2f}%")
        ok = ok and scale_err <= 1e-6 and off <= 5e-3
    return ok


def bench() -> list:
    ns = _original()
    rows = []
    hidden, group = 7168, 128
    for colmajor_ue8m0 in (False, True):
        for m in (128, 1024, 4096, 16384):
            x = torch.randn((m, hidden), device="cuda").to(torch.bfloat16)
            ms = triton.testing.do_bench(
                lambda: ns["per_token_group_quant_fp8"](x, group, column_major_scales=colmajor_ue8m0,
                                                        use_ue8m0=colmajor_ue8m0), return_mode="median")
            nbytes = m * hidden * 3 + 4 * (m * hidden // group)
            rows.append({"shape": f"{m}x{hidden} group {group} bf16{' col-major ue8m0' if colmajor_ue8m0 else ''}",
                         "ms": ms, "rate": nbytes * 1e-9 / (ms * 1e-3), "unit": "GB/s"})
    return rows


if __name__ == "__main__":
    ok = check()
    for r in bench():
        print(f"bench {NAME} | {r['shape']} | {r['ms']:.4f} | {r['rate']:.2f} {r['unit']}")
    raise SystemExit(0 if ok else 1)
