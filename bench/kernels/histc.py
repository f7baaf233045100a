"""FlagGems' histc beside kernels/histc.cpp.

The original, loaded from its upstream files (bench/kernels/_upstream.py says where):
flagos-ai/FlagGems src/flag_gems/ops/histc.py at b684fbc78add (histc_kernel_simple, histc) and
program_id of src/flag_gems/utils/triton_lang_extension.py. FlagGems' package is not imported (it
registers itself with torch and needs its own runtime), so its helpers are stood in for: libentry
(a launch cache) by the identity, torch_device_fn by torch.cuda, the logger by a no-op.
bench() times histc(x, bins=100, min=0, max=10) on FlagGems' benchmark/test_histc.py shapes
(GenericBenchmark2DOnly of benchmark/core_shapes.yaml, f32 values rand * 10) with
triton.testing.do_bench, median; GB/s counts the input read, as the port's bench.
"""
import os
import sys
import types

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _upstream  # noqa: E402

NAME = "histc"
FLAGGEMS = "flagos-ai/FlagGems"
UPSTREAM = [
    (FLAGGEMS, "src/flag_gems/ops/histc.py", "b684fbc78add740db16dd414cad75dd2d2105ae3"),
    (FLAGGEMS, "src/flag_gems/utils/triton_lang_extension.py", "f1615be17e96b87f31c276fa7e0c757c5d1db29d"),
]


def _original():
    _upstream.require(UPSTREAM)
    ext_ns = _upstream.load(FLAGGEMS, UPSTREAM[1][1], ["program_id"])

    def libentry():
        return lambda fn: fn

    ns = {
        "libentry": libentry,
        "torch_device_fn": types.SimpleNamespace(device=torch.cuda.device),
        "ext": _upstream.module("flag_gems.utils.triton_lang_extension", ext_ns, ["program_id"]),
        "logger": types.SimpleNamespace(debug=lambda *a, **k: None),
    }
    return _upstream.load(FLAGGEMS, UPSTREAM[0][1], ["histc_kernel_simple", "histc"], ns)


def check() -> bool:
    ns = _original()
    torch.manual_seed(0)
    ok = True
    for n, bins, lo, hi, auto, dtype in [(5000, 100, 0.0, 10.0, False, torch.float32),
                                         (3333, 37, -2.0, 3.0, False, torch.float32),
                                         (2100, 100, 0.5, 4.5, True, torch.float32),
                                         (1500, 20, 0.0, 4.0, False, torch.float16)]:
        width = (hi - lo) / bins
        x = lo + (torch.randint(0, bins, (n,), device="cuda") + 0.1 + 0.8 * torch.rand(n, device="cuda")) * width
        x[3::16] = hi
        x[11::16] = lo
        if not auto:
            x[5::16] = lo - 1.5
            x[9::16] = float("nan")
        x[0], x[1] = lo, hi
        x = x.to(dtype)
        h = ns["histc"](x, bins) if auto else ns["histc"](x, bins, lo, hi)
        xd = x.double()
        ref = torch.histc(xd[~xd.isnan()], bins, lo, hi)  # NaN dropped, as the kernel does
        err = (h.double() - ref).abs().max().item()
        print(f"{NAME} (Triton) n {n} bins {bins} [{lo}, {hi}] {dtype}: largest count difference {err:.0f}")
        ok = ok and err == 0
    return ok


SHAPES = [(64, 64), (256, 256), (1024, 1024), (4096, 4096), (1024, 65536)]


def bench() -> list:
    ns = _original()
    rows = []
    for m, n in SHAPES:
        x = torch.rand((m, n), device="cuda") * 10
        ms = triton.testing.do_bench(lambda: ns["histc"](x, bins=100, min=0, max=10), return_mode="median")
        rows.append({"shape": f"{m}x{n} f32 bins 100", "ms": ms, "rate": x.numel() * 4 * 1e-9 / (ms * 1e-3), "unit": "GB/s"})
    return rows


if __name__ == "__main__":
    ok = check()
    for r in bench():
        print(f"bench {NAME} | {r['shape']} | {r['ms']:.4f} | {r['rate']:.2f} {r['unit']}")
    raise SystemExit(0 if ok else 1)
