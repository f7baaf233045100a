"""FlagGems' var_mean beside kernels/var_mean.cpp.

The original, loaded from its upstream files (bench/kernels/_upstream.py says where):
flagos-ai/FlagGems src/flag_gems/ops/var_mean.py at b684fbc78add (welford_func,
var_mean_welford_kernel, var_mean_kernel_1, var_mean_kernel_2, var_mean), var_mean_heur_block_n of
src/flag_gems/runtime/backend/_nvidia/heuristics_config_utils.py and dim_compress of
src/flag_gems/utils/shape_utils.py at the same commit, and program_id of
src/flag_gems/utils/triton_lang_extension.py. FlagGems' package is not imported (it registers
itself with torch and needs its own runtime), so its helpers are stood in for: libentry (a launch
cache) by the identity, runtime.get_heuristic_config("var_mean") by {"BLOCK_N":
var_mean_heur_block_n}, torch_device_fn by torch.cuda, the logger by a no-op.
bench() times var_mean(x, [1]) (every dim for the 1-D shape) on FlagGems' benchmark/test_var_mean.py
shapes (UnaryReductionBenchmark of benchmark/core_shapes.yaml) in f16, f32 and bf16 with
triton.testing.do_bench, median; GB/s counts the input read once, as the port's bench.
"""
import os
import sys
import types

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _upstream  # noqa: E402

NAME = "var_mean"
FLAGGEMS = "flagos-ai/FlagGems"
COMMIT = "b684fbc78add740db16dd414cad75dd2d2105ae3"
UPSTREAM = [
    (FLAGGEMS, "src/flag_gems/ops/var_mean.py", COMMIT),
    (FLAGGEMS, "src/flag_gems/runtime/backend/_nvidia/heuristics_config_utils.py", COMMIT),
    (FLAGGEMS, "src/flag_gems/utils/shape_utils.py", COMMIT),
    (FLAGGEMS, "src/flag_gems/utils/triton_lang_extension.py", "f1615be17e96b87f31c276fa7e0c757c5d1db29d"),
]


def _original():
    _upstream.require(UPSTREAM)
    heur = _upstream.load(FLAGGEMS, UPSTREAM[1][1], ["var_mean_heur_block_n"])
    shape_ns = _upstream.load(FLAGGEMS, UPSTREAM[2][1], ["dim_compress"])
    ext_ns = _upstream.load(FLAGGEMS, UPSTREAM[3][1], ["program_id"])

    def libentry():
        return lambda fn: fn

    ns = {
        "runtime": types.SimpleNamespace(get_heuristic_config=lambda name: {"BLOCK_N": heur["var_mean_heur_block_n"]}),
        "torch_device_fn": types.SimpleNamespace(device=torch.cuda.device),
        "libentry": libentry,
        "dim_compress": shape_ns["dim_compress"],
        "ext": _upstream.module("flag_gems.utils.triton_lang_extension", ext_ns, ["program_id"]),
        "logger": types.SimpleNamespace(debug=lambda *a, **k: None),
    }
    return _upstream.load(FLAGGEMS, UPSTREAM[0][1], ["welford_func", "var_mean_welford_kernel", "var_mean_kernel_1",
                                                     "var_mean_kernel_2", "var_mean"], ns)


def check() -> bool:
    ns = _original()
    torch.manual_seed(0)
    ok = True
    for shape, dim, corr, dtype, bound in [((5, 3000), [1], 1.0, torch.float32, 1e-5),
                                           ((6, 40, 7), [0, 2], 0.0, torch.float32, 1e-5),
                                           ((9, 777), [-1], 1.0, torch.float16, 1e-3),
                                           ((5000,), None, 1.0, torch.float32, 1e-5),
                                           ((3, 1500), None, 0.0, torch.bfloat16, 1e-2)]:
        x = (0.5 + 2 * torch.randn(shape, device="cuda")).to(dtype)
        var, mean = ns["var_mean"](x, dim, correction=corr)
        rv, rm = torch.var_mean(x.double(), dim, correction=corr)
        ev = ((var.double() - rv).norm() / rv.norm()).item()
        em = ((mean.double() - rm).norm() / rm.norm()).item()
        print(f"{NAME} (Triton) {shape} dim {dim} correction {corr} {dtype}: rel err var {ev:.2e} mean {em:.2e} "
              f"(bound {bound:.0e})")
        ok = ok and max(ev, em) <= bound
    return ok


SHAPES = [(1048576,), (64, 64), (4096, 4096), (64, 512, 512), (1024, 1024, 1024)]


def bench() -> list:
    ns = _original()
    rows = []
    for dtype, name in [(torch.float16, "f16"), (torch.float32, "f32"), (torch.bfloat16, "bf16")]:
        for shape in SHAPES:
            x = torch.randn(shape, device="cuda").to(dtype)
            dim = [1] if len(shape) > 1 else None
            ms = triton.testing.do_bench(lambda: ns["var_mean"](x, dim), return_mode="median")
            rows.append({"shape": f"{'x'.join(map(str, shape))} {name}", "ms": ms,
                         "rate": x.numel() * x.element_size() * 1e-9 / (ms * 1e-3), "unit": "GB/s"})
    return rows


if __name__ == "__main__":
    ok = check()
    for r in bench():
        print(f"bench {NAME} | {r['shape']} | {r['ms']:.4f} | {r['rate']:.2f} {r['unit']}")
    raise SystemExit(0 if ok else 1)
