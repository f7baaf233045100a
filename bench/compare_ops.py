#!/usr/bin/env python3
"""`tritium-bench --ops` beside PyTorch: the same op calls (shapes, dtypes, attributes, input
distributions, forward and forward+backward through autograd), timed the same way, in one run.

    python3 bench/compare_ops.py --bin build/bench/tritium-bench [--device cpu|cuda] [--rounds 3]
        [--elements N] [--filter REGEX] [--dtypes f32,bf16] [--modes fwd,fwd+bwd] [--threads T]
        [--quick] [--json OUT]

Each round runs Tritium's side in a subprocess (`tritium-bench --ops --json`), which has exited
before PyTorch's side runs in this process, so the device is idle while the other side is timed;
the rounds alternate. The cases PyTorch runs are read from Tritium's JSON (what it ran), so the
two sides cannot drift apart; only the PyTorch call of each op name lives here (TORCH_OPS).
Timing mirrors tritium::do_bench (autotune/do_bench.cpp): one untimed first call, five calls to
estimate, warm-up for 25 ms, repetitions for 100 ms (5 to 10000), the median; on CUDA two events
around each call and a 256 MB buffer overwritten before it (L2 flush); before_each (dropping the
gradients of a forward+backward case) is untimed on both sides.

On a CPU shared with other work, --clock cpu times both sides by the process's CPU time (with
one thread: the work each side does, unaffected by the scheduler) and --stat min takes each
side's fastest repetition.

Ratio = PyTorch time / Tritium time (above 1: Tritium is faster), the median of the per-round
ratios. On the CPU both sides use the same number of threads: --threads sets TRITIUM_NUM_THREADS
for Tritium and torch.set_num_threads for PyTorch; without it Tritium's default (the CPUs the
process may use) is read from its JSON and given to PyTorch.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16, "f64": torch.float64,
          "i64": torch.int64, "i32": torch.int32, "i1": torch.bool}


def indices(a):
    return tuple(a["indices"])


def elu(x, a):
    """Tritium's elu(alpha, scale, input_scale) is PyTorch's internal elu; F.elu is the case
    scale = input_scale = 1, F.selu / F.celu the others."""
    if a["scale"] == 1 and a["input_scale"] == 1:
        return F.elu(x, a["alpha"])
    return torch.ops.aten.elu(x, a["alpha"], a["scale"], a["input_scale"])


# The PyTorch call of each op name of bench/ops_bench_table.cpp: f(inputs, attrs) -> output.
TORCH_OPS = {
    # elementwise
    "add": lambda x, a: torch.add(x[0], x[1]),
    "sub": lambda x, a: torch.sub(x[0], x[1]),
    "mul": lambda x, a: torch.mul(x[0], x[1]),
    "div": lambda x, a: torch.div(x[0], x[1]),
    "add.Scalar": lambda x, a: torch.add(x[0], a["other"]),
    "sub.Scalar": lambda x, a: torch.sub(x[0], a["other"]),
    "rsub.Scalar": lambda x, a: torch.rsub(x[0], a["other"]),
    "mul.Scalar": lambda x, a: torch.mul(x[0], a["other"]),
    "div.Scalar": lambda x, a: torch.div(x[0], a["other"]),
    "pow": lambda x, a: torch.pow(x[0], a["exponent"]),
    "neg": lambda x, a: torch.neg(x[0]),
    "exp": lambda x, a: torch.exp(x[0]),
    "log": lambda x, a: torch.log(x[0]),
    "sqrt": lambda x, a: torch.sqrt(x[0]),
    "tanh": lambda x, a: torch.tanh(x[0]),
    "sigmoid": lambda x, a: torch.sigmoid(x[0]),
    "relu": lambda x, a: torch.relu(x[0]),
    "gelu": lambda x, a: F.gelu(x[0]),
    "where": lambda x, a: torch.where(x[0], x[1], x[2]),
    # unary math (ops/decl/unary_math.cpp)
    "abs": lambda x, a: torch.abs(x[0]),
    "sign": lambda x, a: torch.sign(x[0]),
    "square": lambda x, a: torch.square(x[0]),
    "floor": lambda x, a: torch.floor(x[0]),
    "ceil": lambda x, a: torch.ceil(x[0]),
    "trunc": lambda x, a: torch.trunc(x[0]),
    "round": lambda x, a: torch.round(x[0], decimals=a["decimals"]),
    "frac": lambda x, a: torch.frac(x[0]),
    "sin": lambda x, a: torch.sin(x[0]),
    "cos": lambda x, a: torch.cos(x[0]),
    "tan": lambda x, a: torch.tan(x[0]),
    "asin": lambda x, a: torch.asin(x[0]),
    "acos": lambda x, a: torch.acos(x[0]),
    "atan": lambda x, a: torch.atan(x[0]),
    "sinh": lambda x, a: torch.sinh(x[0]),
    "cosh": lambda x, a: torch.cosh(x[0]),
    "asinh": lambda x, a: torch.asinh(x[0]),
    "acosh": lambda x, a: torch.acosh(x[0]),
    "atanh": lambda x, a: torch.atanh(x[0]),
    "log1p": lambda x, a: torch.log1p(x[0]),
    "expm1": lambda x, a: torch.expm1(x[0]),
    "log2": lambda x, a: torch.log2(x[0]),
    "log10": lambda x, a: torch.log10(x[0]),
    "exp2": lambda x, a: torch.exp2(x[0]),
    "reciprocal": lambda x, a: torch.reciprocal(x[0]),
    "rsqrt": lambda x, a: torch.rsqrt(x[0]),
    "erf": lambda x, a: torch.erf(x[0]),
    "erfc": lambda x, a: torch.erfc(x[0]),
    "erfinv": lambda x, a: torch.erfinv(x[0]),
    "nan_to_num": lambda x, a: torch.nan_to_num(x[0], nan=a["nan"], posinf=a["posinf"], neginf=a["neginf"]),
    "minimum": lambda x, a: torch.minimum(x[0], x[1]),
    "maximum": lambda x, a: torch.maximum(x[0], x[1]),
    "fmin": lambda x, a: torch.fmin(x[0], x[1]),
    "fmax": lambda x, a: torch.fmax(x[0], x[1]),
    "atan2": lambda x, a: torch.atan2(x[0], x[1]),
    "hypot": lambda x, a: torch.hypot(x[0], x[1]),
    "copysign": lambda x, a: torch.copysign(x[0], x[1]),
    "logaddexp": lambda x, a: torch.logaddexp(x[0], x[1]),
    "fmod": lambda x, a: torch.fmod(x[0], x[1]),
    "remainder": lambda x, a: torch.remainder(x[0], x[1]),
    "fmod.Scalar": lambda x, a: torch.fmod(x[0], a["other"]),
    "remainder.Scalar": lambda x, a: torch.remainder(x[0], a["other"]),
    "clamp": lambda x, a: torch.clamp(x[0], a["min"] if a["has_min"] else None, a["max"] if a["has_max"] else None),
    "clamp.Tensor": lambda x, a: torch.clamp(x[0], x[1], x[2]),
    "lerp.Scalar": lambda x, a: torch.lerp(x[0], x[1], a["weight"]),
    "lerp.Tensor": lambda x, a: torch.lerp(x[0], x[1], x[2]),
    "addcmul": lambda x, a: torch.addcmul(x[0], x[1], x[2], value=a["value"]),
    "addcdiv": lambda x, a: torch.addcdiv(x[0], x[1], x[2], value=a["value"]),
    # activations (ops/decl/activations.cpp)
    "leaky_relu": lambda x, a: F.leaky_relu(x[0], a["negative_slope"]),
    "silu": lambda x, a: F.silu(x[0]),
    "softplus": lambda x, a: F.softplus(x[0], a["beta"], a["threshold"]),
    "elu": lambda x, a: elu(x[0], a),
    "mish": lambda x, a: F.mish(x[0]),
    "hardswish": lambda x, a: F.hardswish(x[0]),
    "hardsigmoid": lambda x, a: F.hardsigmoid(x[0]),
    "hardtanh": lambda x, a: F.hardtanh(x[0], a["min_val"], a["max_val"]),
    "softsign": lambda x, a: F.softsign(x[0]),
    "tanhshrink": lambda x, a: F.tanhshrink(x[0]),
    "gelu.tanh": lambda x, a: F.gelu(x[0], approximate="tanh"),
    "eq": lambda x, a: torch.eq(x[0], x[1]),
    "gt.Scalar": lambda x, a: torch.gt(x[0], a["other"]),
    "to_dtype": lambda x, a: x[0].to(torch.bfloat16),
    "contiguous": lambda x, a: x[0].t().contiguous(),
    # reductions
    "sum": lambda x, a: torch.sum(x[0], dim=a["dims"] or None, keepdim=a["keepdim"]),
    "mean": lambda x, a: torch.mean(x[0], dim=a["dims"] or None, keepdim=a["keepdim"]),
    "amax": lambda x, a: torch.amax(x[0], dim=tuple(a["dims"]), keepdim=a["keepdim"]),
    "amin": lambda x, a: torch.amin(x[0], dim=tuple(a["dims"]), keepdim=a["keepdim"]),
    "var": lambda x, a: torch.var(x[0], dim=a["dims"] or None, correction=a["correction"], keepdim=a["keepdim"]),
    "std": lambda x, a: torch.std(x[0], dim=a["dims"] or None, correction=a["correction"], keepdim=a["keepdim"]),
    "prod": lambda x, a: torch.prod(x[0]),
    "prod.dim_int": lambda x, a: torch.prod(x[0], a["dim"], keepdim=a["keepdim"]),
    "logsumexp": lambda x, a: torch.logsumexp(x[0], dim=a["dims"] or list(range(x[0].dim())), keepdim=a["keepdim"]),
    "linalg_vector_norm": lambda x, a: torch.linalg.vector_norm(x[0], a["ord"], dim=a["dims"] or None,
                                                                keepdim=a["keepdim"]),
    # (values, indices) ops: the values, the output Tritium's side times and differentiates
    "max.dim": lambda x, a: torch.max(x[0], a["dim"], keepdim=a["keepdim"]).values,
    "min.dim": lambda x, a: torch.min(x[0], a["dim"], keepdim=a["keepdim"]).values,
    "cumsum": lambda x, a: torch.cumsum(x[0], a["dim"]),
    "cumprod": lambda x, a: torch.cumprod(x[0], a["dim"]),
    "cummax": lambda x, a: torch.cummax(x[0], a["dim"]).values,
    "cummin": lambda x, a: torch.cummin(x[0], a["dim"]).values,
    "sort": lambda x, a: torch.sort(x[0], dim=a["dim"], descending=a["descending"]).values,
    "topk": lambda x, a: torch.topk(x[0], a["k"], dim=a["dim"], largest=a["largest"], sorted=a["sorted"]).values,
    "kthvalue": lambda x, a: torch.kthvalue(x[0], a["k"], dim=a["dim"], keepdim=a["keepdim"]).values,
    "median": lambda x, a: torch.median(x[0]),
    "median.dim": lambda x, a: torch.median(x[0], a["dim"], keepdim=a["keepdim"]).values,
    "argmax": lambda x, a: torch.argmax(x[0], dim=a["dim"]),
    "argmin": lambda x, a: torch.argmin(x[0], dim=a["dim"]),
    # softmax, norms, losses, dropout
    "softmax": lambda x, a: torch.softmax(x[0], dim=a["dim"]),
    "log_softmax": lambda x, a: torch.log_softmax(x[0], dim=a["dim"]),
    "layer_norm": lambda x, a: F.layer_norm(x[0], a["normalized_shape"], x[1], x[2], a["eps"]),
    # issue 30 item 1: pooling, interpolate, embedding
    "max_pool2d": lambda x, a: F.max_pool2d(x[0], a["kernel_size"], a["stride"] or None, a["padding"], a["dilation"],
                                            a["ceil_mode"]),
    "avg_pool2d": lambda x, a: F.avg_pool2d(x[0], a["kernel_size"], a["stride"] or None, a["padding"], a["ceil_mode"],
                                            a["count_include_pad"], a["divisor_override"] or None),
    "adaptive_avg_pool2d": lambda x, a: F.adaptive_avg_pool2d(x[0], a["output_size"]),
    "max_pool1d": lambda x, a: F.max_pool1d(x[0], a["kernel_size"], a["stride"] or None, a["padding"], a["dilation"],
                                            a["ceil_mode"]),
    "avg_pool1d": lambda x, a: F.avg_pool1d(x[0], a["kernel_size"], a["stride"] or None, a["padding"], a["ceil_mode"],
                                            a["count_include_pad"]),
    "interpolate": lambda x, a: F.interpolate(x[0], size=a["size"] or None, scale_factor=a["scale_factor"],
                                              mode=a["mode"], align_corners=a["align_corners"] or None),
    "embedding": lambda x, a: F.embedding(x[1], x[0], None if a["padding_idx"] < 0 else a["padding_idx"]),
    "cross_entropy": lambda x, a: F.cross_entropy(x[0], x[1]),
    # issue 30 item 1 (wt-norm)
    "batch_norm": lambda x, a: F.batch_norm(x[0], x[1], x[2], x[3], x[4], a["training"], a["momentum"], a["eps"]),
    "group_norm": lambda x, a: F.group_norm(x[0], a["num_groups"], x[1], x[2], a["eps"]),
    "rms_norm": lambda x, a: F.rms_norm(x[0], a["normalized_shape"], x[1], a["eps"]),
    "cross_entropy_loss": lambda x, a: F.cross_entropy(x[0], x[1], x[2], ignore_index=a["ignore_index"],
                                                       reduction=a["reduction"], label_smoothing=a["label_smoothing"]),
    "nll_loss": lambda x, a: F.nll_loss(x[0], x[1], x[2], ignore_index=a["ignore_index"], reduction=a["reduction"]),
    "dropout": lambda x, a: F.dropout(x[0], a["p"], training=True),
    # matmul, attention
    "matmul": lambda x, a: torch.matmul(x[0], x[1]),
    "mm": lambda x, a: torch.mm(x[0], x[1]),
    "bmm": lambda x, a: torch.bmm(x[0], x[1]),
    "mv": lambda x, a: torch.mv(x[0], x[1]),
    "dot": lambda x, a: torch.dot(x[0], x[1]),
    "vdot": lambda x, a: torch.vdot(x[0], x[1]),
    "addmm": lambda x, a: torch.addmm(x[0], x[1], x[2], beta=a["beta"], alpha=a["alpha"]),
    "linear": lambda x, a: torch.nn.functional.linear(x[0], x[1], x[2]),  # issue 31 (autocast)
    "addmv": lambda x, a: torch.addmv(x[0], x[1], x[2], beta=a["beta"], alpha=a["alpha"]),
    "addr": lambda x, a: torch.addr(x[0], x[1], x[2], beta=a["beta"], alpha=a["alpha"]),
    "baddbmm": lambda x, a: torch.baddbmm(x[0], x[1], x[2], beta=a["beta"], alpha=a["alpha"]),
    "addbmm": lambda x, a: torch.addbmm(x[0], x[1], x[2], beta=a["beta"], alpha=a["alpha"]),
    "scaled_dot_product_attention": lambda x, a: F.scaled_dot_product_attention(
        x[0], x[1], x[2], is_causal=a["is_causal"], scale=a["scale"]),
    # indexing
    "gather": lambda x, a: torch.gather(x[0], a["dim"], x[1]),
    "scatter": lambda x, a: torch.scatter(x[0], a["dim"], x[1], x[2]),
    "scatter.value": lambda x, a: torch.scatter(x[0], a["dim"], x[1], a["value"]),
    "scatter_add": lambda x, a: torch.scatter_add(x[0], a["dim"], x[1], x[2]),
    "scatter_reduce": lambda x, a: torch.scatter_reduce(x[0], a["dim"], x[1], x[2], a["reduce"],
                                                        include_self=a["include_self"]),
    "index_select": lambda x, a: torch.index_select(x[0], a["dim"], x[1]),
    "index_add": lambda x, a: torch.index_add(x[0], a["dim"], x[1], x[2], alpha=a["alpha"]),
    "masked_fill": lambda x, a: torch.masked_fill(x[0], x[1], a["value"]),
    "masked_select": lambda x, a: torch.masked_select(x[0], x[1]),
    "index": lambda x, a: x[0][indices(a)],
    "index_put": lambda x, a: torch.index_put(x[0], indices(a), x[1], accumulate=a["accumulate"]),
    # shape
    "flatten": lambda x, a: torch.flatten(x[0], a["start_dim"], a["end_dim"]),
    "unflatten": lambda x, a: torch.unflatten(x[0], a["dim"], a["sizes"]),
    "ravel": lambda x, a: torch.ravel(x[0]),
    "broadcast_to": lambda x, a: torch.broadcast_to(x[0], a["size"]),
    "narrow": lambda x, a: torch.narrow(x[0], a["dim"], a["start"], a["length"]),
    "unfold": lambda x, a: x[0].unfold(a["dim"], a["size"], a["step"]),
    "movedim": lambda x, a: torch.movedim(x[0], a["source"], a["destination"]),
    "diagonal": lambda x, a: torch.diagonal(x[0], a["offset"], a["dim1"], a["dim2"]),
    "repeat": lambda x, a: x[0].repeat(a["repeats"]),
    "flip": lambda x, a: torch.flip(x[0], a["dims"]),
    "roll": lambda x, a: torch.roll(x[0], a["shifts"], a["dims"]),
    "tril": lambda x, a: torch.tril(x[0], a["diagonal"]),
    "triu": lambda x, a: torch.triu(x[0], a["diagonal"]),
    "cat": lambda x, a: torch.cat(x, a["dim"]),
    "stack": lambda x, a: torch.stack(x, a["dim"]),
}

# issue 30 item 1 (wt-conv): convolutions.
TORCH_OPS.update({
    "conv1d": lambda x, a: F.conv1d(x[0], x[1], x[2], a["stride"], a["padding"], a["dilation"], a["groups"]),
    "conv2d": lambda x, a: F.conv2d(x[0], x[1], x[2], a["stride"], a["padding"], a["dilation"], a["groups"]),
    "conv_transpose2d": lambda x, a: F.conv_transpose2d(x[0], x[1], x[2], a["stride"], a["padding"],
                                                        a["output_padding"], a["groups"], a["dilation"]),
})


# issue 30 item 1 (wt-rnn): the LSTM time loop over precomputed input gates, as eager PyTorch code
# writes it (one addmm and the gate ops per step); whole modules are compared by bench/compare_rnn.py.
def _lstm_recurrence(x, a):
    gx, h, c, w_hh, b_ih, b_hh = x
    assert a["mode"] == "lstm"
    outs = []
    for t in (range(gx.shape[0] - 1, -1, -1) if a["reverse"] else range(gx.shape[0])):
        g = torch.addmm(gx[t] + b_ih + b_hh, h, w_hh.t())
        i, f, n, o = g.chunk(4, 1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(n)
        h = torch.sigmoid(o) * torch.tanh(c)
        outs.append(torch.stack((h, c)))
    return torch.stack(outs)


TORCH_OPS["rnn_recurrence"] = _lstm_recurrence

def make_input(spec, device, gen):
    shape, dtype = spec["shape"], DTYPES[spec["dtype"]]
    fill = spec["fill"]
    if fill == "index":
        return torch.randint(0, spec["high"], shape, generator=gen, dtype=dtype, device="cpu").to(device)
    u = torch.rand(shape, generator=gen, dtype=torch.float32, device="cpu").to(device)
    if fill == "mask":
        return u < 0.5
    if fill == "positive":
        return (u + 0.5).to(dtype)
    if fill == "unit":
        return (u * 1.8 - 0.9).to(dtype)
    if fill == "above_one":
        return (u + 1.5).to(dtype)
    return (u * 2 - 1).to(dtype)


class Bench:
    """tritium::do_bench's procedure, in PyTorch."""

    def __init__(self, device, warmup_ms, rep_ms, stat, clock):
        self.device, self.warmup_ms, self.rep_ms, self.stat = device, warmup_ms, rep_ms, stat
        self.now = time.process_time if clock == "cpu" else time.perf_counter
        self.cuda = device.startswith("cuda")
        self.flush = torch.empty(256 << 20, dtype=torch.uint8, device=device) if self.cuda else None

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize()

    def time_calls(self, fn, before_each, n):
        times = []
        if not self.cuda:
            for _ in range(n):
                before_each()
                t0 = self.now()
                fn()
                times.append((self.now() - t0) * 1e3)
            return times
        events = []
        for i in range(n):
            before_each()
            self.flush.fill_(i & 0xFF)
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            events.append((s, e))
        self.sync()
        return [s.elapsed_time(e) for s, e in events]

    def __call__(self, fn, before_each=lambda: None):
        before_each()
        fn()
        self.sync()
        estimate = self.time_calls(fn, before_each, 5)
        self.sync()
        mean = max(1e-6, sum(estimate) / len(estimate))
        for _ in range(min(max(1, int(self.warmup_ms / mean)), 10000)):
            before_each()
            fn()
        self.sync()
        n = min(max(int(self.rep_ms / mean), 5), 10000)
        times = self.time_calls(fn, before_each, n)
        self.sync()
        return min(times) if self.stat == "min" else statistics.median(times)


