"""FlagGems' conv2d_forward_kernel (the original of kernels/implicit_gemm_conv.cpp, loaded from its upstream
file as bench/kernels/implicit_gemm_conv.py does) compiled for sm_90a without a GPU or torch, specialised as
Triton's runtime would for one of the suite's benchmark shapes (NCHW f16, contiguous; 16-divisible ints and
pointers marked, ints equal to 1 constexpr), to read its TTGIR / PTX / SASS beside ours
(docs/cuda-backend.md, "implicit_gemm_conv").

  TRITIUM_UPSTREAM=/work/main/bench/kernels/upstream \
  /work/.tritonvenv/bin/python bench/triton_conv_sass.py SHAPE BLOCK_M BLOCK_CO BLOCK_CI WARPS STAGES OUT_DIR

/work/.tritonvenv is Triton 3.9; the suite's comparison runs Triton 3.6 (`python3 -m venv V && V/bin/pip
install triton==3.6.0`), whose Coalesce breaks a contiguity tie the other way (the first dim: lanes
along the output pixels; 3.9: the last, along the channels) - compare the #blocked layouts of the
TTGIR's input load under both.

SHAPE: 1 = N32 C64 H128 W128 K32 3x3 stride 1 pad 2; 2 = N32 C64 H210 W210 K16 5x5 stride 2 pad 1;
3 = N16 C32 H24 W24 K24 3x3 stride 2 pad 2 groups 2. Writes OUT_DIR/triton_conv_s<SHAPE>_m*_co*_ci*_w*_s*.
{ttgir,ptx,cubin}; read the cubin with the cuobjdump Triton bundles (triton/backends/nvidia/bin/cuobjdump -sass).
"""
import os
import sys
import types

torch = types.ModuleType("torch")  # the upstream loader imports torch; nothing here runs it
torch.cuda = types.SimpleNamespace(get_device_capability=lambda: (9, 0))
sys.modules["torch"] = torch
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels"))
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
import _upstream  # noqa: E402

SHAPES = {1: (32, 64, 128, 128, 32, 3, 3, 1, 2, 1), 2: (32, 64, 210, 210, 16, 5, 5, 2, 1, 1),
          3: (16, 32, 24, 24, 24, 3, 3, 2, 2, 2)}

shape = int(sys.argv[1])
bm, bco, bci, nw, ns = (int(x) for x in sys.argv[2:7])
out = sys.argv[7]
n, c, h, w, k, r, s, st, pad, g = SHAPES[shape]
wc = c // g
oh, ow = (h + 2 * pad - (r - 1) - 1) // st + 1, (w + 2 * pad - (s - 1) - 1) // st + 1

ns_ = {"runtime": types.SimpleNamespace(get_tuned_config=lambda op: [triton.Config({})]),
       "libentry": lambda: (lambda fn: fn), "logger": None, "math": None, "tl": tl, "triton": triton}
mod = _upstream.load("flagos-ai/FlagGems", "src/flag_gems/ops/conv2d.py", ["conv2d_forward_kernel"], namespace=ns_)
fn = mod["conv2d_forward_kernel"]
fn = getattr(fn, "fn", fn)  # the JITFunction under @triton.autotune

ints = [("in_n", n), ("input_height", h), ("input_width", w), ("out_c", k), ("out_height", oh), ("out_width", ow),
        ("input_n_stride", c * h * w), ("input_c_stride", h * w), ("input_height_stride", w), ("input_width_stride", 1),
        ("weight_n_stride", wc * r * s), ("weight_c_stride", r * s), ("weight_height_stride", s),
        ("weight_width_stride", 1), ("output_n_stride", k * oh * ow), ("output_c_stride", oh * ow),
        ("output_height_stride", ow), ("output_width_stride", 1)]
metas = {"weight_c": wc, "weight_height": r, "weight_width": s, "stride_height": st, "stride_width": st,
         "padding_height": pad, "padding_width": pad, "dilation_height": 1, "dilation_width": 1, "groups": g,
         "BLOCK_NI_HO_WO": bm, "BLOCK_CI": bci, "BLOCK_CO": bco, "ACCUM_DTYPE": tl.float32}
sig = {p: "*fp16" for p in ("input_pointer", "weight_pointer", "output_pointer", "bias_pointer")}
attrs = {(i, ): [["tt.divisibility", 16]] for i in range(4)}
constexprs = dict(metas)
for i, (name, v) in enumerate(ints, start=4):
    if v == 1:  # Triton's runtime specialises integers equal to 1 as constexprs
        sig[name] = "constexpr"
        constexprs[name] = 1
    else:
        sig[name] = "i32"
        if v % 16 == 0:
            attrs[(i, )] = [["tt.divisibility", 16]]
for name in metas:
    sig[name] = "constexpr"
src = triton.compiler.ASTSource(fn=fn, signature=sig, constexprs=constexprs, attrs=attrs)
k_ = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": nw, "num_stages": ns})
stem = f"{out}/triton_conv_s{shape}_m{bm}_co{bco}_ci{bci}_w{nw}_s{ns}"
os.makedirs(out, exist_ok=True)
open(stem + ".ptx", "w").write(k_.asm["ptx"])
open(stem + ".ttgir", "w").write(k_.asm["ttgir"])
open(stem + ".cubin", "wb").write(k_.asm["cubin"])
print(stem, "shared memory", k_.metadata.shared)
