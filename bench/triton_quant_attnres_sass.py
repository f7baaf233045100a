#!/usr/bin/env python3
"""Triton's SASS of two kernel-suite originals without a GPU or torch (docs/cuda-backend.md,
"silu_mul_quant_fp8 and attn_res against Triton's SASS"): vLLM's
_silu_mul_per_token_group_quant_fp8_colmajor (bf16 -> e4m3, GROUP_SIZE = BLOCK_N 128, BLOCK_M 8,
4 warps) and Liger's _attn_res_fwd_kernel / _attn_res_bwd_kernel (bf16, BLOCK_D 4096,
MAX_BLOCKS 8, 8 warps), compiled for GPUTarget("cuda", 90, 32) at the suite's specialisation
(pointers and 16-divisible integers marked divisible by 16), from the upstream files under
bench/kernels/upstream (git-ignored; MANIFEST.txt).

  /work/.tritonvenv/bin/python bench/triton_quant_attnres_sass.py OUT_DIR [UPSTREAM_DIR]

writes OUT_DIR/triton_{silu,attnres_fwd,attnres_bwd}.{ptx,ttgir,cubin}; read the cubins with the
cuobjdump Triton bundles (triton/backends/nvidia/bin/cuobjdump -sass / -res-usage).
"""
import ast
import importlib.util
import os
import sys
import types

# The upstream modules import torch; the kernels need none of it.
torch = types.ModuleType("torch")
sys.modules["torch"] = torch
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # Triton's default of today: fused fmas
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402

out = sys.argv[1]
UP = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels", "upstream")
DIV16 = [["tt.divisibility", 16]]


def load(path, names):
    """The @triton.jit functions `names` of the upstream file, without running the rest of it."""
    src = open(path).read()
    lines = src.splitlines()
    code = []
    for node in ast.parse(src).body:
        if isinstance(node, ast.FunctionDef) and node.name in names:
            start = min([d.lineno for d in node.decorator_list] + [node.lineno]) - 1
            code.append("\n".join(lines[start:node.end_lineno]))
    sel = os.path.join(out, os.path.basename(path)[:-3] + "_kernels.py")
    open(sel, "w").write("\n\n\n".join(code) + "\n")
    spec = importlib.util.spec_from_file_location(os.path.basename(sel)[:-3], sel)
    mod = importlib.util.module_from_spec(spec)
    mod.__dict__.update({"triton": triton, "tl": tl, "torch": torch})
    spec.loader.exec_module(mod)
    return mod


def compile_one(fn, sig, constexprs, divisible, num_warps, stem):
    src = triton.compiler.ASTSource(fn=fn, signature=sig, constexprs=constexprs, attrs={(i,): DIV16 for i in divisible})
    k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": num_warps, "num_stages": 3})
    for ext in ("ptx", "ttgir"):
        open(f"{out}/{stem}.{ext}", "w").write(k.asm[ext])
    open(f"{out}/{stem}.cubin", "wb").write(k.asm["cubin"])
    print(stem, "shared", k.metadata.shared)


# silu_mul_quant_fp8's bench: M x 4096 bf16 (M a multiple of 16: 1024 .. 65536), scales' column stride M.
v = load(UP + "/vllm-project/vllm/vllm/model_executor/layers/quantization/utils/fp8_utils.py",
         ["_silu_mul_per_token_group_quant_fp8_colmajor"])
sig = {"y_ptr": "*bf16", "y_q_ptr": "*fp8e4nv", "y_s_ptr": "*fp32", "M": "i32", "N": "i32", "y_s_col_stride": "i64",
       "eps": "fp32", "fp8_min": "fp32", "fp8_max": "fp32", "use_ue8m0": "constexpr", "GROUP_SIZE": "constexpr",
       "BLOCK_M": "constexpr", "BLOCK_N": "constexpr"}
compile_one(v._silu_mul_per_token_group_quant_fp8_colmajor, sig,
            {"use_ue8m0": False, "GROUP_SIZE": 128, "BLOCK_M": 8, "BLOCK_N": 128}, range(6), 4, "triton_silu")

# attn_res's bench: N 8 blocks, T tokens (a multiple of 16), D 4096 bf16: num_warps 8 (BLOCK_D 4096).
a = load(UP + "/linkedin/Liger-Kernel/src/liger_kernel/ops/attn_res.py", ["_attn_res_fwd_kernel", "_attn_res_bwd_kernel"])
sig = {"V_ptr": "*bf16", "W_query_ptr": "*bf16", "W_norm_ptr": "*bf16", "Out_ptr": "*bf16", "Alpha_ptr": "*fp32",
       "RSTD_ptr": "*fp32", "n_blocks": "i32", "n_tokens": "i32", "D": "i32", "eps": "constexpr", "BLOCK_D": "constexpr",
       "MAX_BLOCKS": "constexpr"}
compile_one(a._attn_res_fwd_kernel, sig, {"eps": 1e-6, "BLOCK_D": 4096, "MAX_BLOCKS": 8}, (0, 1, 2, 3, 4, 5, 7, 8), 8,
            "triton_attnres_fwd")
sig = {"dOut_ptr": "*bf16", "V_ptr": "*bf16", "W_query_ptr": "*bf16", "W_norm_ptr": "*bf16", "Alpha_ptr": "*fp32",
       "RSTD_ptr": "*fp32", "dV_ptr": "*bf16", "dW_query_ptr": "*fp32", "dW_norm_ptr": "*fp32", "n_blocks": "i32",
       "n_tokens": "i32", "D": "i32", "eps": "fp32", "BLOCK_D": "constexpr", "MAX_BLOCKS": "constexpr"}
compile_one(a._attn_res_bwd_kernel, sig, {"BLOCK_D": 4096, "MAX_BLOCKS": 8}, (0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11), 8,
            "triton_attnres_bwd")
