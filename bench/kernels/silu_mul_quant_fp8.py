"""vLLM's fused SiLU-and-mul with per-token-group fp8 quantisation beside kernels/silu_mul_quant_fp8.cpp.

The original, loaded from its upstream file (bench/kernels/_upstream.py says where):
vllm-project/vllm vllm/model_executor/layers/quantization/utils/fp8_utils.py at 007d50058a06
(_silu_mul_per_token_group_quant_fp8_colmajor, silu_mul_per_token_group_quant_fp8_colmajor). vLLM's
package is not imported; its helpers are stood in for: current_platform by an object whose
fp8_dtype() is torch.float8_e4m3fn and whose is_fp8_fnuz() is False (CUDA), and
is_deep_gemm_e8m0_used by False. check() runs it against float64 (the kernel's casts: silu rounded
to the input dtype, times up, rounded; bf16, f16 and f32; float32 and UE8M0 scales); bench() times
DeepSeek-V3's MoE activation (N = 2 x 2048, bf16, float32 scales) for 1024 to 65536 routed tokens
with triton.testing.do_bench, median, as the port's bench.
"""
import os
import sys
import types

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _upstream  # noqa: E402

NAME = "silu_mul_quant_fp8"
VLLM = "vllm-project/vllm"
UPSTREAM = [(VLLM, "vllm/model_executor/layers/quantization/utils/fp8_utils.py", "007d50058a06dec0f82472d63c819244d460c40d")]


def _original():
    _upstream.require(UPSTREAM)
    ns = {
        "current_platform": types.SimpleNamespace(fp8_dtype=lambda: torch.float8_e4m3fn, is_fp8_fnuz=lambda: False),
        "is_deep_gemm_e8m0_used": lambda: False,
    }
    return _upstream.load(VLLM, UPSTREAM[0][1], ["_silu_mul_per_token_group_quant_fp8_colmajor",
                                                 "silu_mul_per_token_group_quant_fp8_colmajor"], ns)


def check() -> bool:
    ns = _original()
    torch.manual_seed(0)
    ok = True
    for m, n, dtype, ue8m0 in [(128, 512, torch.bfloat16, False), (256, 768, torch.float16, True),
                               (128, 256, torch.float32, False)]:
        x = torch.randn((m, n), device="cuda").to(dtype)
        q, s = ns["silu_mul_per_token_group_quant_fp8_colmajor"](x, use_ue8m0=ue8m0)
        g, u = x.double()[:, : n // 2], x.double()[:, n // 2:]
        y = ((g / (1 + torch.exp(-g))).to(dtype).double() * u).to(dtype).double()
        yg = y.view(m, n // 2 // 128, 128)
        ref_s = yg.abs().amax(-1).clamp(min=1e-10) / 448.0
        if ue8m0:
            ref_s = torch.exp2(torch.ceil(torch.log2(ref_s)))
        scale_err = ((s.double() - ref_s).abs() / ref_s).max().item()
        ref_q = (yg / s.double()[..., None]).clamp(-448, 448).view(m, n // 2).float().to(torch.float8_e4m3fn)
        off = (q.float() != ref_q.float()).double().mean().item()
        bound = {torch.bfloat16: 8e-3, torch.float16: 1e-3}.get(dtype, 1e-6)
        print(f"{NAME} (Triton) {m}x{n} {dtype} ue8m0 {ue8m0}: scale err {scale_err:.1e}, e4m3 values off {100 * off:.2f}%")
        ok = ok and scale_err <= bound and off <= 1e-2 and s.stride(0) == 1
    return ok


def bench() -> list:
    ns = _original()
    rows = []
    N = 4096
    for M in (1024, 4096, 16384, 65536):
        x = torch.randn((M, N), device="cuda", dtype=torch.bfloat16)
        nbytes = M * N * 2 + M * (N // 2) + M * (N // 2 // 128) * 4
        ms = triton.testing.do_bench(lambda: ns["silu_mul_per_token_group_quant_fp8_colmajor"](x, use_ue8m0=False),
                                     return_mode="median")
        rows.append({"shape": f"M={M} N={N} bf16", "ms": ms, "rate": nbytes * 1e-9 / (ms * 1e-3), "unit": "GB/s"})
    return rows


if __name__ == "__main__":
    ok = check()
    for r in bench():
        print(f"bench {NAME} | {r['shape']} | {r['ms']:.4f} | {r['rate']:.2f} {r['unit']}")
    raise SystemExit(0 if ok else 1)
