"""FlagGems' index_select beside kernels/index_select.cpp.

The original, loaded from its upstream files (bench/kernels/_upstream.py says where):
flagos-ai/FlagGems src/flag_gems/ops/index_select.py at b684fbc78add (index_select_kernel,
index_select), index_select_heur_block_m / _n of
src/flag_gems/runtime/backend/_nvidia/heuristics_config_utils.py and dim_compress of
src/flag_gems/utils/shape_utils.py at the same commit, and program_id of
src/flag_gems/utils/triton_lang_extension.py. FlagGems' package is not imported (it registers
itself with torch and needs its own runtime), so its helpers are stood in for: libentry (a launch
cache) by the identity, runtime.get_heuristic_config("index_select") by the two heuristics, the
logger by a no-op.
bench() times index_select(x, 0, index) on FlagGems' benchmark/test_index_select.py shapes (the 2-D
GenericBenchmark2DOnly shapes over 16, floor(0.1 x rows) random int64 indices) in f16, f32 and
bf16 with triton.testing.do_bench, median; GB/s counts the selected rows read and written and the
indices, as the port's bench.
"""
import math
import os
import sys
import types

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _upstream  # noqa: E402

NAME = "index_select"
FLAGGEMS = "flagos-ai/FlagGems"
COMMIT = "b684fbc78add740db16dd414cad75dd2d2105ae3"
UPSTREAM = [
    (FLAGGEMS, "src/flag_gems/ops/index_select.py", COMMIT),
    (FLAGGEMS, "src/flag_gems/runtime/backend/_nvidia/heuristics_config_utils.py", COMMIT),
    (FLAGGEMS, "src/flag_gems/utils/shape_utils.py", COMMIT),
    (FLAGGEMS, "src/flag_gems/utils/triton_lang_extension.py", "f1615be17e96b87f31c276fa7e0c757c5d1db29d"),
]


def _original():
    _upstream.require(UPSTREAM)
    heur = _upstream.load(FLAGGEMS, UPSTREAM[1][1], ["index_select_heur_block_m", "index_select_heur_block_n"])
    shape_ns = _upstream.load(FLAGGEMS, UPSTREAM[2][1], ["dim_compress"])
    ext_ns = _upstream.load(FLAGGEMS, UPSTREAM[3][1], ["program_id"])
    configs = {"index_select": {"BLOCK_M": heur["index_select_heur_block_m"],
                                "BLOCK_N": heur["index_select_heur_block_n"]}}

    def libentry():
        return lambda fn: fn

    ns = {
        "runtime": types.SimpleNamespace(get_heuristic_config=lambda name: configs[name]),
        "libentry": libentry,
        "dim_compress": shape_ns["dim_compress"],
        "ext": _upstream.module("flag_gems.utils.triton_lang_extension", ext_ns, ["program_id"]),
        "logger": types.SimpleNamespace(debug=lambda *a, **k: None),
    }
    return _upstream.load(FLAGGEMS, UPSTREAM[0][1], ["index_select_kernel", "index_select"], ns)


def check() -> bool:
    ns = _original()
    torch.manual_seed(0)
    ok = True
    for shape, dim, index_len, dtype, index_dtype in [((37, 100), 1, 45, torch.float32, torch.int64),
                                                      ((300, 20), 0, 70, torch.float16, torch.int64),
                                                      ((3, 50, 7), 1, 33, torch.bfloat16, torch.int32),
                                                      ((5, 9000), -1, 1100, torch.float32, torch.int32),
                                                      ((2, 3), 0, 5, torch.float64, torch.int64)]:
        x = torch.randn(shape, device="cuda").to(dtype)
        index = torch.randint(0, shape[dim], (index_len,), device="cuda", dtype=index_dtype)
        y = ns["index_select"](x, dim, index)
        err = (y.double() - torch.index_select(x, dim, index).double()).abs().max().item()
        print(f"{NAME} (Triton) {tuple(shape)} dim {dim} {index_len} {index_dtype} indices {dtype}: max error {err:.1e}")
        ok = ok and err == 0
    return ok


SHAPES = [(64, 64), (256, 256), (1024, 1024), (4096, 4096), (1024, 65536)]


def bench() -> list:
    ns = _original()
    rows = []
    for dtype, name in [(torch.float16, "f16"), (torch.float32, "f32"), (torch.bfloat16, "bf16")]:
        for s0, s1 in SHAPES:
            x = torch.randn((s0, s1), device="cuda").to(dtype)
            index_len = math.floor(s0 * 0.1)
            index = torch.randint(0, s0, [index_len], device="cuda")
            ms = triton.testing.do_bench(lambda: ns["index_select"](x, 0, index), return_mode="median")
            nbytes = 2 * index_len * s1 * x.element_size() + 8 * index_len
            rows.append({"shape": f"{s0}x{s1} dim 0 {name}", "ms": ms, "rate": nbytes * 1e-9 / (ms * 1e-3), "unit": "GB/s"})
    return rows


if __name__ == "__main__":
    ok = check()
    for r in bench():
        print(f"bench {NAME} | {r['shape']} | {r['ms']:.4f} | {r['rate']:.2f} {r['unit']}")
    raise SystemExit(0 if ok else 1)
