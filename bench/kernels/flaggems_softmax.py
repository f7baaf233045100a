"""FlagGems' softmax forward beside kernels/flaggems_softmax.cpp.

The original, loaded from its upstream files (bench/kernels/_upstream.py says where):
flagos-ai/FlagGems src/flag_gems/ops/softmax.py at 17c275fbdd3a (softmax_kernel_non_inner,
softmax_kernel_inner, prev_multiple_of, softmax_out, softmax), the softmax_heur_* functions of
src/flag_gems/runtime/backend/_nvidia/heuristics_config_utils.py at b684fbc78add and program_id of
src/flag_gems/utils/triton_lang_extension.py. FlagGems' package is not imported (it registers
itself with torch and needs its own runtime), so its helpers are stood in for: libentry (a launch
cache) by the identity, runtime.get_heuristic_config by the "softmax_non_inner" / "softmax_inner"
entries of that file's HEURISTICS_CONFIGS (the same functions), torch_device_fn by torch.cuda,
zero_ by Tensor.zero_, the logger by a no-op.
bench() times softmax(x, dim 1) on FlagGems' benchmark/test_softmax.py shapes
(UnaryReductionBenchmark of benchmark/core_shapes.yaml; dim 0 for the 1-D one) in f16, f32 and
bf16 with triton.testing.do_bench, median; GB/s counts input and output, as its get_gbps.
"""
import os
import sys
import types

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _upstream  # noqa: E402

NAME = "flaggems_softmax"
FLAGGEMS = "flagos-ai/FlagGems"
UPSTREAM = [
    (FLAGGEMS, "src/flag_gems/ops/softmax.py", "17c275fbdd3afc21a28536002557f854e3273c22"),
    (FLAGGEMS, "src/flag_gems/runtime/backend/_nvidia/heuristics_config_utils.py", "b684fbc78add740db16dd414cad75dd2d2105ae3"),
    (FLAGGEMS, "src/flag_gems/utils/triton_lang_extension.py", "f1615be17e96b87f31c276fa7e0c757c5d1db29d"),
]


def _original():
    _upstream.require(UPSTREAM)
    heur = _upstream.load(FLAGGEMS, UPSTREAM[1][1], [
        "softmax_heur_tile_k", "softmax_heur_tile_n_non_inner", "softmax_heur_one_tile_per_cta",
        "softmax_heur_num_warps_non_inner", "softmax_heur_tile_n_inner", "softmax_heur_num_warps_inner"])
    configs = {
        "softmax_non_inner": {"TILE_K": heur["softmax_heur_tile_k"], "TILE_N": heur["softmax_heur_tile_n_non_inner"],
                              "ONE_TILE_PER_CTA": heur["softmax_heur_one_tile_per_cta"],
                              "num_warps": heur["softmax_heur_num_warps_non_inner"]},
        "softmax_inner": {"TILE_N": heur["softmax_heur_tile_n_inner"],
                          "ONE_TILE_PER_CTA": heur["softmax_heur_one_tile_per_cta"],
                          "num_warps": heur["softmax_heur_num_warps_inner"]},
    }
    ext_ns = _upstream.load(FLAGGEMS, UPSTREAM[2][1], ["program_id"])

    def libentry():
        return lambda fn: fn

    ns = {
        "runtime": types.SimpleNamespace(get_heuristic_config=lambda name: configs[name]),
        "libentry": libentry,
        "torch_device_fn": types.SimpleNamespace(device=torch.cuda.device),
        "zero_": lambda t: t.zero_(),
        "ext": _upstream.module("flag_gems.utils.triton_lang_extension", ext_ns, ["program_id"]),
        "logger": types.SimpleNamespace(debug=lambda *a, **k: None),
    }
    return _upstream.load(FLAGGEMS, UPSTREAM[0][1], ["softmax_kernel_non_inner", "prev_multiple_of",
                                                     "softmax_kernel_inner", "softmax_out", "softmax"], ns)


def check() -> bool:
    ns = _original()
    torch.manual_seed(0)
    ok = True
    for shape, dim, dtype, bound in [((5, 1000), 1, torch.float32, 1e-5), ((3, 777), -1, torch.float16, 1e-3),
                                     ((2, 40000), 1, torch.bfloat16, 1e-2), ((1, 33000), 1, torch.float32, 1e-5),
                                     ((3, 50, 20), 1, torch.float16, 1e-3), ((1, 9000, 3), 1, torch.float32, 1e-5),
                                     ((2, 9000, 3), 1, torch.bfloat16, 1e-2), ((7, 5, 33), 0, torch.float32, 1e-5)]:
        x = (2 * torch.randn(shape, device="cuda")).to(dtype)
        y = ns["softmax"](x, dim)
        ref = torch.softmax(x.double(), dim)
        rel = ((y.double() - ref).norm() / ref.norm()).item()
        print(f"{NAME} (Triton) {tuple(shape)} dim {dim} {dtype}: rel err {rel:.2e} (bound {bound:.0e})")
        ok = ok and rel <= bound
    return ok


SHAPES = [(1048576,), (64, 64), (4096, 4096), (64, 512, 512), (1024, 1024, 1024)]


def bench() -> list:
    ns = _original()
    rows = []
    for dtype, name in [(torch.float16, "f16"), (torch.float32, "f32"), (torch.bfloat16, "bf16")]:
        for shape in SHAPES:
            x = torch.randn(shape, device="cuda").to(dtype)
            dim = 1 if len(shape) > 1 else 0
            ms = triton.testing.do_bench(lambda: ns["softmax"](x, dim), return_mode="median")
            nbytes = 2 * x.numel() * x.element_size()
            rows.append({"shape": f"{'x'.join(map(str, shape))} {name}", "ms": ms,
                         "rate": nbytes * 1e-9 / (ms * 1e-3), "unit": "GB/s"})
    return rows


if __name__ == "__main__":
    ok = check()
    for r in bench():
        print(f"bench {NAME} | {r['shape']} | {r['ms']:.4f} | {r['rate']:.2f} {r['unit']}")
    raise SystemExit(0 if ok else 1)
