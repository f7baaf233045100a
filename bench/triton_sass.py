#!/usr/bin/env python3
"""Side-by-side GPU code of Triton and Tritium for the tutorial kernels, without a GPU.

For each tutorial kernel and launch configuration (the ones Triton's tutorials use on an H100,
sm_90a) this script

  * compiles Triton's kernel (bench/triton_kernels.py, the ones the comparison scripts time) with
    triton.compile(ASTSource(...), target=GPUTarget("cuda", 90, 32)), specialised the way the
    Triton runtime would (16-byte aligned pointers and integers that are multiples of 16 marked
    tt.divisibility=16, integers equal to 1 turned into constexprs);
  * generates Tritium's CUDA source for the same kernel of tutorials/0*.cpp (a small C++ program,
    written and built here against build/libtritium.so, that includes the tutorial and calls
    jit::cuda::generate_cuda on the optimised IR, as the CUDA backend does) and compiles it with
    NVRTC exactly as jit/cuda/nvrtc.cpp does (--gpu-architecture=sm_90a -std=c++17
    -default-device -minimal);
  * disassembles both cubins (cuobjdump -sass) and prints registers, spills, shared memory and a
    per-opcode and per-class histogram of the SASS, also normalised per element processed.

Static counts: an instruction inside a loop counts once. The "per elem" columns are warp
instructions issued per element of one program's block (count * num_warps / elements), which
equals the dynamic count for straight-line kernels (dropout, layer norm with one block per row,
softmax's row loop body).

Usage (a venv with triton==3.6.0, no torch; /usr/local/cuda with libnvrtc; a cuobjdump: CUDA's,
else pip's nvidia-cuda-cuobjdump, else the one Triton bundles):

  python3 -m venv /work/venv-triton
  /work/venv-triton/bin/pip install triton==3.6.0 nvidia-cuda-cuobjdump
  /work/venv-triton/bin/python bench/triton_sass.py OUT_DIR [--only dropout,ln_dx_8192,...]
      [--build build] [--triton-ptxas PATH] [--opcodes] [--skip-triton] [--skip-tritium]

OUT_DIR/<case>/ receives triton.ptx, triton.sass, triton.ttgir, tritium.cu, tritium.ptx,
tritium.sass and the ptxas -v logs; OUT_DIR/summary.txt repeats the report. --triton-ptxas
assembles Triton's PTX with another ptxas (e.g. /usr/local/cuda/bin/ptxas, the CUDA 13 one that
NVRTC uses) to take the assembler version out of the comparison; by default Triton's bundled
ptxas (what Triton really runs) is used. Cases: run with --list.
"""

import argparse
import ctypes
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter, OrderedDict

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CUDA = os.environ.get("CUDA_HOME", "/usr/local/cuda")
H100_SMEM_OPTIN = 232448  # cudaDevAttrMaxSharedMemoryPerBlockOptin on H100 (227 KB)

# ------------------------------------------------------------------------------------------------
# Triton's tutorial kernels: bench/triton_kernels.py.
# ------------------------------------------------------------------------------------------------

try:
    import triton
    import triton_kernels  # the kernels the comparison scripts time (bench/triton_kernels.py)
except ImportError:  # --skip-triton still works without it
    triton = None

# ------------------------------------------------------------------------------------------------
# The cases: one kernel, its run-time arguments, its launch options, on both sides.
# ------------------------------------------------------------------------------------------------

def next_pow2(n):
    p = 1
    while p < n:
        p *= 2
    return p


class Case:
    """args: (name, kind, value) per kernel parameter in order. kind: '*fp32' etc. for a pointer
    (16-byte aligned), 'i32' for an integer (specialised as Triton does), 'fp32' for a float,
    'constexpr' for a meta-parameter. Tritium gets the same values (pointers to aligned fake
    addresses, ints, floats, metas) in the same order."""

    def __init__(self, name, triton_fn, tutorial, kernel, args, num_warps, num_stages, elems, note="",
                 tritium_num_stages=3, tritium_args=None):
        self.name, self.triton_fn, self.tutorial, self.kernel = name, triton_fn, tutorial, kernel
        self.args, self.num_warps, self.num_stages, self.elems, self.note = args, num_warps, num_stages, elems, note
        self.tritium_num_stages = tritium_num_stages
        self.tritium_args = tritium_args if tritium_args is not None else args


