"""FlagGems' embedding forward and backward beside kernels/embedding.cpp.

The original, loaded from its upstream files (bench/kernels/_upstream.py says where):
flagos-ai/FlagGems src/flag_gems/ops/embedding.py at b684fbc78add (embedding_kernel,
indice_freq_kernel, embedding_backward_kernel, embedding_grad_scale_kernel, embedding,
embedding_backward) and program_id / num_programs of src/flag_gems/utils/triton_lang_extension.py.
FlagGems' package is not imported (it registers itself with torch and needs its own runtime), so
its helpers are stood in for: libentry (a launch cache) by the identity, torch_device_fn by
torch.cuda, the logger by a no-op.
bench() times embedding and embedding_backward on FlagGems' benchmark/test_embedding.py shapes
(EmbeddingBenchmark of benchmark/core_shapes.yaml, num_embeddings random int64 indices) in f32 and
f16 with triton.testing.do_bench, median; GB/s counts M rows read and written and the indices, as
the port's bench.
"""
import os
import sys
import types

import torch
import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _upstream  # noqa: E402

NAME = "embedding"
FLAGGEMS = "flagos-ai/FlagGems"
UPSTREAM = [
    (FLAGGEMS, "src/flag_gems/ops/embedding.py", "b684fbc78add740db16dd414cad75dd2d2105ae3"),
    (FLAGGEMS, "src/flag_gems/utils/triton_lang_extension.py", "f1615be17e96b87f31c276fa7e0c757c5d1db29d"),
]


def _original():
    _upstream.require(UPSTREAM)
    ext_ns = _upstream.load(FLAGGEMS, UPSTREAM[1][1], ["program_id", "num_programs"])

    def libentry():
        return lambda fn: fn

    ns = {
        "libentry": libentry,
        "torch_device_fn": types.SimpleNamespace(device=torch.cuda.device),
        "ext": _upstream.module("flag_gems.utils.triton_lang_extension", ext_ns, ["program_id", "num_programs"]),
        "logger": types.SimpleNamespace(debug=lambda *a, **k: None),
    }
    return _upstream.load(FLAGGEMS, UPSTREAM[0][1], [
        "embedding_kernel", "indice_freq_kernel", "embedding_backward_kernel", "embedding_grad_scale_kernel",
        "embedding", "embedding_backward"], ns)


def check() -> bool:
    ns = _original()
    torch.manual_seed(0)
    ok = True
    for nw, n, ishape, dtype, index_dtype, padding_idx, scale, bound in [
            (50, 100, (120,), torch.float32, torch.int64, -1, False, 1e-5),
            (30, 77, (4, 25), torch.float16, torch.int64, 3, True, 1e-3),
            (20, 300, (64,), torch.bfloat16, torch.int32, None, True, 1e-2),
            (64, 33, (7, 9), torch.float32, torch.int32, 5, False, 1e-5)]:
        weight = torch.randn((nw, n), device="cuda").to(dtype)
        indices = torch.randint(0, nw, ishape, device="cuda", dtype=index_dtype)
        grad = torch.randn((*ishape, n), device="cuda").to(dtype)
        out = ns["embedding"](weight, indices)
        fwd = (out.double() - weight.double()[indices.long()]).abs().max().item()
        w = weight.double().requires_grad_()
        torch.nn.functional.embedding(indices.long(), w, padding_idx=None).backward(grad.double())
        ref = w.grad
        if padding_idx is not None and padding_idx >= 0:
            ref[padding_idx] = 0
        if scale:
            freq = torch.bincount(indices.long().view(-1), minlength=nw).double()
            ref = ref / torch.where(freq > 1, freq, torch.ones_like(freq))[:, None]
        dw = ns["embedding_backward"](grad, indices, nw, padding_idx, scale)
        bwd = ((dw.double() - ref).norm() / ref.norm()).item()
        print(f"{NAME} (Triton) {nw}x{n} {dtype} {index_dtype} padding {padding_idx} scaled {scale}: "
              f"fwd max error {fwd:.1e} bwd rel err {bwd:.2e} (bound {bound:.0e})")
        ok = ok and fwd == 0 and bwd <= bound
    return ok


SHAPES = [(4, 4), (16, 16), (128, 128), (256, 256), (1024, 1024)]


def bench() -> list:
    ns = _original()
    rows = []
    for dtype, name in [(torch.float32, "f32"), (torch.float16, "f16")]:
        for ne, dim in SHAPES:
            indices = torch.randint(0, ne, (ne,), device="cuda")
            weight = torch.randn((ne, dim), device="cuda").to(dtype)
            grad = torch.randn((ne, dim), device="cuda").to(dtype)
            fwd = triton.testing.do_bench(lambda: ns["embedding"](weight, indices), return_mode="median")
            bwd = triton.testing.do_bench(lambda: ns["embedding_backward"](grad, indices, ne), return_mode="median")
            nbytes = 2 * ne * dim * weight.element_size() + 8 * ne
            shape = f"{ne}x{dim} {name}"
            rows.append({"shape": "forward " + shape, "ms": fwd, "rate": nbytes * 1e-9 / (fwd * 1e-3), "unit": "GB/s"})
            rows.append({"shape": "backward " + shape, "ms": bwd, "rate": nbytes * 1e-9 / (bwd * 1e-3), "unit": "GB/s"})
    return rows


if __name__ == "__main__":
    ok = check()
    for r in bench():
        print(f"bench {NAME} | {r['shape']} | {r['ms']:.4f} | {r['rate']:.2f} {r['unit']}")
    raise SystemExit(0 if ok else 1)
