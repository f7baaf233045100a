"""Triton's tutorial 03 matmul (bench/triton_kernels.py's matmul_kernel, pointer blocks) compiled for
sm_90a without a GPU or torch, with the strides of one of a Linear layer's three products (x [M, K],
W [N, K], g [M, N] row-major: fwd = x @ W^T, dgrad = g @ W, wgrad = g^T @ x), to read its SASS beside
build/tools/linear-codegen's (docs/ops.md, "matmul: a Linear's products").

  /work/.tritonvenv/bin/python bench/triton_linear_sass.py bf16|tf32 fwd|dgrad|wgrad M K N BLOCK_M BLOCK_N BLOCK_K WARPS STAGES OUT_DIR

writes OUT_DIR/triton_linear_<dtype>_<product>_m*_n*_k*_w*_s*.{ptx,ttgir,cubin}; read the cubin with the
cuobjdump Triton bundles (triton/backends/nvidia/bin/cuobjdump -sass).
"""
import os
import sys
import types

torch = types.ModuleType("torch")
torch.cuda = types.SimpleNamespace(get_device_capability=lambda: (9, 0))
sys.modules["torch"] = torch
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
import triton_kernels as tk  # noqa: E402

dtype, product = sys.argv[1], sys.argv[2]
m, k, n, bm, bn, bk, nw, ns = (int(x) for x in sys.argv[3:11])
out = sys.argv[11]
# The product's (PM, PN, PK) and strides (am, ak, bk, bn), as ops::matmul receives the views.
pm, pn, pk, sam, sak, sbk, sbn = {"fwd": (m, n, k, k, 1, 1, k), "dgrad": (m, k, n, n, 1, k, 1),
                                  "wgrad": (n, k, m, 1, n, k, 1)}[product]
el = "bf16" if dtype == "bf16" else "fp32"
names = ["a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm",
         "stride_cn"]
values = [None, None, None, pm, pn, pk, sam, sak, sbk, sbn, pn, 1]
sig = {"a_ptr": f"*{el}", "b_ptr": f"*{el}", "c_ptr": f"*{el}"}
constexprs = {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 8, "ACTIVATION": ""}
attrs = {(0, ): [["tt.divisibility", 16]], (1, ): [["tt.divisibility", 16]], (2, ): [["tt.divisibility", 16]]}
for i, (name, v) in enumerate(zip(names, values)):
    if v is None:
        continue
    if v == 1:  # Triton's runtime specialises integers equal to 1 as constexprs
        sig[name] = "constexpr"
        constexprs[name] = 1
    else:
        sig[name] = "i32"
        if v % 16 == 0:
            attrs[(i, )] = [["tt.divisibility", 16]]
for name in ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "ACTIVATION"):
    sig[name] = "constexpr"
src = triton.compiler.ASTSource(fn=tk.matmul_kernel, signature=sig, constexprs=constexprs, attrs=attrs)
opts = {"num_warps": nw, "num_stages": ns}
if dtype == "tf32":
    opts["allowed_dot_input_precisions"] = ("tf32", "tf32x3", "ieee")
k_ = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=opts)
stem = f"{out}/triton_linear_{dtype}_{product}_m{bm}_n{bn}_k{bk}_w{nw}_s{ns}"
open(stem + ".ptx", "w").write(k_.asm["ptx"])
open(stem + ".ttgir", "w").write(k_.asm["ttgir"])
open(stem + ".cubin", "wb").write(k_.asm["cubin"])
print(stem, "shared memory", k_.metadata.shared)
