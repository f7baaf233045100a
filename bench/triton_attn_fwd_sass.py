#!/usr/bin/env python3
"""Triton's tutorial 06 forward (bench/triton_attention.py's _attn_fwd, host tensor descriptors,
warp_specialize off) compiled for sm_90a without a GPU or torch, to read its SASS beside
build/tools/attn-codegen's (docs/cuda-backend.md, "Attention's forward against Triton's").

  /work/.tritonvenv/bin/python bench/triton_attn_fwd_sass.py BLOCK_M BLOCK_N WARPS STAGES HEAD_DIM STAGE OUT_DIR

writes OUT_DIR/triton_fwd_m*_n*_w*_s*_d*_st*.{ptx,ttgir,cubin}; read the cubin with the cuobjdump
Triton bundles (triton/backends/nvidia/bin/cuobjdump -sass). STAGE: 1 full, 3 causal.
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

bm, bn, nw, ns, d, stage = (int(x) for x in sys.argv[1:7])
out = sys.argv[7]
sig = {"sm_scale": "fp32", "M": "*fp32", "Z": "i32", "H": "i32",
       "desc_q": f"tensordesc<fp16[{bm}, {d}]>", "desc_k": f"tensordesc<fp16[{bn}, {d}]>",
       "desc_v": f"tensordesc<fp16[{bn}, {d}]>", "desc_o": f"tensordesc<fp16[{bm}, {d}]>", "N_CTX": "i32",
       "HEAD_DIM": "constexpr", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "FP8_OUTPUT": "constexpr",
       "STAGE": "constexpr", "warp_specialize": "constexpr", "IS_HOPPER": "constexpr"}
constexprs = {"HEAD_DIM": d, "BLOCK_M": bm, "BLOCK_N": bn, "FP8_OUTPUT": False, "STAGE": stage,
              "warp_specialize": False, "IS_HOPPER": True}
attrs = {(1, ): [["tt.divisibility", 16]], (8, ): [["tt.divisibility", 16]]}  # M, N_CTX (4096)
src = triton.compiler.ASTSource(fn=ta._attn_fwd.fn, signature=sig, constexprs=constexprs, attrs=attrs)
k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": nw, "num_stages": ns})
stem = f"{out}/triton_fwd_m{bm}_n{bn}_w{nw}_s{ns}_d{d}_st{stage}"
open(stem + ".ptx", "w").write(k.asm["ptx"])
open(stem + ".ttgir", "w").write(k.asm["ttgir"])
open(stem + ".cubin", "wb").write(k.asm["cubin"])
print(stem, "shared memory", k.metadata.shared)