def ln_launch(N, elem_size=2):
    block = min(65536 // elem_size, next_pow2(N))
    return block, min(max(block // 256, 1), 8)


def group_size_m(N):
    g = 64
    if N <= 8192: g = 96
    if N <= 4096: g = 128
    if N <= 1024: g = 256
    return g


def make_cases():
    cases = []
    M_ROWS = 4096
    for N in (1024, 4096, 16384):
        B = next_pow2(N)
        stages = 4 if H100_SMEM_OPTIN > 200000 else 2
        # Tritium's tutorial launches with Options{.num_warps = 8} (num_stages left at 3).
        args = [("out_ptr", "*fp32", 0), ("in_ptr", "*fp32", 1), ("in_stride", "i32", N), ("out_stride", "i32", N),
                ("n_rows", "i32", M_ROWS), ("n_cols", "i32", N), ("BLOCK", "constexpr", B),
                ("STAGES", "constexpr", stages)]
        cases.append(Case(f"softmax_{N}", "softmax_kernel", "02-fused-softmax.cpp", "softmax_kernel", args, 8, stages,
                          N, "per row (one trip of the persistent loop)", tritium_args=args[:-1]))
    for (bm, bn, bk, st, nw) in ((128, 256, 64, 3, 8), (128, 128, 32, 4, 4)):
        S = 4096
        args = [("a_ptr", "*fp16", 0), ("b_ptr", "*fp16", 1), ("c_ptr", "*fp16", 2), ("M", "i32", S), ("N", "i32", S),
                ("K", "i32", S), ("stride_am", "i32", S), ("stride_ak", "i32", 1), ("stride_bk", "i32", S),
                ("stride_bn", "i32", 1), ("stride_cm", "i32", S), ("stride_cn", "i32", 1),
                ("BLOCK_SIZE_M", "constexpr", bm), ("BLOCK_SIZE_N", "constexpr", bn), ("BLOCK_SIZE_K", "constexpr", bk),
                ("GROUP_SIZE_M", "constexpr", 8), ("ACTIVATION", "constexpr", "")]
        targs = args[:-1] + [("ACTIVATION", "constexpr", 0)]  # Tritium: enum Activation NONE
        cases.append(Case(f"matmul_{bm}x{bn}x{bk}", "matmul_kernel", "03-matrix-multiplication.cpp", "matmul_kernel",
                          args, nw, st, bm * bn, "per output element, one K step (loop body counted once)",
                          tritium_num_stages=st, tritium_args=targs))
    n = 1 << 24
    args = [("x_ptr", "*fp32", 0), ("out_ptr", "*fp32", 1), ("n", "i32", n), ("p", "fp32", 0.5),
            ("seed", "i32", 123), ("BLOCK", "constexpr", 1024)]
    cases.append(Case("dropout", "seeded_dropout_kernel", "04-low-memory-dropout.cpp", "_seeded_dropout", args, 4, 3, 1024))
    for N in (1024, 4096, 8192):
        B, nw = ln_launch(N)
        args = [("X", "*fp16", 0), ("Y", "*fp16", 1), ("W", "*fp16", 2), ("B", "*fp16", 3), ("Mean", "*fp32", 4),
                ("Rstd", "*fp32", 5), ("stride", "i32", N), ("N", "i32", N), ("eps", "fp32", 1e-5),
                ("BLOCK", "constexpr", B)]
        cases.append(Case(f"ln_fwd_{N}", "ln_fwd", "05-layer-norm.cpp", "_layer_norm_fwd_fused", args,
                          nw, 3, N, "per row"))
    for N in (4096, 8192):
        B, nw = ln_launch(N)
        G = group_size_m(N)
        args = [("DX", "*fp16", 0), ("DY", "*fp16", 1), ("DW", "*fp16", 2), ("DB", "*fp16", 3), ("X", "*fp16", 4),
                ("W", "*fp16", 5), ("Mean", "*fp32", 6), ("Rstd", "*fp32", 7), ("Lock", "*i32", 8),
                ("stride", "i32", N), ("N", "i32", N), ("GROUP", "constexpr", G), ("BLOCK", "constexpr", B)]
        cases.append(Case(f"ln_dx_{N}", "ln_bwd_dx", "05-layer-norm.cpp", "_layer_norm_bwd_dx_fused",
                          args, nw, 3, N, "per row"))
        args = [("DW", "*fp16", 0), ("DB", "*fp16", 1), ("FINAL_DW", "*fp16", 2), ("FINAL_DB", "*fp16", 3),
                ("M", "i32", min(G, M_ROWS)), ("N", "i32", N), ("BLOCK_M", "constexpr", 32),
                ("BLOCK_N", "constexpr", 128)]
        cases.append(Case(f"ln_dwdb_{N}", "ln_bwd_dwdb", "05-layer-norm.cpp", "_layer_norm_bwd_dwdb", args,
                          4, 3, 32 * 128, "per (row, column) of one 32x128 step (loop body counted once)"))
    return cases


# ------------------------------------------------------------------------------------------------
# SASS analysis
# ------------------------------------------------------------------------------------------------

SASS_LINE = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;")

CLASSES = [  # (class, regex on the opcode), first match wins
    ("ldg", r"^LDG"), ("stg", r"^STG"), ("ldgsts/tma", r"^(LDGSTS|UTMALDG|UBLKCP|UTMASTG|LDGDEPBAR)"),
    ("lds", r"^(LDS|LDSM)"), ("sts", r"^STS"), ("local", r"^(LDL|STL)"), ("const", r"^(LDC|ULDC)"),
    ("atom", r"^(ATOM|RED)"), ("shfl", r"^SHFL"), ("bar", r"^(BAR|WARPSYNC|MEMBAR|FENCE|SYNCS|DEPBAR|ARRIVES)"),
    ("mma", r"^(HMMA|HGMMA|WARPGROUP|IMMA)"), ("mufu", r"^MUFU"),
    ("fp32", r"^(FFMA|FADD|FMUL|FMNMX|FSETP|FSEL|FSET|FCHK|FRND|FMUL2)"), ("fp16", r"^(HADD2|HFMA2|HMUL2|HMNMX2|HSET)"),
    ("cvt", r"^(F2F|F2I|I2F|F2FP|I2FP|F2IP)"),
    ("imad", r"^IMAD"), ("int", r"^(IADD3|IADD|LOP3|LOP|SHF|SHL|SHR|LEA|ISETP|IMNMX|SEL|IABS|PRMT|BMSK|FLO|POPC|BREV|IMUL|VIADD|VIMNMX|ISCADD)"),
    ("uniform", r"^U"), ("mov", r"^(MOV|S2R|S2UR|CS2R|R2UR|P2R|R2P|PLOP3|VOTE|PRMT)"),
    ("ctrl", r"^(BRA|EXIT|BSSY|BSYNC|CALL|RET|BPT|YIELD|NOP|JMP|ACQBULK|ELECT|NANOSLEEP|WARPGROUP)"),
]


def parse_sass(text):
    ops = []
    for line in text.splitlines():
        m = SASS_LINE.search(line)
        if not m:
            continue
        ins = m.group(1).strip()
        if ins.startswith("@"):
            ins = ins.split(None, 1)[1] if " " in ins else ins
        op = ins.split()[0]
        if op == "NOP":
            continue
        ops.append((op, ins))
    return ops


def classify(op):
    for cls, rx in CLASSES:
        if re.match(rx, op):
            return cls
    return "other"


def find_cuobjdump():
    """CUDA's own, else pip's nvidia-cuda-cuobjdump (CUDA 13: reads NVRTC 13's cubins cleanly), else Triton's."""
    cands = [os.environ.get("CUOBJDUMP", ""), f"{CUDA}/bin/cuobjdump"]
    try:
        import nvidia
        cands += [os.path.join(d, "cu13", "bin", "cuobjdump") for d in nvidia.__path__]
    except ImportError:
        pass
    if triton is not None:
        cands.append(os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump"))
    for c in cands:
        if c and os.access(c, os.X_OK):
            return c
    sys.exit("no cuobjdump: pip install nvidia-cuda-cuobjdump, or set CUOBJDUMP")


def sass_of(cubin_path):
    return subprocess.run([find_cuobjdump(), "-sass", cubin_path], check=True, capture_output=True,
                          text=True).stdout


PTXAS_RX = {
    "regs": r"Used (\d+) registers", "spill_st": r"(\d+) bytes spill stores", "spill_ld": r"(\d+) bytes spill loads",
    "stack": r"(\d+) bytes stack frame", "static_smem": r"(\d+) bytes smem", "barriers": r"used (\d+) barriers",
}


def parse_ptxas(log):
    out = {}
    for k, rx in PTXAS_RX.items():
        m = re.search(rx, log)
        out[k] = int(m.group(1)) if m else 0
    return out


# ------------------------------------------------------------------------------------------------
# Triton side
# ------------------------------------------------------------------------------------------------

def compile_triton(case, d, ptxas_path):
    from triton.backends.compiler import GPUTarget
    fn = getattr(triton_kernels, case.triton_fn)
    sig, constexprs, attrs = {}, {}, {}
    for i, (name, kind, v) in enumerate(case.args):
        if kind == "constexpr" or (kind == "i32" and v == 1):  # Triton specialises 1 as a constexpr
            sig[name] = "constexpr"
            constexprs[name] = v
        else:
            sig[name] = kind
            if kind.startswith("*") or (kind == "i32" and v % 16 == 0):
                attrs[(i, )] = [["tt.divisibility", 16]]
    src = triton.compiler.ASTSource(fn=fn, signature=sig, constexprs=constexprs, attrs=attrs)
    k = triton.compile(src, target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": case.num_warps, "num_stages": case.num_stages})
    ptx = k.asm["ptx"]
    open(f"{d}/triton.ptx", "w").write(ptx)
    open(f"{d}/triton.ttgir", "w").write(k.asm["ttgir"])
    cubin = f"{d}/triton.cubin"
    if ptxas_path is None:  # Triton's own cubin, from its bundled ptxas; -v again for the stats
        open(cubin, "wb").write(k.asm["cubin"])
        from triton.backends.nvidia.compiler import get_ptxas
        ptxas_path = get_ptxas(90).path
        out = os.devnull
    else:
        out = cubin
    r = subprocess.run([ptxas_path, "-lineinfo", "-v", "--gpu-name=sm_90a", f"{d}/triton.ptx", "-o", out],
                       capture_output=True, text=True, check=True)
    log = r.stderr + r.stdout
    open(f"{d}/triton.ptxas.log", "w").write(log)
    stats = parse_ptxas(log)
    stats["dyn_smem"] = k.metadata.shared
    stats["threads"] = 32 * case.num_warps
    sass = sass_of(cubin)
    open(f"{d}/triton.sass", "w").write(sass)
    return stats, parse_sass(sass)


# ------------------------------------------------------------------------------------------------
# Tritium side
# ------------------------------------------------------------------------------------------------

GEN_CPP = r'''// Written by bench/triton_sass.py: Tritium's CUDA source for kernels of tutorials/%(tutorial)s.
#include <tritium/tritium.h>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>
#include "jit/cuda/codegen.h"
#include "jit/passes/axis_info.h"
#define main tutorial_main
#include "%(repo)s/tutorials/%(tutorial)s"
#undef main

namespace tsass {
template <class T> T* addr(uint64_t i) { return reinterpret_cast<T*>(uint64_t{0x7f0000000000} + i * 0x100000); }
template <class... A> void gen(const std::string& dir, const char* name, tritium::Kernel& k, int nw, int ns,
                               const A&... args) {
  auto f = k.optimized_function(args..., tritium::Options{.num_warps = nw, .num_stages = ns});
  auto axis = tritium::jit::analyze_axis_info(*f);
  tritium::jit::CompileOptions opts;
  opts.num_warps = nw;
  opts.num_stages = ns;
  // As the CUDA backend on an H100: the opt-in shared memory less 8 KB.
  auto ks = tritium::jit::cuda::generate_cuda(*f, axis, opts, %(smem)d - 8 * 1024, 90);
  std::ofstream(dir + "/" + name + "/tritium.cu") << ks.source;
  std::ofstream(dir + "/" + name + "/tritium.json")
      << "{\"entry\": \"" << ks.entry << "\", \"threads\": " << ks.num_threads << ", \"dyn_smem\": " << ks.smem_bytes
      << ", \"scratch\": " << ks.scratch_bytes << "}\n";
}
}  // namespace tsass

int main(int argc, char** argv) {
  std::string dir = argv[1];
  std::set<std::string> only(argv + 2, argv + argc);
  auto want = [&](const char* n) { return only.count(n) > 0; };
%(calls)s
  return 0;
}
'''

CXX_TYPES = {"*fp32": "float", "*fp16": "tritium::f16_t", "*bf16": "tritium::bf16_t", "*i32": "int32_t"}


def cxx_arg(kind, v):
    if kind.startswith("*"):
        return f"tsass::addr<{CXX_TYPES[kind]}>({v})"
    if kind == "fp32":
        return f"{float(v)!r}f"
    return str(int(v))


def build_generator(tutorial, cases, workdir, build_dir):
    stem = re.sub(r"\W", "_", tutorial.split(".")[0])
    calls = "\n".join(
        f'  if (want("{c.name}")) tsass::gen(dir, "{c.name}", {c.kernel}, {c.num_warps}, {c.tritium_num_stages}, '
        + ", ".join(cxx_arg(kind, v) for _, kind, v in c.tritium_args) + ");" for c in cases)
    src = GEN_CPP % {"tutorial": tutorial, "repo": REPO, "smem": H100_SMEM_OPTIN, "calls": calls}
    cpp, exe = f"{workdir}/gen_{stem}.cpp", f"{workdir}/gen_{stem}"
    lib = f"{build_dir}/libtritium.so"
    deps = [f"{REPO}/tutorials/{tutorial}", lib]
    if os.path.exists(cpp) and open(cpp).read() == src and os.path.exists(exe) and \
            all(os.path.getmtime(exe) > os.path.getmtime(p) for p in deps):
        return exe
    open(cpp, "w").write(src)
    cmd = ["c++", "-std=c++20", "-O0", "-w", "-DFMT_SHARED", f"-I{REPO}/include", f"-I{REPO}", f"-I{REPO}/tutorials",
           cpp, "-o", exe, f"-L{build_dir}", "-ltritium", "-lfmt", f"-Wl,-rpath,{build_dir}"]
    print("building", os.path.basename(exe), "...", file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True)
    return exe


class Nvrtc:
    def __init__(self):
        self.lib = ctypes.CDLL(os.environ.get("TRITIUM_LIBNVRTC", f"{CUDA}/lib64/libnvrtc.so"))

    def compile(self, source, name, options):
        lib, prog = self.lib, ctypes.c_void_p()
        r = lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), f"{name}.cu".encode(), 0, None, None)
        assert r == 0, r
        opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
        r = lib.nvrtcCompileProgram(prog, len(options), opts)
        n = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
        log = ctypes.create_string_buffer(n.value)
        lib.nvrtcGetProgramLog(prog, log)
        log = log.value.decode(errors="replace")
        if r != 0:
            raise RuntimeError(f"NVRTC failed for {name}:\n{log}")
        out = {}
        for what in ("CUBIN", "PTX"):
            size = ctypes.c_size_t()
            if getattr(lib, f"nvrtcGet{what}Size")(prog, ctypes.byref(size)) == 0 and size.value > 1:
                buf = ctypes.create_string_buffer(size.value)
                getattr(lib, f"nvrtcGet{what}")(prog, buf)
                out[what] = buf.raw
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
        return out, log


def compile_tritium(case, d, nvrtc):
    meta = json.load(open(f"{d}/tritium.json"))
    src = open(f"{d}/tritium.cu").read()
    base = ["-std=c++17", "-default-device", "-minimal"]
    out, log = nvrtc.compile(src, meta["entry"], ["--gpu-architecture=sm_90a"] + base + ["--ptxas-options=-v"])
    open(f"{d}/tritium.ptxas.log", "w").write(log)
    open(f"{d}/tritium.cubin", "wb").write(out["CUBIN"])
    ptx, _ = nvrtc.compile(src, meta["entry"], ["--gpu-architecture=compute_90a"] + base)
    open(f"{d}/tritium.ptx", "w").write(ptx["PTX"].rstrip(b"\0").decode())
    stats = parse_ptxas(log)
    stats["dyn_smem"] = meta["dyn_smem"]
    stats["scratch"] = meta["scratch"]
    stats["threads"] = meta["threads"]
    sass = sass_of(f"{d}/tritium.cubin")
    open(f"{d}/tritium.sass", "w").write(sass)
    return stats, parse_sass(sass)


# ------------------------------------------------------------------------------------------------
# Report
# ------------------------------------------------------------------------------------------------

CLASS_ORDER = [c for c, _ in CLASSES] + ["other", "TOTAL"]


def report(case, results, show_opcodes, out):
    p = lambda s="": print(s, file=out)
    p(f"=== {case.name}: {case.triton_fn}, num_warps={case.num_warps}, Triton num_stages={case.num_stages}; "
      f"per elem = warp instrs * num_warps / {case.elems} ({case.note or 'per program'})")
    sides = [s for s in ("triton", "tritium") if s in results]
    for s in sides:
        st = results[s][0]
        p(f"  {s:8s} regs={st['regs']:3d} spill st/ld={st['spill_st']}/{st['spill_ld']} B stack={st['stack']} B "
          f"smem static={st['static_smem']} dyn={st['dyn_smem']} B" + (f" scratch={st['scratch']} B" if st.get('scratch') else "")
          + f" threads={st['threads']} sass={len(results[s][1])}")
    hist = {s: Counter(classify(op) for op, _ in results[s][1]) for s in sides}
    for s in sides:
        hist[s]["TOTAL"] = len(results[s][1])
    nw = case.num_warps
    p("  " + f"{'class':12s}" + "".join(f"{s + ' n':>11s}{'per elem':>10s}" for s in sides))
    for cls in CLASS_ORDER:
        if not any(hist[s][cls] for s in sides):
            continue
        p("  " + f"{cls:12s}" + "".join(f"{hist[s][cls]:11d}{hist[s][cls] * nw / case.elems:10.3f}" for s in sides))
    if show_opcodes:
        ops = {s: Counter(op for op, _ in results[s][1]) for s in sides}
        keys = sorted(set().union(*[ops[s].keys() for s in sides]), key=lambda k: (classify(k), k))
        p("  " + f"{'opcode':24s}" + "".join(f"{s:>10s}" for s in sides))
        for k in keys:
            p("  " + f"{k:24s}" + "".join(f"{ops[s][k]:10d}" for s in sides))
    p()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", help="output directory (created)")
    ap.add_argument("--only", default="", help="comma-separated case names (default: all)")
    ap.add_argument("--build", default=f"{REPO}/build", help="build dir with libtritium.so")
    ap.add_argument("--triton-ptxas", default=None, help="assemble Triton's PTX with this ptxas instead of its own")
    ap.add_argument("--opcodes", action="store_true", help="also print the full per-opcode histogram")
    ap.add_argument("--skip-triton", action="store_true")
    ap.add_argument("--skip-tritium", action="store_true")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    cases = make_cases()
    if a.list:
        for c in cases:
            print(c.name, c.kernel, f"num_warps={c.num_warps}", ", ".join(f"{n}={v}" for n, _, v in c.args))
        return
    if a.only:
        want = set(a.only.split(","))
        unknown = want - {c.name for c in cases}
        if unknown:
            sys.exit(f"unknown cases: {sorted(unknown)} (see --list)")
        cases = [c for c in cases if c.name in want]
    out_dir = os.path.abspath(a.out)
    for c in cases:
        os.makedirs(f"{out_dir}/{c.name}", exist_ok=True)
    results = {c.name: {} for c in cases}
    if not a.skip_tritium:
        workdir = f"{out_dir}/_gen"
        os.makedirs(workdir, exist_ok=True)
        by_tutorial = OrderedDict()
        for c in cases:
            by_tutorial.setdefault(c.tutorial, []).append(c)
        nvrtc = Nvrtc()
        for tut, cs in by_tutorial.items():
            exe = build_generator(tut, cs, workdir, a.build)
            subprocess.run([exe, out_dir] + [c.name for c in cs], check=True)
            for c in cs:
                results[c.name]["tritium"] = compile_tritium(c, f"{out_dir}/{c.name}", nvrtc)
    if not a.skip_triton:
        if triton is None:
            sys.exit("triton is not importable: run with the venv's python or --skip-triton")
        for c in cases:
            results[c.name]["triton"] = compile_triton(c, f"{out_dir}/{c.name}", a.triton_ptxas)
    with open(f"{out_dir}/summary.txt", "w") as f:
        for c in cases:
            for stream in (sys.stdout, f):
                report(c, results[c.name], a.opcodes, stream)


if __name__ == "__main__":
    main()
