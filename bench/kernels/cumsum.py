"""FlagGems' cumsum beside kernels/cumsum.cpp.

The original, loaded from its upstream files (bench/kernels/_upstream.py says where):
flagos-ai/FlagGems src/flag_gems/ops/cumsum.py at c7f325d7f799 (get_scan_accum_type, the
scan-then-fan and reduce-then-scan kernels with their host functions, cumsum_wrapper, cumsum) and
program_id of src/flag_gems/utils/triton_lang_extension.py. FlagGems' package is not imported (it
registers itself with torch and needs its own runtime), so its helpers are stood in for: libentry
(a launch cache) by the identity, torch_device_fn by torch.cuda, get_device_properties by
torch.cuda.get_device_properties, the logger by a no-op.
bench() times cumsum(x, 1) on FlagGems' benchmark/test_cumsum.py shapes (GenericBenchmark2DOnly of
benchmark/core_shapes.yaml) in f16, f32, bf16 and int32 with triton.testing.do_bench, median.
"""
import functools
import math
import os
import sys
import types

import torch
import triton
from torch._prims_common import is_boolean_dtype, is_integer_dtype

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _upstream  # noqa: E402

NAME = "cumsum"
FLAGGEMS = "flagos-ai/FlagGems"
UPSTREAM = [
    (FLAGGEMS, "src/flag_gems/ops/cumsum.py", "c7f325d7f799761c60bc8f5c7b0d26c975000e81"),
    (FLAGGEMS, "src/flag_gems/utils/triton_lang_extension.py", "f1615be17e96b87f31c276fa7e0c757c5d1db29d"),
]


def _original():
    _upstream.require(UPSTREAM)
    ext_ns = _upstream.load(FLAGGEMS, UPSTREAM[1][1], ["program_id"])

    def libentry():
        return lambda fn: fn

    ns = {
        "functools": functools,
        "math": math,
        "is_boolean_dtype": is_boolean_dtype,
        "is_integer_dtype": is_integer_dtype,
        "libentry": libentry,
        "torch_device_fn": types.SimpleNamespace(device=torch.cuda.device),
        "get_device_properties": torch.cuda.get_device_properties,
        "ext": _upstream.module("flag_gems.utils.triton_lang_extension", ext_ns, ["program_id"]),
        "logger": types.SimpleNamespace(debug=lambda *a, **k: None),
    }
    return _upstream.load(FLAGGEMS, UPSTREAM[0][1], [
        "get_num_sms", "get_scan_accum_type", "scan_part_sum_abc_kernel", "add_base_sum_abc_kernel", "scan_then_fan",
        "reduce_then_scan_row", "reduce_then_scan_block_sum_kernel_row", "reduce_then_scan_root_scan_kernel_row",
        "reduce_then_scan_block_scan_kernel_row", "cumsum_wrapper", "cumsum"], ns)


def check() -> bool:
    ns = _original()
    torch.manual_seed(0)
    ok = True
    for shape, dim, dtype, bound in [((3, 1000), 1, torch.float32, 1e-5), ((2, 40000), -1, torch.float16, 1e-3),
                                     ((4, 333), 1, torch.bfloat16, 1e-2), ((2, 777), 1, torch.int32, 0.0),
                                     ((3, 100, 5), 1, torch.float32, 1e-5), ((5000, 3), 0, torch.float16, 1e-3),
                                     ((2, 50, 7), 1, torch.int32, 0.0), ((2, 3, 20000), 2, torch.int16, 0.0)]:
        if dtype.is_floating_point:
            x = torch.randn(shape, device="cuda").to(dtype)
        else:
            x = torch.randint(-50, 51, shape, device="cuda", dtype=dtype)
        y = ns["cumsum"](x, dim)
        ref = torch.cumsum(x.double(), dim)
        rel = ((y.double() - ref).norm() / ref.norm()).item()
        print(f"{NAME} (Triton) {tuple(shape)} dim {dim} {dtype}: rel err {rel:.2e} (bound {bound:.0e})")
        ok = ok and rel <= bound
    return ok


SHAPES = [(64, 64), (256, 256), (1024, 1024), (4096, 4096), (1024, 65536)]


def bench() -> list:
    ns = _original()
    rows = []
    for dtype, name in [(torch.float16, "f16"), (torch.float32, "f32"), (torch.bfloat16, "bf16"), (torch.int32, "i32")]:
        for m, n in SHAPES:
            if dtype.is_floating_point:
                x = torch.randn((m, n), device="cuda").to(dtype)
            else:
                x = torch.randint(-100, 100, (m, n), device="cuda", dtype=dtype)
            ms = triton.testing.do_bench(lambda: ns["cumsum"](x, 1), return_mode="median")
            out_bytes = x.element_size() if dtype.is_floating_point else 8
            nbytes = m * n * (x.element_size() + out_bytes)
            rows.append({"shape": f"{m}x{n} {name}", "ms": ms, "rate": nbytes * 1e-9 / (ms * 1e-3), "unit": "GB/s"})
    return rows


if __name__ == "__main__":
    ok = check()
    for r in bench():
        print(f"bench {NAME} | {r['shape']} | {r['ms']:.4f} | {r['rate']:.2f} {r['unit']}")
    raise SystemExit(0 if ok else 1)