def torch_case(case, device, bench):
    """PyTorch's median time (ms) for one case of Tritium's JSON."""
    f = TORCH_OPS[case["op"]]
    gen = torch.Generator().manual_seed(1234)
    backward = case["mode"] == "fwd+bwd"
    xs = [make_input(s, device, gen) for s in case["inputs"]]
    xs = [x.contiguous(memory_format=torch.channels_last) if s.get("channels_last") else x
          for x, s in zip(xs, case["inputs"])]
    attrs = dict(case["attrs"])
    for name, specs in case["tensor_attrs"].items():
        attrs[name] = [make_input(s, device, gen) for s in specs]
    if not backward:
        return bench(lambda: f(xs, attrs))
    leaves = []
    for spec, x in zip(case["inputs"], xs):
        if spec["grad"] and x.is_floating_point():
            x.requires_grad_()
            leaves.append(x)
    y = f(xs, attrs)
    dy = make_input({"shape": list(y.shape), "dtype": "f32", "fill": "uniform"}, device, gen).to(y.dtype)
    del y

    def drop_grads():
        for x in leaves:
            x.grad = None

    return bench(lambda: f(xs, attrs).backward(dy), drop_grads)


def key(case):
    return (case["op"], case["variant"], case["dtype"], case["mode"])


def run_tritium(args, json_path):
    cmd = [args.bin, "--ops", "--device", args.device, "--elements", str(args.elements), "--json", json_path,
           "--dtypes", args.dtypes, "--modes", args.modes]
    if args.filter:
        cmd += ["--filter", args.filter]
    if args.quick:
        cmd += ["--quick"]
    if args.clock != "wall":
        cmd += ["--clock", args.clock]
    env = dict(os.environ)
    if args.threads:
        env["TRITIUM_NUM_THREADS"] = str(args.threads)
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    with open(json_path) as f:
        return json.load(f)


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", required=True, help="the tritium-bench executable")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--elements", type=int, default=1 << 24)
    p.add_argument("--filter", default="")
    p.add_argument("--dtypes", default="f32,bf16")
    p.add_argument("--modes", default="fwd,fwd+bwd")
    p.add_argument("--threads", type=int, default=0, help="CPU threads of both sides (default: Tritium's)")
    p.add_argument("--quick", action="store_true", help="measure for 20 ms per case instead of 100")
    p.add_argument("--json", default="", help="write the table here")
    p.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                   help="cpu (CPU only): time each call by the process's CPU time on both sides; with one "
                        "thread the work done, steady on a machine shared with other work")
    p.add_argument("--stat", choices=["median", "min"], default="median",
                   help="each side's figure per round: the median of the repetitions (do_bench's), or their "
                        "minimum (steadier on a machine shared with other work)")
    args = p.parse_args()

    device = "cuda" if args.device.startswith("cuda") else "cpu"
    bench = Bench(args.device if device == "cuda" else "cpu", 5 if args.quick else 25, 20 if args.quick else 100, args.stat,
                  args.clock)
    tritium_ms, torch_ms, errors, meta = {}, {}, {}, None
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            meta = run_tritium(args, os.path.join(tmp, f"round{r}.json"))
            if device == "cpu":
                torch.set_num_threads(args.threads or meta["threads"])
            for case in meta["cases"]:
                k = key(case)
                if case["error"]:
                    errors[k] = "Tritium: " + case["error"]
                    continue
                tritium_ms.setdefault(k, []).append(case["min_ms" if args.stat == "min" else "ms"])
                if case["op"] not in TORCH_OPS:
                    errors[k] = "no PyTorch call in compare_ops.py"
                    continue
                try:
                    torch_ms.setdefault(k, []).append(torch_case(case, args.device, bench))
                except Exception as e:  # a case PyTorch refuses (a dtype it lacks on this device)
                    errors[k] = "PyTorch: " + str(e).splitlines()[0]
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)

    threads = args.threads or meta["threads"]
    where = f"{args.device}, {threads} threads" if device == "cpu" else args.device
    if device == "cuda":
        where += f" ({torch.cuda.get_device_name()})"
    print(f"\nOps beside PyTorch {torch.__version__} on {where}, about {args.elements} elements "
          f"(sorting ops at /16), {args.rounds} rounds, {args.stat} of repetitions, {args.clock} clock; ratio = PyTorch ms / Tritium ms (above 1: Tritium faster)\n")
    print(f"| op | variant | dtype | mode | Tritium ms | PyTorch ms | Tritium GB/s | ratio | ratio range |")
    print(f"|---|---|---|---|---|---|---|---|---|")
    rows, ratios = [], []
    for case in meta["cases"]:
        k = key(case)
        if k in errors:
            print(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | - | - | - | - | {errors[k]} |")
            continue
        per_round = [b / a for a, b in zip(tritium_ms[k], torch_ms[k])]
        ratio = statistics.median(per_round)
        t_ms, p_ms = statistics.median(tritium_ms[k]), statistics.median(torch_ms[k])
        gbs = case["bytes"] / (t_ms * 1e6)
        print(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {t_ms:.4f} | {p_ms:.4f} | {gbs:.1f} | {ratio:.3f} | "
              f"{min(per_round):.2f}-{max(per_round):.2f} |")
        rows.append({"op": k[0], "variant": k[1], "dtype": k[2], "mode": k[3], "tritium_ms": t_ms, "torch_ms": p_ms,
                     "ratio": ratio, "ratio_rounds": per_round})
        ratios.append(ratio)
    below = [r for r in rows if r["ratio"] < 0.8]
    print(f"\ngeomean {geomean(ratios):.3f} over {len(ratios)} cases; "
          f"{len(below)} below 0.8x; {len(errors)} not compared")
    for r in sorted(below, key=lambda r: r["ratio"]):
        print(f"  below 0.8x: {r['op']} {r['variant']} {r['dtype']} {r['mode']}: {r['ratio']:.3f}")
    for k, e in errors.items():
        print(f"  not compared: {' '.join(x for x in k if x)}: {e}")
    if meta["not_benchmarked"]:
        print(f"not benchmarked (registry ops without an entry): {', '.join(meta['not_benchmarked'])}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": where, "elements": args.elements, "rounds": args.rounds, "rows": rows,
                       "geomean": geomean(ratios), "errors": {" ".join(k): e for k, e in errors.items()},
                       "not_benchmarked": meta["not_benchmarked"]}, f, indent=1)


if __name__ == "__main__":
    main()
