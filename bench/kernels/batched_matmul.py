"""FlagGems' bmm beside kernels/batched_matmul.cpp.

The original, loaded from its upstream files (bench/kernels/_upstream.py says where):
flagos-ai/FlagGems src/flag_gems/ops/bmm.py at 0b15beb789b3 (bmm_kernel, bmm), the "bmm"
heuristics of src/flag_gems/runtime/backend/_nvidia/heuristics_config_utils.py and
program_id / num_programs of src/flag_gems/utils/triton_lang_extension.py. FlagGems' package is
not imported (it registers itself with torch and needs its own runtime), so its helpers are
stood in for: libentry (a launch cache) by the identity, libtuner by triton.autotune with the
same configs and key (FlagGems buckets the key values; the port keys on exact values too), and
runtime.get_tuned_config("bmm") by the "bmm" list of src/flag_gems/runtime/backend/_nvidia/
tune_configs.yaml (TILE_K 32, num_warps 4, the six tiles below, num_stages 2 and 3).
bench() times bmm on FlagGems' BlasBenchmark shapes (benchmark/core_shapes.yaml) in f16 and bf16
with triton.testing.do_bench, median.
"""
import os
import sys
import types

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _upstream  # noqa: E402

NAME = "batched_matmul"
FLAGGEMS = "flagos-ai/FlagGems"
UPSTREAM = [
    (FLAGGEMS, "src/flag_gems/ops/bmm.py", "0b15beb789b35fa8be71efea7193e1acb69a8742"),
    (FLAGGEMS, "src/flag_gems/runtime/backend/_nvidia/heuristics_config_utils.py", "10d91b54b596b352677f69790a9c01a626127f26"),
    (FLAGGEMS, "src/flag_gems/utils/triton_lang_extension.py", "f1615be17e96b87f31c276fa7e0c757c5d1db29d"),
]

# tune_configs.yaml "bmm": (TILE_M, TILE_N, GROUP_M) for num_stages 2, then the same for 3.
_BMM_TILES = [(32, 32, 1), (64, 32, 2), (64, 64, 2), (128, 32, 2), (128, 64, 2), (128, 128, 2)]


def _tuned_configs():
    return [triton.Config({"TILE_M": m, "TILE_N": n, "TILE_K": 32, "GROUP_M": g}, num_warps=4, num_stages=s)
            for s in (2, 3) for m, n, g in _BMM_TILES]


def _original():
    _upstream.require(UPSTREAM)
    heur = _upstream.load(FLAGGEMS, UPSTREAM[1][1], ["bmm_heur_divisible_m", "bmm_heur_divisible_n",
                                                      "bmm_heur_divisible_k"])
    ext_ns = _upstream.load(FLAGGEMS, UPSTREAM[2][1], ["program_id", "num_programs"])
    runtime = types.SimpleNamespace(
        get_tuned_config=lambda name: _tuned_configs(),
        get_heuristic_config=lambda name: {"DIVISIBLE_M": heur["bmm_heur_divisible_m"],
                                           "DIVISIBLE_N": heur["bmm_heur_divisible_n"],
                                           "DIVISIBLE_K": heur["bmm_heur_divisible_k"]})

    def libentry():
        return lambda fn: fn

    def libtuner(configs, key, **kwargs):
        return triton.autotune(configs=configs, key=key)

    ns = {
        "runtime": runtime,
        "torch_device_fn": types.SimpleNamespace(device=torch.cuda.device),
        "libentry": libentry,
        "libtuner": libtuner,
        "ext": _upstream.module("flag_gems.utils.triton_lang_extension", ext_ns, ["program_id", "num_programs"]),
        "logger": types.SimpleNamespace(debug=lambda *a, **k: None),
    }
    return _upstream.load(FLAGGEMS, UPSTREAM[0][1], ["bmm_kernel", "bmm"], ns)


def check() -> bool:
    ns = _original()
    torch.manual_seed(0)
    ok = True
    for b, m, n, k, dtype, bound in [(3, 77, 50, 45, torch.float16, 1e-3), (2, 128, 64, 96, torch.float16, 1e-3),
                                     (2, 70, 130, 64, torch.bfloat16, 1e-2), (2, 33, 65, 70, torch.float32, 1e-5)]:
        A = torch.randn((b, m, k), device="cuda", dtype=dtype)
        B = torch.randn((b, k, n), device="cuda", dtype=dtype)
        out = ns["bmm"](A, B)
        ref = A.double() @ B.double()
        rel = ((out.double() - ref).norm() / ref.norm()).item()
        print(f"{NAME} (Triton) {b}x{m}x{n}x{k} {dtype}: rel err {rel:.2e} (bound {bound:.0e})")
        ok = ok and rel <= bound
    return ok


SHAPES = [(2, 384, 384, 384), (2, 4096, 4096, 4096), (16, 1024, 1024, 1024), (16, 2048, 2048, 2048), (16, 4096, 4096, 4096)]


def bench() -> list:
    ns = _original()
    rows = []
    for dtype, name in [(torch.float16, "f16"), (torch.bfloat16, "bf16")]:
        for b, m, n, k in SHAPES:
            A = torch.randn((b, m, k), device="cuda", dtype=torch.float32).to(dtype)
            B = torch.randn((b, k, n), device="cuda", dtype=torch.float32).to(dtype)
            ms = triton.testing.do_bench(lambda: ns["bmm"](A, B), return_mode="median")
            shape = f"B={b} M=N=K={m} {name}" if m == n == k else f"B={b} M={m} N={n} K={k} {name}"
            rows.append({"shape": shape, "ms": ms, "rate": _upstream.tflops(2.0 * b * m * n * k, ms), "unit": "TFLOP/s"})
    return rows


if __name__ == "__main__":
    ok = check()
    for r in bench():
        print(f"bench {NAME} | {r['shape']} | {r['ms']:.4f} | {r['rate']:.2f} {r['unit']}")
    raise SystemExit(0 if ok else 1)
