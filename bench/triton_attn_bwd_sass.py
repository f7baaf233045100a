#!/usr/bin/env python3
"""Triton's tutorial 06 backward (bench/triton_attention.py's _attn_bwd: the dK/dV and dQ loops in one
kernel) compiled for sm_90a without a GPU or torch, to read its SASS beside build/tools/attn-codegen's
(docs/cuda-backend.md, "Attention's backward against Triton's").

  /work/.tritonvenv/bin/python bench/triton_attn_bwd_sass.py HEAD_DIM CAUSAL(0|1) OUT_DIR [WARPS STAGES]

The tutorial's config (BLOCK_M1 32, BLOCK_N1 128, BLOCK_M2 128, BLOCK_N2 32, BLK_SLICE_FACTOR 2, 4 warps,
5 stages), the specialisation of its benchmark (B 4, H 32, contiguous [Z, H, N_CTX, HEAD_DIM] f16:
pointers, row strides, H and N_CTX divisible by 16, stride_d 1). Writes
OUT_DIR/triton_bwd_d*_c*_w*_s*.{ptx,ttgir,cubin}; SASS with the cuobjdump Triton bundles
(triton/backends/nvidia/bin/cuobjdump -sass).
"""
import os
import sys
import types

# triton_attention.py imports torch for the autograd wrapper and one capability query: a stub.
torch = types.ModuleType("torch")
torch.cuda = types.SimpleNamespace(get_device_capability=lambda: (9, 0))
torch.autograd = types.SimpleNamespace(Function=type("Function", (), {"apply": None}))
sys.modules["torch"] = torch
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # Triton's default of today: fused fmas
import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
import triton_attention as ta  # noqa: E402

d, causal, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
nw, ns = (int(sys.argv[4]), int(sys.argv[5])) if len(sys.argv) > 5 else (4, 5)
names = ["Q", "K", "V", "sm_scale", "DO", "DQ", "DK", "DV", "M", "D", "stride_z", "stride_h", "stride_tok",
         "stride_d", "H", "N_CTX", "BLOCK_M1", "BLOCK_N1", "BLOCK_M2", "BLOCK_N2", "BLK_SLICE_FACTOR", "HEAD_DIM",
         "CAUSAL"]
types_ = ["*fp16"] * 3 + ["fp32"] + ["*fp16"] * 4 + ["*fp32"] * 2 + ["i32"] * 3 + ["constexpr"] + ["i32"] * 2
sig = dict(zip(names, types_ + ["constexpr"] * 7))
constexprs = {"stride_d": 1, "BLOCK_M1": 32, "BLOCK_N1": 128, "BLOCK_M2": 128, "BLOCK_N2": 32, "BLK_SLICE_FACTOR": 2,
              "HEAD_DIM": d, "CAUSAL": bool(causal)}
div16 = [0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 14, 15]
attrs = {(i, ): [["tt.divisibility", 16]] for i in div16}
src = triton.compiler.ASTSource(fn=ta._attn_bwd, signature=sig, constexprs=constexprs, attrs=attrs)
k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": nw, "num_stages": ns})
stem = f"{out}/triton_bwd_d{d}_c{causal}_w{nw}_s{ns}"
open(stem + ".ptx", "w").write(k.asm["ptx"])
open(stem + ".ttgir", "w").write(k.asm["ttgir"])
open(stem + ".cubin", "wb").write(k.asm["cubin"])
print(stem, "shared memory", k.metadata.shared, "registers", getattr(k, "n_regs", "?"))
