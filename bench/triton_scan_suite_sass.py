#!/usr/bin/env python3
"""Triton's SASS of the kernel suite's scan-family laggards without a GPU or torch (issue 28;
docs/cuda-backend.md, "cumsum in int32 and sparsemax's backward against Triton's SASS"):
FlagGems' cumsum row kernels in int32 -> int64 (reduce_then_scan_root_scan_kernel_row at 4096 x
4096: TILE 4096; reduce_then_scan_block_sum_kernel_row and reduce_then_scan_block_scan_kernel_row at
1024 x 65536: TILE 4096; all 8 warps) and Liger's _sparsemax_backward_kernel (bf16, n_cols 4096,
BLOCK_SIZE 4096, 8 warps), compiled for GPUTarget("cuda", 90, 32) at the suite's specialisation
(pointers and 16-divisible integers marked divisible by 16), from the upstream files under
bench/kernels/upstream (git-ignored; MANIFEST.txt).

  /work/.tritonvenv/bin/python bench/triton_scan_suite_sass.py OUT_DIR [UPSTREAM_DIR]

writes OUT_DIR/triton_<kernel>.{ptx,ttgir,cubin}; read the cubins with the cuobjdump Triton bundles
(triton/backends/nvidia/bin/cuobjdump -sass / -res-usage).
"""
import ast
import importlib.util
import os
import sys
import types

torch = types.ModuleType("torch")  # the upstream modules import torch; the kernels need none of it
sys.modules["torch"] = torch
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402

out = sys.argv[1]
UP = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels", "upstream")
DIV16 = [["tt.divisibility", 16]]


def load(path, names, extra=""):
    """The @triton.jit functions `names` (and plain helpers `extra` needs) of the upstream file."""
    src = open(path).read()
    lines = src.splitlines()
    code = [extra]
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


os.makedirs(out, exist_ok=True)
# get_scan_accum_type is a @tl.constexpr_function upstream: int32 -> int64 is all these need.
c = load(UP + "/flagos-ai/FlagGems/src/flag_gems/ops/cumsum.py",
         ["reduce_then_scan_root_scan_kernel_row", "reduce_then_scan_block_sum_kernel_row",
          "reduce_then_scan_block_scan_kernel_row"],
         "@triton.constexpr_function\ndef get_scan_accum_type(inp_dtype):\n"
         "    return tl.int64 if inp_dtype.is_int() else (tl.float32 if inp_dtype.is_fp16() or inp_dtype.is_bf16() else inp_dtype)\n")
compile_one(c.reduce_then_scan_root_scan_kernel_row, {"in_ptr": "*i32", "out_ptr": "*i64", "N": "i32", "TILE_SIZE": "constexpr"},
            {"TILE_SIZE": 4096}, (0, 1, 2), 8, "triton_cumsum_root_i32")
compile_one(c.reduce_then_scan_block_sum_kernel_row,
            {"in_ptr": "*i32", "block_sum_ptr": "*i64", "N": "i32", "tiles_per_cta": "i32", "TILE_SIZE": "constexpr"},
            {"TILE_SIZE": 4096}, (0, 1, 2), 8, "triton_cumsum_block_sum_i32")
compile_one(c.reduce_then_scan_block_scan_kernel_row,
            {"in_ptr": "*i32", "previous_sum_ptr": "*i64", "out_ptr": "*i64", "N": "i32", "num_tiles_n": "i32",
             "tiles_per_cta": "i32", "TILE_SIZE": "constexpr"},
            {"TILE_SIZE": 4096}, (0, 1, 2, 3, 4), 8, "triton_cumsum_block_scan_i32")

s = load(UP + "/linkedin/Liger-Kernel/src/liger_kernel/ops/sparsemax.py", ["_sparsemax_backward_kernel"])
compile_one(s._sparsemax_backward_kernel,
            {"o_ptr": "*bf16", "go_ptr": "*bf16", "gi_ptr": "*bf16", "stride": "i32", "n_cols": "i32",
             "BLOCK_SIZE": "constexpr", "num_warps": "constexpr"},
            {"BLOCK_SIZE": 4096, "num_warps": 8}, (0, 1, 2, 3, 4), 8, "triton_sparsemax_bwd")
