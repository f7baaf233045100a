#!/usr/bin/env python3
"""PyTorch's AdamW (or Adam, SGD) step over the same GPT-like parameter list as
`tritium-bench --optim`, foreach and fused (and the single-tensor loop), beside Tritium's figures.

    tritium-bench --optim --device cuda --json /tmp/tritium_optim.json
    python bench/compare_optim.py --tritium /tmp/tritium_optim.json --device cuda

The shapes come from the Tritium JSON (layers, d_model, vocab, context), so both sides time the
same list; on the CPU set the same thread count on both (TRITIUM_NUM_THREADS, --threads).
"""
import argparse
import json
import statistics
import time

import torch


def gpt_shapes(layers, d, vocab, context):
    s = [(vocab, d), (context, d)]
    for _ in range(layers):
        s += [(d,), (d,), (d, 3 * d), (3 * d,), (d, d), (d,), (d,), (d,), (d, 4 * d), (4 * d,), (4 * d, d), (d,)]
    return s + [(d,), (d,)]


def time_step(make, shapes, device, dtype, steps):
    params = []
    for s in shapes:
        p = torch.full(s, 0.5, device=device, dtype=dtype, requires_grad=True)
        p.grad = torch.full(s, 1e-3, device=device, dtype=dtype)
        params.append(p)
    opt = make(params)
    sync = (lambda: torch.cuda.synchronize()) if device.startswith("cuda") else (lambda: None)
    for _ in range(2):
        opt.step()
    sync()
    ms = []
    for _ in range(steps):
        t0 = time.perf_counter()
        opt.step()
        sync()
        ms.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ms)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tritium", required=True, help="JSON written by tritium-bench --optim --json")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--steps", type=int, default=10)
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    t = json.load(open(a.tritium))
    shapes = gpt_shapes(t["layers"], t["d_model"], t["vocab"], t["context"])
    run0 = t["runs"][0]
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[run0["dtype"]]
    cls = {"adamw": lambda p, **k: torch.optim.AdamW(p, lr=1e-3, **k),
           "adam": lambda p, **k: torch.optim.Adam(p, lr=1e-3, **k),
           "sgd": lambda p, **k: torch.optim.SGD(p, lr=1e-3, momentum=0.9, **k)}[run0["optimizer"]]
    print(f"{run0['optimizer']} {run0['dtype']} {len(shapes)} tensors {run0['elements']} elements on {a.device}"
          f" (torch threads {torch.get_num_threads()}, tritium threads {run0['threads']})")
    for r in t["runs"]:
        print(f"  tritium {'foreach' if r['foreach'] else 'per-parameter':14s} {r['ms']:9.3f} ms/step"
              f"  ({r['launches']} launches)")
    for name, kw in [("foreach", {"foreach": True}), ("fused", {"fused": True}), ("single-tensor", {"foreach": False})]:
        try:
            ms = time_step(lambda p: cls(p, **kw), shapes, a.device, dtype, a.steps)
            print(f"  torch   {name:14s} {ms:9.3f} ms/step")
        except (RuntimeError, TypeError) as e:
            print(f"  torch   {name:14s} unavailable: {e}")


if __name__ == "__main__":
    main()
