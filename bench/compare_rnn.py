#!/usr/bin/env python3
"""torch.nn.LSTM / GRU / RNN beside Tritium's nn::LSTM / GRU / RNN (tritium-bench --rnn): forward
(eval, no grad) and forward + backward (sum of the output), median ms, at the same sizes and thread
count (issue 30, recurrent layers).

    /work/.torchvenv/bin/python bench/compare_rnn.py --bench build/bench/tritium-bench --threads 2
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

import torch
import torch.nn as nn


def median_ms(fn, min_time=1.0, min_reps=5):
    fn()  # warm-up
    times, start = [], time.perf_counter()
    while len(times) < min_reps or time.perf_counter() - start < min_time:
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def torch_times(name, seq, batch, inp, hidden, layers, bidirectional):
    torch.manual_seed(0)
    cls = {"lstm": nn.LSTM, "gru": nn.GRU, "rnn": nn.RNN}[name]
    m = cls(inp, hidden, num_layers=layers, bidirectional=bidirectional)
    x = torch.randn(seq, batch, inp)

    def fwd():
        with torch.no_grad():
            m(x)

    def both():
        m.zero_grad()
        m(x)[0].sum().backward()

    return median_ms(fwd), median_ms(both)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", default="build/bench/tritium-bench")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--modules", default="lstm,gru,rnn")
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--input", type=int, default=128)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--bidirectional", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    sizes = ["--seq", str(a.seq), "--batch", str(a.batch), "--input", str(a.input), "--hidden", str(a.hidden),
             "--layers", str(a.layers)] + (["--bidirectional"] if a.bidirectional else [])
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        env = dict(os.environ, TRITIUM_NUM_THREADS=str(a.threads))
        subprocess.run([a.bench, "--rnn", "--modules", a.modules, "--json", f.name] + sizes, check=True, env=env,
                       stdout=subprocess.DEVNULL)
        ours = {r["module"]: r for r in json.load(open(f.name))}
    print(f"{a.threads} threads, T {a.seq} B {a.batch} I {a.input} H {a.hidden} L {a.layers}"
          f"{' bidirectional' if a.bidirectional else ''}; median ms")
    print(f"{'module':8} {'tritium fwd':>12} {'torch fwd':>10} {'ratio':>6} {'tritium f+b':>12} {'torch f+b':>10} {'ratio':>6}")
    for name in a.modules.split(","):
        tf, tb = torch_times(name, a.seq, a.batch, a.input, a.hidden, a.layers, a.bidirectional)
        r = ours[name]
        print(f"{name:8} {r['fwd_ms']:12.2f} {tf:10.2f} {tf / r['fwd_ms']:6.2f} {r['fwd_bwd_ms']:12.2f} {tb:10.2f} "
              f"{tb / r['fwd_bwd_ms']:6.2f}")
    print("ratio = torch time / tritium time (> 1: tritium faster)")


if __name__ == "__main__":
    main()
