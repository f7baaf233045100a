#!/usr/bin/env python3
"""Triton's cold compile of a few of the kernel suite's originals for sm_90a, without a GPU.

Each case compiles one original (bench/kernels/upstream, git-ignored; MANIFEST.txt) with
triton.compile(ASTSource(...), target=GPUTarget("cuda", 90, 32)) in a fresh TRITON_CACHE_DIR,
specialised as the Triton runtime would (pointers and multiples of 16 marked divisible by 16), for
the shape of the port's --check (the census of our side, `first-run-census --suite`, compiles the
ports at those shapes), and prints the wall and CPU time of the compile (front end, TTIR, TTGIR,
LLIR, PTX, and ptxas, a child process whose CPU time is counted). The originals import torch and their project's helpers at module level: a stub
stands in for both (the kernels themselves use neither). The first compile of the process (Triton's
own start-up: MLIR contexts, the NVIDIA backend) is timed apart and left out.

  /work/.tritonvenv/bin/python bench/triton_cold_compile.py [--upstream DIR] [--only a,b]
"""

import argparse
import importlib.util
import os
import resource
import sys
import tempfile
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))

# name: (original file, function, [(arg, kind, value)], num_warps). kind: a Triton type, or
# "constexpr"; values are those of the port's first check case (kernels/<name>.cpp).
CASES = {
    # swiglu's first check case: 37 rows of 300 f32 (calculate_settings: BLOCK 512, 4 warps).
    "swiglu_fwd": ("linkedin/Liger-Kernel/src/liger_kernel/ops/swiglu.py", "_swiglu_forward_kernel",
                   [("a_ptr", "*fp32", 0), ("b_ptr", "*fp32", 0), ("c_ptr", "*fp32", 0), ("stride", "i32", 300),
                    ("gate_multiplier", "fp32", 1.0), ("n_cols", "constexpr", 300), ("BLOCK_SIZE", "constexpr", 512)], 4),
    "swiglu_bwd": ("linkedin/Liger-Kernel/src/liger_kernel/ops/swiglu.py", "_swiglu_backward_kernel",
                   [("dc_ptr", "*fp32", 0), ("a_ptr", "*fp32", 0), ("b_ptr", "*fp32", 0), ("stride", "i32", 300),
                    ("gate_multiplier", "fp32", 1.0), ("n_cols", "constexpr", 300), ("BLOCK_SIZE", "constexpr", 512)], 4),
    # relu_squared's first check case: 37 x 300 f32.
    "relu_squared_fwd": ("linkedin/Liger-Kernel/src/liger_kernel/ops/relu_squared.py", "_relu_squared_forward_kernel",
                         [("Y_ptr", "*fp32", 0), ("Y_stride", "i32", 300), ("X_ptr", "*fp32", 0),
                          ("X_stride", "i32", 300), ("n_cols", "constexpr", 300), ("BLOCK_SIZE", "constexpr", 512)], 4),
    "relu_squared_bwd": ("linkedin/Liger-Kernel/src/liger_kernel/ops/relu_squared.py", "_relu_squared_backward_kernel",
                         [("dX_ptr", "*fp32", 0), ("dX_stride", "i32", 300), ("dY_ptr", "*fp32", 0),
                          ("dY_stride", "i32", 300), ("X_ptr", "*fp32", 0), ("X_stride", "i32", 300),
                          ("n_cols", "constexpr", 300), ("BLOCK_SIZE", "constexpr", 512)], 4),
}


class _StubMeta(type):
    """Stub attributes are the stub class itself: callable (a decorator returns what it wraps),
    subscriptable, and a base class (torch.autograd.Function)."""

    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Anything

    def __call__(cls, *a, **k):
        return a[0] if len(a) == 1 and callable(a[0]) and not k else _Anything

    def __getitem__(cls, key):
        return _Anything


class _Anything(metaclass=_StubMeta):
    pass


class _Stub(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Anything


class _StubFinder:
    """Imports torch and the originals' own packages as stubs."""
    PREFIXES = ("torch", "liger_kernel", "flag_gems", "unsloth", "vllm", "bitsandbytes")

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.PREFIXES:
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        m = _Stub(spec.name)
        m.__path__ = []
        return m

    def exec_module(self, module):
        pass


def load(path, tag):
    spec = importlib.util.spec_from_file_location(tag, path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def cpu_s():
    """CPU seconds of this process and its finished children (Triton runs ptxas as a child)."""
    return sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
                                                  resource.getrusage(resource.RUSAGE_CHILDREN)))


def compile_case(upstream, name, case):
    import triton
    from triton.backends.compiler import GPUTarget
    path, fn_name, args, warps = case
    fn = getattr(load(os.path.join(upstream, path), "orig_" + name), fn_name)
    sig, constexprs, attrs = {}, {}, {}
    for i, (arg, kind, v) in enumerate(args):
        if kind == "constexpr" or (kind == "i32" and v == 1):
            sig[arg], constexprs[arg] = "constexpr", v
        else:
            sig[arg] = kind
            if kind.startswith("*") or (kind == "i32" and v % 16 == 0):
                attrs[(i, )] = [["tt.divisibility", 16]]
    src = triton.compiler.ASTSource(fn=fn, signature=sig, constexprs=constexprs, attrs=attrs)
    w0, c0 = time.perf_counter(), cpu_s()
    k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": warps, "num_stages": 3})
    return time.perf_counter() - w0, cpu_s() - c0, len(k.asm["cubin"])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--upstream", default=os.path.join(HERE, "kernels", "upstream"))
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    sys.meta_path.insert(0, _StubFinder())
    names = [n for n in a.only.split(",") if n] or list(CASES)
    with tempfile.TemporaryDirectory() as cache:
        os.environ["TRITON_CACHE_DIR"] = cache
        # Triton's start-up (the first compile of the process), apart.
        first = names[0]
        wall, cpu, _ = compile_case(a.upstream, first + "_warmup", CASES[first])
        print(f"first compile of the process ({first}, with Triton's start-up): {wall * 1e3:.0f} ms wall, "
              f"{cpu * 1e3:.0f} ms CPU")
        print(f"{'case':20s} {'wall ms':>8s} {'cpu ms':>8s} {'cubin':>7s}")
        for n in names:
            # A fresh cache directory per case: nothing from the warm-up compile is reused.
            with tempfile.TemporaryDirectory() as c:
                os.environ["TRITON_CACHE_DIR"] = c
                wall, cpu, size = compile_case(a.upstream, n, CASES[n])
            print(f"{n:20s} {wall * 1e3:8.0f} {cpu * 1e3:8.0f} {size:7d}", flush=True)


if __name__ == "__main__":
    main()
