#!/usr/bin/env python3
"""The real-world kernel suite (kernels/) beside the original kernels under Triton, on the GPU machine.

Each kernels/<name>.cpp is a faithful port of a public Triton kernel; bench/kernels/<name>.py holds the
original (for this benchmark only) with NAME, check() and bench() -> [{"shape", "ms", "rate", "unit"}].
This script runs `tritium-kernels --bench` and each original's bench() in alternating rounds, pairs the
rows by (kernel, shape) and prints each ratio (Tritium rate / Triton rate), the geometric mean and the
worst, from the medians over the rounds.

With --cold it measures instead what a first run costs: each kernel's benchmark runs twice in fresh
processes on each side, first with an empty cache (Tritium: TRITIUM_CACHE_DIR, which also holds its
autotuning results; Triton: TRITON_CACHE_DIR) and then again with the cache the first run filled;
the difference is the time spent compiling (and, for Tritium, tuning, since its results persist
while Triton's autotuner times its configs again in every process). The ratio is Triton's / Tritium's
first-run cost, so above 1 means Tritium starts faster.

    python3 bench/compare_kernels.py --bin BUILD/kernels [--kernels a,b] [--rounds 3] [--cold]
"""
import argparse
import importlib.util
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def load_originals(names):
    mods = {}
    folder = os.path.join(HERE, "kernels")
    for f in sorted(os.listdir(folder)):
        if not f.endswith(".py") or f.startswith("_"):
            continue
        spec = importlib.util.spec_from_file_location(f[:-3], os.path.join(folder, f))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        if not names or mod.NAME in names:
            mods[mod.NAME] = mod
    return mods


def run_tritium(exe, names, timeout):
    cmd = [exe, "--bench", "--backend", "cuda"] + (sorted(names) if names else ["all"])
    print("running " + " ".join(cmd), flush=True)
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        out = r.stdout
        if r.returncode != 0:
            print(f"tritium-kernels failed ({r.returncode}):\n{r.stderr[-2000:]}")
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        print(f"tritium-kernels timed out after {timeout} s")
    rows = {}
    for line in out.splitlines():
        if not line.startswith("bench "):
            continue
        parts = [p.strip() for p in line[len("bench "):].split("|")]
        if len(parts) != 4:
            continue
        rate, unit = parts[3].split()
        rows[(parts[0], parts[1])] = (float(rate), unit)
    return rows


def _timed(cmd, env, timeout):
    t0 = time.perf_counter()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])}... failed ({r.returncode}): {r.stderr[-1500:]}")
    return time.perf_counter() - t0


def cold_starts(exe, originals, timeout):
    """Per kernel: (Tritium cold, warm, Triton cold, warm) wall seconds of the whole benchmark."""
    print(f"\n{'kernel':24s} {'Tritium cold':>12s} {'warm':>8s} {'first-run cost':>14s}   "
          f"{'Triton cold':>11s} {'warm':>8s} {'first-run cost':>14s} {'ratio':>7s}")
    ratios = []
    for name in originals:
        with tempfile.TemporaryDirectory() as ours, tempfile.TemporaryDirectory() as theirs:
            # CUDA_CACHE_DISABLE: the driver's own cache of PTX it compiled (~/.nv/ComputeCache) would
            # make Tritium's PTX-loading kernels look free to compile after the first measurement.
            env_ours = dict(os.environ, TRITIUM_CACHE_DIR=ours, CUDA_CACHE_DISABLE="1")
            env_theirs = dict(os.environ, TRITON_CACHE_DIR=theirs, CUDA_CACHE_DISABLE="1")
            script = (f"import sys; sys.path.insert(0, {os.path.join(HERE, 'kernels')!r}); "
                      f"import importlib; importlib.import_module({name!r}).bench()")
            try:
                t = [_timed([exe, "--bench", "--backend", "cuda", name], env_ours, timeout),
                     _timed([exe, "--bench", "--backend", "cuda", name], env_ours, timeout),
                     _timed([sys.executable, "-c", script], env_theirs, timeout),
                     _timed([sys.executable, "-c", script], env_theirs, timeout)]
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                print(f"{name:24s} failed: {e}")
                continue
        mine, other = max(t[0] - t[1], 1e-3), max(t[2] - t[3], 1e-3)
        ratios.append((other / mine, name))
        print(f"{name:24s} {t[0]:12.2f} {t[1]:8.2f} {mine:14.2f}   {t[2]:11.2f} {t[3]:8.2f} {other:14.2f} "
              f"{other / mine:7.2f}", flush=True)
    if ratios:
        geo = math.exp(sum(math.log(r) for r, _ in ratios) / len(ratios))
        print(f"\nfirst-run cost, Triton / Tritium: geomean {geo:.2f} over {len(ratios)} kernels; "
              f"worst {min(ratios)[0]:.2f} ({min(ratios)[1]})")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="the tritium-kernels binary or the folder holding it")
    ap.add_argument("--kernels", default="", help="comma-separated names (default: all)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--cold", action="store_true", help="compare first-run (compile) costs instead of speed")
    args = ap.parse_args()
    exe = os.path.join(args.bin, "tritium-kernels") if os.path.isdir(args.bin) else args.bin
    names = {n for n in args.kernels.split(",") if n}
    originals = load_originals(names)
    if args.cold:
        cold_starts(exe, originals, args.timeout)
        return 0
    ok = True
    for name, mod in originals.items():
        try:
            good = mod.check()
        except Exception as e:  # noqa: BLE001 - reported
            print(f"{name}: the original's check raised {type(e).__name__}: {e}")
            good = False
        print(f"{name}: the original against torch: {'match' if good else 'DIFFER'}")
        ok &= bool(good)
    samples = {}
    for r in range(args.rounds):
        print(f"\nround {r + 1} of {args.rounds}", flush=True)
        ours = run_tritium(exe, names, args.timeout)
        for name, mod in originals.items():
            try:
                theirs = mod.bench()
            except Exception as e:  # noqa: BLE001 - reported
                print(f"{name}: the original's bench raised {type(e).__name__}: {e}")
                theirs = []
            for row in theirs:
                key = (name, row["shape"])
                mine = ours.get(key, (None, row["unit"]))[0]
                samples.setdefault(key, []).append((mine, row["rate"], row["unit"]))
                print(f"  {name:24s} {row['shape']:32s} Tritium {mine if mine else '-':>9} Triton {row['rate']:9.2f} {row['unit']}",
                      flush=True)
    ratios = []
    print(f"\nmedians of {args.rounds} round(s)")
    print(f"{'kernel':24s} {'shape':32s} {'Tritium':>10s} {'Triton':>10s} {'unit':>8s} {'ratio':>7s}")
    for (name, shape), rs in samples.items():
        mine = statistics.median([x[0] for x in rs if x[0]]) if any(x[0] for x in rs) else None
        theirs = statistics.median([x[1] for x in rs if x[1]])
        ratio = mine / theirs if mine and theirs else None
        if ratio:
            ratios.append((ratio, name, shape))
        print(f"{name:24s} {shape:32s} {mine if mine else float('nan'):10.2f} {theirs:10.2f} {rs[0][2]:>8s} "
              f"{ratio if ratio else float('nan'):7.3f}")
    if ratios:
        geo = math.exp(sum(math.log(r) for r, _, _ in ratios) / len(ratios))
        worst = min(ratios)
        print(f"\ngeomean {geo:.3f} over {len(ratios)} rows; worst {worst[0]:.3f} ({worst[1]}, {worst[2]})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
