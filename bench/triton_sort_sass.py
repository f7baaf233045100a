#!/usr/bin/env python3
"""Triton's tl.sort of one row, compiled for sm_90a without a GPU: the kernel tools/sort-codegen
generates in Tritium (a program loads a row of N f32, sorts it descending, stores it), so the
two SASS can be counted side by side (issues 28/29; docs/cuda-backend.md, "tl::sort").

  /work/.tritonvenv/bin/python bench/triton_sort_sass.py N NUM_WARPS [OUT_DIR] [--topk K]

Prints the SASS instruction count (static: the kernel is straight-line), the shared memory and a
per-opcode histogram; writes triton_sort_N_W.{ttgir,ptx,cubin,sass} under OUT_DIR (default .).
Give a Tritium cubin with --count FILE to print its histogram the same way.
"""
import argparse
import collections
import glob
import os
import re
import subprocess
import sys


def cuobjdump():
    import triton
    found = glob.glob(os.path.join(os.path.dirname(triton.__file__), "backends/nvidia/bin/cuobjdump"))
    return found[0] if found else "cuobjdump"


def histogram(cubin):
    sass = subprocess.run([cuobjdump(), "-sass", cubin], capture_output=True, text=True, check=True).stdout
    ops = collections.Counter()
    for line in sass.splitlines():
        # Addresses grow past 4 hex digits in kernels over 4096 instructions.
        m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(@!?U?P\w+\s+)?([A-Z0-9_.]+)", line)
        if m:
            ops[m.group(2).split(".")[0]] += 1
    return sass, ops


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("n", type=int, nargs="?")
    ap.add_argument("warps", type=int, nargs="?")
    ap.add_argument("out", nargs="?", default=".")
    ap.add_argument("--topk", type=int, default=0)
    ap.add_argument("--count", help="print the histogram of this cubin only")
    a = ap.parse_args()
    if a.count:
        _, ops = histogram(a.count)
        print(a.count, "total", sum(ops.values()), dict(ops.most_common(24)))
        return
    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget

    @triton.jit
    def sort_row(x, out, N: tl.constexpr, K: tl.constexpr):
        offs = tl.arange(0, N)
        v = tl.load(x + tl.program_id(0) * N + offs)
        if K == 0:
            tl.store(out + tl.program_id(0) * N + offs, tl.sort(v, descending=True))
        else:
            tl.store(out + tl.program_id(0) * K + tl.arange(0, K), tl.topk(v, K))

    sig = {"x": "*fp32", "out": "*fp32", "N": "constexpr", "K": "constexpr"}
    attrs = {(0, ): [["tt.divisibility", 16]], (1, ): [["tt.divisibility", 16]]}
    src = triton.compiler.ASTSource(fn=sort_row, signature=sig, constexprs={"N": a.n, "K": a.topk}, attrs=attrs)
    k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": a.warps})
    stem = os.path.join(a.out, f"triton_sort_{a.n}_{a.warps}" + (f"_k{a.topk}" if a.topk else ""))
    open(stem + ".ttgir", "w").write(k.asm["ttgir"])
    open(stem + ".ptx", "w").write(k.asm["ptx"])
    open(stem + ".cubin", "wb").write(k.asm["cubin"])
    sass, ops = histogram(stem + ".cubin")
    open(stem + ".sass", "w").write(sass)
    print(f"triton sort {a.n} on {a.warps} warps" + (f" (topk {a.topk})" if a.topk else ""), "total", sum(ops.values()),
          "shared", k.metadata.shared, dict(ops.most_common(24)))


if __name__ == "__main__":
    sys.exit(main())
