#!/usr/bin/env python3
"""PyTorch parity fixtures for Tritium's op registry (issue 29, item 8).

Writes tests/fixtures/torch/<op>.safetensors, one file per registry op (and einsum, unique),
holding for each case of the table below: the inputs (a non-contiguous input is stored as its
whole storage plus a shape/strides/offset recipe the C++ side rebuilds with as_strided), the
attributes (typed, in __metadata__ as JSON), PyTorch's outputs and, for differentiable cases,
the gradient of each floating input for a fixed random grad_output. A case where PyTorch raises
records the error, and Tritium must raise one too. tests/test_torch_parity.cpp runs every case
through the registry on every backend; CI needs no PyTorch.

    /work/.torchvenv/bin/python scripts/make_torch_fixtures.py          # (re)write the files
    /work/.torchvenv/bin/python scripts/make_torch_fixtures.py --check  # are the committed ones current?
    ... --only softmax,log_softmax                                       # some ops only

Adding an op: one entry in OPS (registry name -> PyTorch callable taking the inputs and the
attributes by name), then its cases in CASES (docs/ops.md, "PyTorch parity fixtures").
Deterministic: each case draws from a generator seeded by its op and name, so adding a case
changes no other case's data.
"""
import argparse
import json
import math
import sys
import warnings
import zlib
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load as st_load
from safetensors.torch import save as st_save

ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = ROOT / "tests" / "fixtures" / "torch"
FORMAT_VERSION = "1"

f16, bf16, f32, f64 = torch.float16, torch.bfloat16, torch.float32, torch.float64
i8, i16, i32, i64, u8, boolean = torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool
FLOATS = (f16, bf16, f32, f64)


# ---- attributes: a type tag per value, mapped to ops::Attrs by the C++ side ---------------------

class Attr:
    def __init__(self, tag, value, py=None):
        self.tag, self.value = tag, value
        self.py = value if py is None else py  # what the PyTorch callable receives


def _num(x):
    """A double as JSON: repr when finite (round-trips exactly), else "nan" / "inf" / "-inf"."""
    if math.isfinite(x):
        return float(x)
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


def Int(v): return Attr("int", int(v))
def I64(v): return Attr("int64", int(v))
def Dbl(v): return Attr("double", _num(v), float(v))
def Bool(v): return Attr("bool", bool(v))
def Dims(v): return Attr("dims", [int(x) for x in v], list(v))
def Sizes(v): return Attr("shape", [int(x) for x in v], list(v))
def OptDbl(v): return Attr("optional_double", None if v is None else _num(v), v)
def Str(v): return Attr("string", str(v))
def Gen(seed): return Attr("generator", int(seed))
def Tensors(*makers): return Attr("tensors", list(makers))


def Scal(v):
    """A Scalar: its kind (bool, integer, floating) matters for type promotion."""
    if isinstance(v, bool):
        return Attr("scalar_bool", v)
    if isinstance(v, int):
        return Attr("scalar_int", v)
    return Attr("scalar_float", _num(v), float(v))


# ---- inputs: makers taking a torch.Generator ------------------------------------------------------

def rnd(shape, dtype=f32, lo=-1.0, hi=1.0):
    """Uniform values in [lo, hi] (integers: whole numbers in [lo, hi]; bool: random)."""
    def make(g):
        if dtype == boolean:
            return torch.rand(shape, generator=g) < 0.5
        if dtype.is_floating_point:
            return (torch.rand(shape, generator=g, dtype=f64) * (hi - lo) + lo).to(dtype)
        return torch.randint(int(lo), int(hi) + 1, shape, generator=g, dtype=i64).to(dtype)
    return make


def away(shape, dtype=f32, lo=0.2, hi=1.0):
    """|x| in [lo, hi] with random signs: away from a kink or pole at zero."""
    def make(g):
        m = torch.rand(shape, generator=g, dtype=f64) * (hi - lo) + lo
        s = torch.where(torch.rand(shape, generator=g) < 0.5, -1.0, 1.0).to(f64)
        return (m * s).to(dtype)
    return make


def vals(values, dtype=f32, shape=None):
    """Given values (NaN, Inf, ties, repeats ...)."""
    def make(g):
        t = torch.tensor(values, dtype=dtype)
        return t.reshape(shape) if shape is not None else t
    return make


def idx(values, shape=None, dtype=i64):
    return vals(values, dtype, shape)


def randidx(shape, high, dtype=i64, low=0):
    def make(g):
        return torch.randint(low, high, shape, generator=g, dtype=i64).to(dtype)
    return make


def perm_idx(n_rows, n, high, dtype=i64):
    """Rows of n distinct indices in [0, high) (scatter without duplicates: one writer each)."""
    def make(g):
        return torch.stack([torch.randperm(high, generator=g)[:n] for _ in range(n_rows)]).to(dtype)
    return make


def T(maker, dims=(-1, -2)):
    """The tensor stored with two dims swapped: a transposed, non-contiguous view."""
    def make(g):
        t = maker(g)
        return t.transpose(*dims).contiguous().transpose(*dims)
    return make


def step2(maker, dim=-1):
    """Every other element along `dim` of a tensor twice as long: a strided view with an offset."""
    def make(g):
        t = maker(g)
        shape = list(t.shape)
        d = dim % t.dim()
        shape[d] = 2 * shape[d] + 1
        big = torch.zeros(shape, dtype=t.dtype)
        sl = [slice(None)] * t.dim()
        sl[d] = slice(1, 1 + 2 * t.shape[d], 2)
        view = big[tuple(sl)]
        view.copy_(t)
        return view
    return make


def expanded(maker, shape):
    """A stride-0 broadcast view (torch.expand) of a smaller tensor."""
    def make(g):
        return maker(g).expand(*shape)
    return make


def cast(maker, dtype):
    def make(g):
        return maker(g).to(dtype)
    return make


NONE = None  # an absent optional input (layer_norm without weight)


# ---- the ops: registry name -> PyTorch callable (inputs, then attributes by name) ----------------

def _dims(x, dims):
    return list(range(x.dim())) if len(dims) == 0 else dims


def _sum(x, dims, keepdim):
    return torch.sum(x, dim=_dims(x, dims), keepdim=keepdim) if x.dim() else torch.sum(x)


def _mean(x, dims, keepdim):
    return torch.mean(x, dim=_dims(x, dims), keepdim=keepdim) if x.dim() else torch.mean(x)


OPS = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
    "add.Scalar": lambda x, other: torch.add(x, other),
    "sub.Scalar": lambda x, other: torch.sub(x, other),
    "rsub.Scalar": lambda x, other: torch.rsub(x, other),
    "mul.Scalar": lambda x, other: torch.mul(x, other),
    "div.Scalar": lambda x, other: torch.div(x, other),
    "pow": lambda x, exponent: torch.pow(x, exponent),
    "neg": torch.neg, "exp": torch.exp, "log": torch.log, "sqrt": torch.sqrt, "tanh": torch.tanh,
    "sigmoid": torch.sigmoid, "relu": torch.relu, "gelu": F.gelu,
    "where": torch.where,
    "sum": _sum, "mean": _mean,
    "amax": lambda x, dims, keepdim: torch.amax(x, dim=dims, keepdim=keepdim),
    "amin": lambda x, dims, keepdim: torch.amin(x, dim=dims, keepdim=keepdim),
    "matmul": torch.matmul,
    "softmax": lambda x, dim: torch.softmax(x, dim),
    "log_softmax": lambda x, dim: torch.log_softmax(x, dim),
    "cross_entropy": F.cross_entropy,
    "layer_norm": lambda x, w, b, normalized_shape, eps: F.layer_norm(x, normalized_shape, w, b, eps),
    "scaled_dot_product_attention": lambda q, k, v, is_causal, scale: F.scaled_dot_product_attention(
        q, k, v, is_causal=is_causal, scale=scale),
    "dropout": lambda x, p, generator: F.dropout(x, p, training=True),
    "flatten": lambda x, start_dim, end_dim: torch.flatten(x, start_dim, end_dim),
    "unflatten": lambda x, dim, sizes: torch.unflatten(x, dim, sizes),
    "ravel": torch.ravel,
    "broadcast_to": lambda x, size: torch.broadcast_to(x, size),
    "narrow": lambda x, dim, start, length: torch.narrow(x, dim, start, length),
    "unfold": lambda x, dim, size, step: x.unfold(dim, size, step),
    "movedim": lambda x, source, destination: torch.movedim(x, source, destination),
    "diagonal": lambda x, offset, dim1, dim2: torch.diagonal(x, offset, dim1, dim2),
    "repeat": lambda x, repeats: x.repeat(*repeats),
    "flip": lambda x, dims: torch.flip(x, dims),
    "roll": lambda x, shifts, dims: torch.roll(x, shifts, dims),
    "tril": lambda x, diagonal: torch.tril(x, diagonal),
    "triu": lambda x, diagonal: torch.triu(x, diagonal),
    "cat": lambda *ts, dim: torch.cat(ts, dim),
    "stack": lambda *ts, dim: torch.stack(ts, dim),
    "gather": lambda x, index, dim: torch.gather(x, dim, index),
    "scatter": lambda x, index, src, dim: torch.scatter(x, dim, index, src),
    "scatter.value": lambda x, index, dim, value: torch.scatter(x, dim, index, value),
    "scatter_add": lambda x, index, src, dim: torch.scatter_add(x, dim, index, src),
    "scatter_reduce": lambda x, index, src, dim, reduce, include_self: torch.scatter_reduce(
        x, dim, index, src, reduce, include_self=include_self),
    "index_select": lambda x, index, dim: torch.index_select(x, dim, index),
    "index_add": lambda x, index, source, dim, alpha: torch.index_add(x, dim, index, source, alpha=alpha),
    "masked_fill": lambda x, mask, value: torch.masked_fill(x, mask, value),
    "masked_select": torch.masked_select,
    "index": lambda x, indices: x[tuple(slice(None) if i is None else i for i in indices)],
    "index_put": lambda x, values, indices, accumulate: torch.index_put(
        x, tuple(i for i in indices), values, accumulate),
}


# ---- issue 30 item 1 (wt-conv): convolutions ---------------------------------------------------------
OPS.update({
    "conv1d": lambda x, w, b, stride, padding, dilation, groups: F.conv1d(x, w, b, stride, padding, dilation, groups),
    "conv2d": lambda x, w, b, stride, padding, dilation, groups: F.conv2d(x, w, b, stride, padding, dilation, groups),
    "conv_transpose2d": lambda x, w, b, stride, padding, output_padding, groups, dilation: F.conv_transpose2d(
        x, w, b, stride, padding, output_padding, groups, dilation),
})


# ---- the cases ------------------------------------------------------------------------------------

class Case:
    """One call: `inputs` are makers (or NONE), `attrs` typed Attrs. grad: record the gradients of
    the floating inputs (or of the input positions listed). check: "values" (outputs and
    gradients compared), "dropout" (each element is 0 or x / (1 - p), the gradient uses the same
    mask). A case where PyTorch raises is recorded as an expected error. tol: (rtol, atol)
    instead of the dtype's default, with `why`. known_difference: where Tritium differs from
    PyTorch on purpose or for now (listed in docs/ops.md); the C++ test then expects the case to
    fail, so a fix shows up as a failure that asks to remove the mark."""

    def __init__(self, op, name, inputs, attrs=None, grad=True, check="values", tol=None, why=None,
                 known_difference=None):
        self.op, self.name, self.inputs, self.attrs = op, name, inputs, attrs or {}
        self.grad, self.check, self.tol, self.why = grad, check, tol, why
        self.known_difference = known_difference
        assert op in OPS, f"no PyTorch callable for op {op!r}"
        assert tol is None or why, f"{op}/{name}: a tolerance override needs a reason"


CASES = []


def case(*args, **kwargs):
    CASES.append(Case(*args, **kwargs))


SPECIAL = [float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 1.5, -2.0, 3.0e-3, 7.0, -0.5]

# Elementwise, two tensors: broadcasting both ways, 0-dim, strided, empty, dtypes and promotion.
for op in ("add", "sub", "mul", "div"):
    div = op == "div"
    other = (lambda s, d=f32: away(s, d, 0.5, 2.0)) if div else (lambda s, d=f32: rnd(s, d))
    case(op, "same shape f32", [rnd((3, 5)), other((3, 5))])
    case(op, "broadcast [3,1] [1,4]", [rnd((3, 1)), other((1, 4))])
    case(op, "broadcast [2,3,4] [4]", [rnd((2, 3, 4)), other((4,))])
    case(op, "0-dim other", [rnd((2, 3)), other(())])
    case(op, "0-dim both", [rnd(()), other(())])
    case(op, "transposed self", [T(rnd((4, 3))), other((4, 3))])
    case(op, "stepped self, expanded other", [step2(rnd((3, 5))), expanded(other((3, 1)), (3, 5))])
    case(op, "empty", [rnd((0, 3)), other((1, 3))])
    case(op, "f64", [rnd((3, 4), f64), other((3, 4), f64)])
    case(op, "f16", [rnd((3, 4), f16), other((3, 4), f16)])
    case(op, "bf16", [rnd((3, 4), bf16), other((3, 4), bf16)])
    case(op, "f16 with bf16 -> f32", [rnd((3, 4), f16), other((3, 4), bf16)])
    case(op, "f32 with f64 0-dim -> f32", [rnd((3, 4)), other((), f64)])
    case(op, "i32 with f16 -> f16", [rnd((3, 4), i32, -5, 5), other((3, 4), f16)])
    case(op, "NaN and Inf", [vals(SPECIAL), vals(list(reversed(SPECIAL)))], grad=False)
    if div:
        case(op, "i64 / i64 -> f32", [rnd((3, 4), i64, -9, 9), idx([1, -2, 3, 4], (4,))], grad=False)
        case(op, "by zero", [vals([1.0, -1.0, 0.0, 2.0]), vals([0.0, 0.0, 0.0, -0.0])], grad=False)
    else:
        case(op, "i32 with i64", [rnd((3, 4), i32, -50, 50), rnd((4,), i64, -50, 50)], grad=False)
        case(op, "u8 with i8 -> i16", [rnd((5,), u8, 0, 255), rnd((5,), i8, -128, 127)], grad=False)
        case(op, "i8 wraps", [vals([100, -100, 127], i8), vals([100, -100, 1], i8)], grad=False)
        case(op, "bool with i32", [rnd((6,), boolean), rnd((6,), i32, -3, 3)], grad=False)
        case(op, "bool with bool", [rnd((6,), boolean), rnd((6,), boolean)], grad=False)

# Elementwise with a number (the .Scalar overloads): a number does not widen a tensor's dtype.
for op in ("add.Scalar", "sub.Scalar", "rsub.Scalar", "mul.Scalar", "div.Scalar"):
    case(op, "f32 and 2.5", [rnd((3, 4))], {"other": Scal(2.5)})
    case(op, "f16 and 3", [rnd((3, 4), f16)], {"other": Scal(3)})
    case(op, "bf16 and -1.5", [T(rnd((4, 3), bf16))], {"other": Scal(-1.5)})
    case(op, "f64 0-dim", [rnd((), f64)], {"other": Scal(0.75)})
    case(op, "i8 and 1000 stays i8", [rnd((5,), i8, -9, 9)], {"other": Scal(1000)}, grad=False)
    case(op, "i32 and 2.5 -> f32", [rnd((5,), i32, -9, 9)], {"other": Scal(2.5)}, grad=False)
    case(op, "bool and 1 -> i64", [rnd((5,), boolean)], {"other": Scal(1)}, grad=False)
    case(op, "empty", [rnd((2, 0))], {"other": Scal(2.0)})
    case(op, "NaN and Inf", [vals(SPECIAL)], {"other": Scal(float("inf"))}, grad=False)

# pow with a number exponent.
for name, x, e, grad in [
    ("x^2", rnd((3, 4)), 2, True), ("x^3 f64", rnd((3, 4), f64), 3, True),
    ("x^-2", away((3, 4), f32, 0.5, 2.0), -2, True), ("x^0.5", rnd((3, 4), f32, 0.1, 2.0), 0.5, True),
    ("x^2.5 f64", rnd((3, 4), f64, 0.1, 2.0), 2.5, True), ("x^0", rnd((3, 4)), 0, True),
    ("x^1 strided", T(rnd((4, 3))), 1, True), ("f16 x^2", rnd((3, 4), f16), 2, True),
    ("i32 ^ 3", rnd((5,), i32, -6, 6), 3, False), ("i64 ^ 0", rnd((5,), i64, -6, 6), 0, False),
    ("i32 ^ 0.5 -> f32", rnd((5,), i32, 0, 9), 0.5, False), ("bool ^ 2 -> i64", rnd((5,), boolean), 2, False),
    ("negative base ^ 2.5 is NaN", vals([-1.0, -2.0, 4.0]), 2.5, False),
    ("NaN and Inf ^ 2", vals(SPECIAL), 2, False), ("empty", rnd((0,)), 2, True),
]:
    case("pow", name, [x], {"exponent": Scal(e)}, grad=grad)

# Unary math: dtypes, layouts, special values, integer inputs (promoted to f32).
UNARY_DOMAIN = {"log": (0.1, 3.0), "sqrt": (0.1, 3.0)}
for op in ("neg", "exp", "log", "sqrt", "tanh", "sigmoid", "relu", "gelu"):
    lo, hi = UNARY_DOMAIN.get(op, (-2.0, 2.0))
    make = (lambda s, d=f32: away(s, d, 0.1, 2.0)) if op == "relu" else (lambda s, d=f32: rnd(s, d, lo, hi))
    case(op, "f32 [3,5]", [make((3, 5))])
    case(op, "f64", [make((3, 4), f64)])
    case(op, "f16", [make((3, 4), f16)])
    case(op, "bf16", [make((3, 4), bf16)])
    case(op, "transposed", [T(make((5, 3)))])
    case(op, "stepped", [step2(make((2, 5)))])
    case(op, "0-dim", [make(())])
    case(op, "empty", [make((0, 4))])
    case(op, "NaN, Inf, signed zeros", [vals(SPECIAL)], grad=False)
    case(op, "i32", [rnd((6,), i32, -3, 3)], grad=False)
    case(op, "bool", [rnd((6,), boolean)], grad=False)

# where(condition, self, other): broadcasting all three, promotion.
case("where", "same shape", [rnd((3, 4), boolean), rnd((3, 4)), rnd((3, 4))])
case("where", "broadcast [3,1] [4] 0-d", [rnd((3, 1), boolean), rnd((4,)), rnd(())])
case("where", "strided self", [rnd((4, 3), boolean), T(rnd((4, 3))), rnd((4, 3))])
case("where", "f32 with f64 0-dim", [rnd((5,), boolean), rnd((5,)), rnd((), f64)])
case("where", "i32 with f16", [rnd((5,), boolean), rnd((5,), i32, -4, 4), rnd((5,), f16)], grad=False)
case("where", "bool values", [rnd((5,), boolean), rnd((5,), boolean), rnd((5,), boolean)], grad=False)
case("where", "empty", [rnd((0, 2), boolean), rnd((0, 2)), rnd((2,))])
case("where", "NaN passes through", [vals([True, False, True, False], boolean), vals([float("nan"), 1.0, float("inf"), 2.0]),
                                     vals([0.0, float("nan"), 0.0, float("-inf")])], grad=False)
case("where", "condition not bool", [rnd((3,), u8, 0, 1), rnd((3,)), rnd((3,))], grad=False,
     known_difference="PyTorch still takes a uint8 condition (deprecated, with a warning); Tritium requires bool")

# Reductions: dims (negative, several, all), keepdim, strided, empty, dtypes, NaN.
def R(dims, keepdim=False):
    return {"dims": Dims(dims), "keepdim": Bool(keepdim)}


for op in ("sum", "mean", "amax", "amin"):
    case(op, "all dims", [rnd((3, 4))], R([]))
    case(op, "dim 1", [rnd((3, 5))], R([1]))
    case(op, "dim -1 keepdim", [rnd((2, 3, 4))], R([-1], True))
    case(op, "dims 0,2", [rnd((2, 3, 4))], R([0, 2]))
    case(op, "dims -1,0 keepdim", [rnd((2, 3, 4))], R([-1, 0], True))
    case(op, "transposed dim 0", [T(rnd((5, 3)))], R([0]))
    case(op, "stepped dim 1", [step2(rnd((3, 4)), 1)], R([1]))
    case(op, "long row 1000", [rnd((2, 1000))], R([1]))
    case(op, "0-dim", [rnd(())], R([]))
    case(op, "f64", [rnd((3, 7), f64)], R([1]))
    case(op, "f16", [rnd((3, 7), f16)], R([1]))
    case(op, "bf16", [rnd((3, 7), bf16)], R([0]))
    case(op, "NaN propagates", [vals(SPECIAL[:4] + [1.0, 2.0], f32, (2, 3))], R([1]), grad=False)
    case(op, "empty kept dim", [rnd((0, 3))], R([1]))
    if op in ("sum", "mean"):
        case(op, "empty reduced dim", [rnd((2, 0))], R([1]))
        case(op, "empty all dims", [rnd((0, 3))], R([]))
    else:
        case(op, "empty reduced dim", [rnd((2, 0))], R([1]), grad=False)
        case(op, "ties share the gradient", [vals([1.0, 3.0, 3.0, 2.0, -1.0, -1.0], f32, (2, 3))], R([1]))
    case(op, "dim out of range", [rnd((2, 3))], R([2]), grad=False)
    case(op, "repeated dim", [rnd((2, 3))], R([1, -1]), grad=False)
    if op != "mean":
        case(op, "i32", [rnd((3, 4), i32, -50, 50)], R([1]), grad=False)
        case(op, "bool", [rnd((3, 4), boolean)], R([0]), grad=False)
    else:
        case(op, "i32 is an error", [rnd((3, 4), i32, -50, 50)], R([1]), grad=False)

# Softmax and log_softmax: dims, strided, long rows, dtypes, -inf.
for op in ("softmax", "log_softmax"):
    case(op, "dim -1", [rnd((3, 5), f32, -3, 3)], {"dim": Int(-1)})
    case(op, "dim 0", [rnd((4, 3), f32, -3, 3)], {"dim": Int(0)})
    case(op, "dim 1 of 3-D", [rnd((2, 3, 4), f32, -3, 3)], {"dim": Int(1)})
    case(op, "transposed", [T(rnd((5, 3), f32, -3, 3))], {"dim": Int(1)})
    case(op, "long row 5000", [rnd((2, 5000), f32, -3, 3)], {"dim": Int(-1)})
    case(op, "f64", [rnd((3, 6), f64, -3, 3)], {"dim": Int(-1)})
    case(op, "f16", [rnd((3, 6), f16, -3, 3)], {"dim": Int(-1)})
    case(op, "bf16", [rnd((3, 6), bf16, -3, 3)], {"dim": Int(0)})
    case(op, "0-dim", [rnd(())], {"dim": Int(0)})
    case(op, "empty", [rnd((0, 4))], {"dim": Int(-1)})
    case(op, "large and -inf logits", [vals([1000.0, 0.0, float("-inf"), -1000.0, 999.0, 1.0], f32, (2, 3))],
         {"dim": Int(-1)}, grad=False)
    case(op, "NaN row", [vals([float("nan"), 1.0, 2.0, 0.5, 1.0, 2.0], f32, (2, 3))], {"dim": Int(1)}, grad=False)
    case(op, "integer input is an error", [rnd((2, 3), i64, 0, 5)], {"dim": Int(1)}, grad=False)
    case(op, "dim out of range", [rnd((2, 3))], {"dim": Int(2)}, grad=False)

# cross_entropy(logits [N, C], targets [N]).
case("cross_entropy", "[4,5] i64 targets", [rnd((4, 5), f32, -3, 3), randidx((4,), 5)])
case("cross_entropy", "[6,3] i32 targets", [rnd((6, 3), f32, -3, 3), randidx((6,), 3, i32)], grad=False,
     known_difference="Tritium takes i32 targets too; PyTorch wants i64 (or u8)")
case("cross_entropy", "transposed logits", [T(rnd((4, 7), f32, -3, 3)), randidx((4,), 7)])
case("cross_entropy", "f64", [rnd((3, 10), f64, -3, 3), randidx((3,), 10)])
case("cross_entropy", "f16", [rnd((3, 10), f16, -3, 3), randidx((3,), 10)])
case("cross_entropy", "bf16", [rnd((3, 10), bf16, -3, 3), randidx((3,), 10)])
case("cross_entropy", "large logits", [vals([1000.0, -1000.0, 0.0, 5.0, 5.0, 5.0], f32, (2, 3)), idx([1, 2])])
case("cross_entropy", "target out of range", [rnd((3, 4)), idx([0, 4, 1])], grad=False)
case("cross_entropy", "negative target", [rnd((3, 4)), idx([0, -1, 1])], grad=False)
case("cross_entropy", "shapes disagree", [rnd((3, 4)), idx([0, 1])], grad=False)

# layer_norm(input, weight, bias; normalized_shape, eps).
LN = lambda shape, eps=1e-5: {"normalized_shape": Sizes(shape), "eps": Dbl(eps)}
case("layer_norm", "[3,5] affine", [rnd((3, 5), f32, -2, 2), rnd((5,), f32, 0.5, 1.5), rnd((5,))], LN([5]))
case("layer_norm", "[2,3,4] over [3,4] no affine", [rnd((2, 3, 4), f32, -2, 2), NONE, NONE], LN([3, 4]))
case("layer_norm", "transposed input", [T(rnd((4, 6), f32, -2, 2)), rnd((6,), f32, 0.5, 1.5), rnd((6,))], LN([6]))
case("layer_norm", "row of 1500", [rnd((2, 1500), f32, -2, 2), rnd((1500,), f32, 0.5, 1.5), rnd((1500,))], LN([1500]))
case("layer_norm", "f64 eps 1e-3", [rnd((3, 7), f64, -2, 2), rnd((7,), f64, 0.5, 1.5), rnd((7,), f64)], LN([7], 1e-3))
case("layer_norm", "f16", [rnd((3, 8), f16, -2, 2), rnd((8,), f16, 0.5, 1.5), rnd((8,), f16)], LN([8]))
case("layer_norm", "bf16", [rnd((3, 8), bf16, -2, 2), rnd((8,), bf16, 0.5, 1.5), rnd((8,), bf16)], LN([8]))
case("layer_norm", "constant rows", [vals([2.0] * 8, f32, (2, 4)), NONE, NONE], LN([4]))
case("layer_norm", "empty batch", [rnd((0, 4)), rnd((4,)), rnd((4,))], LN([4]))
case("layer_norm", "shape mismatch", [rnd((3, 4)), rnd((5,)), rnd((5,))], LN([5]), grad=False)

# matmul: 1-D, 2-D, batched with broadcast batch dims, strided, dtypes, empty K.
case("matmul", "[3,5]@[5,2]", [rnd((3, 5)), rnd((5, 2))])
case("matmul", "[5]@[5]", [rnd((5,)), rnd((5,))])
case("matmul", "[5]@[5,3]", [rnd((5,)), rnd((5, 3))])
case("matmul", "[3,5]@[5]", [rnd((3, 5)), rnd((5,))])
case("matmul", "[2,3,5]@[5,4] broadcast", [rnd((2, 3, 5)), rnd((5, 4))])
case("matmul", "[2,1,3,4]@[3,4,2] batch broadcast", [rnd((2, 1, 3, 4)), rnd((3, 4, 2))])
case("matmul", "transposed both", [T(rnd((3, 5))), T(rnd((5, 4)))])
case("matmul", "K = 70", [rnd((3, 70)), rnd((70, 5))])
case("matmul", "f64", [rnd((4, 6), f64), rnd((6, 3), f64)])
case("matmul", "f16", [rnd((4, 6), f16), rnd((6, 3), f16)])
case("matmul", "bf16", [rnd((4, 6), bf16), rnd((6, 3), bf16)])
case("matmul", "K = 0", [rnd((3, 0)), rnd((0, 2))])
case("matmul", "M = 0", [rnd((0, 4)), rnd((4, 2))])
case("matmul", "inner sizes differ", [rnd((3, 4)), rnd((5, 2))], grad=False)
case("matmul", "dtypes differ", [rnd((3, 4)), rnd((4, 2), f64)], grad=False)
case("matmul", "0-dim operand", [rnd(()), rnd((3,))], grad=False)

# scaled_dot_product_attention(q, k, v; is_causal, scale).
SDPA = lambda causal=False, scale=None: {"is_causal": Bool(causal), "scale": OptDbl(scale)}
case("scaled_dot_product_attention", "[1,2,5,8] keys 7", [rnd((1, 2, 5, 8)), rnd((1, 2, 7, 8)), rnd((1, 2, 7, 8))], SDPA())
case("scaled_dot_product_attention", "causal", [rnd((2, 1, 6, 4)), rnd((2, 1, 6, 4)), rnd((2, 1, 6, 4))], SDPA(True))
case("scaled_dot_product_attention", "causal, fewer keys", [rnd((1, 1, 6, 4)), rnd((1, 1, 4, 4)), rnd((1, 1, 4, 4))], SDPA(True))
case("scaled_dot_product_attention", "scale 0.3, head dim 12", [rnd((1, 2, 5, 12)), rnd((1, 2, 5, 12)), rnd((1, 2, 5, 12))],
     SDPA(False, 0.3))
case("scaled_dot_product_attention", "transposed q (heads and length swapped)",
     [T(rnd((1, 2, 5, 8)), (1, 2)), rnd((1, 2, 5, 8)), rnd((1, 2, 5, 8))], SDPA())
case("scaled_dot_product_attention", "f16", [rnd((1, 2, 5, 8), f16), rnd((1, 2, 5, 8), f16), rnd((1, 2, 5, 8), f16)], SDPA())
case("scaled_dot_product_attention", "bf16", [rnd((1, 2, 5, 8), bf16), rnd((1, 2, 5, 8), bf16), rnd((1, 2, 5, 8), bf16)],
     SDPA(True))
case("scaled_dot_product_attention", "dtypes differ", [rnd((1, 1, 3, 4)), rnd((1, 1, 3, 4), f16), rnd((1, 1, 3, 4))],
     SDPA(), grad=False)

# dropout: the mask is ours (Philox), so only its shape and scaling are compared.
case("dropout", "p 0.3", [rnd((4, 5))], {"p": Dbl(0.3), "generator": Gen(7)}, check="dropout")
case("dropout", "p 0.5 f64 strided", [T(rnd((6, 3), f64))], {"p": Dbl(0.5), "generator": Gen(8)}, check="dropout")
case("dropout", "p 0.2 f16", [rnd((3, 7), f16)], {"p": Dbl(0.2), "generator": Gen(9)}, check="dropout")
case("dropout", "p 0 keeps everything", [rnd((3, 4))], {"p": Dbl(0.0), "generator": Gen(10)})
case("dropout", "p 1 drops everything", [rnd((3, 4))], {"p": Dbl(1.0), "generator": Gen(11)})
case("dropout", "empty", [rnd((0, 4))], {"p": Dbl(0.5), "generator": Gen(12)})
case("dropout", "p out of range", [rnd((3,))], {"p": Dbl(1.5), "generator": Gen(13)}, grad=False)

# Shape ops (ops/decl/shape.cpp).
case("flatten", "dims 1..-1", [rnd((2, 3, 4))], {"start_dim": Int(1), "end_dim": Int(-1)})
case("flatten", "all of a transposed", [T(rnd((4, 3)))], {"start_dim": Int(0), "end_dim": Int(-1)})
case("flatten", "0-dim", [rnd(())], {"start_dim": Int(0), "end_dim": Int(-1)})
case("flatten", "empty", [rnd((2, 0, 3))], {"start_dim": Int(0), "end_dim": Int(1)})
case("flatten", "i64", [rnd((2, 3), i64, -9, 9)], {"start_dim": Int(0), "end_dim": Int(1)}, grad=False)
case("flatten", "start after end", [rnd((2, 3, 4))], {"start_dim": Int(2), "end_dim": Int(1)}, grad=False)
case("unflatten", "dim -1 into [2,-1]", [T(rnd((3, 4)))], {"dim": Int(-1), "sizes": Sizes([2, -1])})
case("unflatten", "dim 0 into [2,3]", [rnd((6, 2), bf16)], {"dim": Int(0), "sizes": Sizes([2, 3])})
case("unflatten", "sizes do not multiply", [rnd((6,))], {"dim": Int(0), "sizes": Sizes([4, 2])}, grad=False)
case("ravel", "transposed", [T(rnd((4, 3)))])
case("ravel", "bool", [rnd((2, 3), boolean)], grad=False)
case("ravel", "0-dim", [rnd(())])
case("broadcast_to", "[3,1] to [2,3,4]", [rnd((3, 1))], {"size": Sizes([2, 3, 4])})
case("broadcast_to", "-1 keeps a dim", [rnd((3, 1), f64)], {"size": Sizes([-1, 5])})
case("broadcast_to", "0-dim to [2,2]", [rnd(())], {"size": Sizes([2, 2])})
case("broadcast_to", "to an empty dim", [rnd((1, 3))], {"size": Sizes([0, 3])})
case("broadcast_to", "incompatible", [rnd((3, 2))], {"size": Sizes([3, 4])}, grad=False)
N = lambda d, s, l: {"dim": Int(d), "start": I64(s), "length": I64(l)}
case("narrow", "dim -1 start -3", [T(rnd((5, 3)))], N(-1, -3, 2))
case("narrow", "dim 0", [rnd((5, 3), i32, -9, 9)], N(0, 1, 3), grad=False)
case("narrow", "length 0", [rnd((4, 3))], N(0, 2, 0))
case("narrow", "past the end", [rnd((4, 3))], N(0, 3, 2), grad=False)
U = lambda d, s, st: {"dim": Int(d), "size": I64(s), "step": I64(st)}
case("unfold", "overlapping windows", [T(rnd((7, 3)))], U(-1, 3, 2))
case("unfold", "gaps between windows", [rnd((8, 2))], U(0, 2, 3))
case("unfold", "0-dim", [rnd(())], U(0, 1, 1))
case("unfold", "window too large", [rnd((3, 2))], U(1, 3, 1), grad=False)
M = lambda s, d: {"source": Dims(s), "destination": Dims(d)}
case("movedim", "[0,-1] to [-1,1]", [rnd((2, 3, 4))], M([0, -1], [-1, 1]))
case("movedim", "one dim", [T(rnd((4, 3)))], M([0], [1]))
case("movedim", "repeated source", [rnd((2, 3))], M([0, 0], [0, 1]), grad=False)
D = lambda o, a, b: {"offset": I64(o), "dim1": Int(a), "dim2": Int(b)}
case("diagonal", "offset 1 dims (2,0)", [rnd((3, 2, 4))], D(1, 2, 0))
case("diagonal", "offset -1 transposed", [T(rnd((3, 4)))], D(-1, 0, 1))
case("diagonal", "offset past the edge", [rnd((3, 4))], D(5, 0, 1))
case("diagonal", "same dims", [rnd((3, 4))], D(0, 1, 1), grad=False)
case("repeat", "new leading dim", [T(rnd((3, 2)))], {"repeats": Sizes([2, 1, 3])})
case("repeat", "bool", [rnd((2, 2), boolean)], {"repeats": Sizes([2, 2])}, grad=False)
case("repeat", "zero repeats", [rnd((2, 3))], {"repeats": Sizes([0, 2])})
case("repeat", "fewer repeats than dims", [rnd((2, 3))], {"repeats": Sizes([2])}, grad=False)
case("flip", "dims 0,-1", [T(rnd((4, 3)))], {"dims": Dims([0, -1])})
case("flip", "i16", [rnd((2, 5), i16, -99, 99)], {"dims": Dims([1])}, grad=False)
case("flip", "no dims", [rnd((3,))], {"dims": Dims([])})
case("roll", "two dims", [T(rnd((4, 3)))], {"shifts": Sizes([1, -5]), "dims": Dims([0, -1])})
case("roll", "flattened", [rnd((2, 3))], {"shifts": Sizes([4]), "dims": Dims([])})
case("roll", "shifts and dims differ", [rnd((2, 3))], {"shifts": Sizes([1, 2]), "dims": Dims([0])}, grad=False)
for op in ("tril", "triu"):
    case(op, "batched diagonal -1", [rnd((2, 3, 4))], {"diagonal": I64(-1)})
    case(op, "diagonal 2 transposed", [T(rnd((5, 3)))], {"diagonal": I64(2)})
    case(op, "i64", [rnd((3, 3), i64, -9, 9)], {"diagonal": I64(0)}, grad=False)
    case(op, "1-D is an error", [rnd((3,))], {"diagonal": I64(0)}, grad=False)
case("cat", "dim -1 one strided", [rnd((3, 2)), T(rnd((3, 4))), rnd((3, 1))], {"dim": Int(-1)})
case("cat", "dim 0 promotes f32 f64", [rnd((2, 3)), rnd((1, 3), f64)], {"dim": Int(0)})
case("cat", "legacy empty [0] skipped", [rnd((2, 3)), rnd((0,)), rnd((1, 3))], {"dim": Int(0)})
case("cat", "one tensor", [rnd((2, 3))], {"dim": Int(1)})
case("cat", "i32 and bool", [rnd((2,), i32, -9, 9), rnd((3,), boolean)], {"dim": Int(0)}, grad=False)
case("cat", "shapes differ", [rnd((2, 3)), rnd((2, 4))], {"dim": Int(0)}, grad=False)
case("stack", "dim 1 one strided", [rnd((3, 2)), T(rnd((3, 2)))], {"dim": Int(1)})
case("stack", "dim -1 three", [rnd((2,)), rnd((2,)), rnd((2,))], {"dim": Int(-1)})
case("stack", "0-dim tensors", [rnd(()), rnd(())], {"dim": Int(0)})
case("stack", "shapes differ", [rnd((2,)), rnd((3,))], {"dim": Int(0)}, grad=False)

# Indexing ops (ops/decl/indexing.cpp).
case("gather", "dim -1 repeated", [T(rnd((3, 4))), idx([0, 3, 2, 2, 1, 0], (3, 2))], {"dim": Int(-1)})
case("gather", "dim 0 i32 index", [rnd((3, 4)), idx([2, 0, 1, 1, 0, 2, 2, 2], (2, 4), i32)], {"dim": Int(0)})
case("gather", "i64 values", [rnd((3, 4), i64, -99, 99), randidx((3, 2), 4)], {"dim": Int(1)}, grad=False)
case("gather", "empty index", [rnd((3, 4)), idx([], (3, 0))], {"dim": Int(1)})
case("gather", "index out of range", [rnd((3, 4)), idx([0, 4], (1, 2))], {"dim": Int(1)}, grad=False)
case("scatter", "dim 1 distinct", [rnd((3, 5)), perm_idx(3, 2, 5), rnd((3, 2))], {"dim": Int(1)})
# PyTorch's own backward refuses a src larger than the index (gather gives the index's shape).
case("scatter", "src larger than index", [rnd((3, 5)), perm_idx(3, 2, 5), rnd((3, 3))], {"dim": Int(1)}, grad=False)
case("scatter", "dim 0 f64", [rnd((4, 3), f64), idx([3, 0, 1], (1, 3)), rnd((1, 3), f64)],
     {"dim": Int(0)})
case("scatter", "index out of range", [rnd((3, 4)), idx([0, 9], (1, 2)), rnd((1, 2))], {"dim": Int(1)}, grad=False)
case("scatter.value", "dim 0", [rnd((4, 3)), idx([3, 0, 1], (1, 3))], {"dim": Int(0), "value": Scal(0.25)})
case("scatter.value", "i32 with an integer", [rnd((3, 4), i32, -9, 9), perm_idx(3, 2, 4)], {"dim": Int(1), "value": Scal(7)},
     grad=False)
case("scatter_add", "dim 1 duplicates", [rnd((3, 4)), idx([0, 0, 2, 2, 1, 0], (3, 2)), rnd((3, 2))], {"dim": Int(1)})
case("scatter_add", "src larger than index", [rnd((3, 4)), idx([0, 0, 2, 2, 1, 0], (3, 2)), rnd((3, 3))], {"dim": Int(1)},
     grad=False)
case("scatter_add", "i64 duplicates", [rnd((2, 4), i64, -9, 9), idx([1, 1, 1, 3, 0, 0], (2, 3)), rnd((2, 3), i64, -9, 9)],
     {"dim": Int(1)}, grad=False)
case("scatter_add", "f64 dim 0", [rnd((3, 2), f64), idx([2, 2, 0, 2], (2, 2)), rnd((2, 2), f64)], {"dim": Int(0)})
for reduce in ("sum", "prod", "mean", "amax", "amin"):
    for include_self in (True, False):
        case("scatter_reduce", f"{reduce} {'with' if include_self else 'without'} self",
             [rnd((3, 4), f32, 0.5, 1.5), idx([0, 0, 2, 2, 1, 0], (3, 2)), rnd((3, 2), f32, 0.5, 1.5)],
             {"dim": Int(1), "reduce": Str(reduce), "include_self": Bool(include_self)})
case("scatter_reduce", "amax i32", [rnd((2, 4), i32, -9, 9), idx([1, 1, 3, 0, 0, 0], (2, 3)), rnd((2, 3), i32, -9, 9)],
     {"dim": Int(1), "reduce": Str("amax"), "include_self": Bool(True)}, grad=False)
case("scatter_reduce", "unknown reduce", [rnd((2, 4)), idx([1, 1], (1, 2)), rnd((1, 2))],
     {"dim": Int(1), "reduce": Str("maximum"), "include_self": Bool(True)}, grad=False)
case("scatter_reduce", "reduce 'max'", [rnd((2, 4)), idx([1, 1], (1, 2)), rnd((1, 2))],
     {"dim": Int(1), "reduce": Str("max"), "include_self": Bool(True)}, grad=False,
     known_difference="PyTorch takes 'max' / 'min' as undocumented aliases of amax / amin; Tritium refuses them")
case("index_select", "dim 0 duplicates strided", [T(rnd((4, 3))), idx([3, 0, 3])], {"dim": Int(0)})
case("index_select", "dim -1", [rnd((2, 5)), idx([4, 1], dtype=i32)], {"dim": Int(-1)})
case("index_select", "bool values", [rnd((3, 3), boolean), idx([2, 2])], {"dim": Int(0)}, grad=False)
case("index_select", "empty index", [rnd((3, 4)), idx([], (0,))], {"dim": Int(1)})
case("index_select", "index out of range", [rnd((3, 4)), idx([1, 4])], {"dim": Int(1)}, grad=False)
case("index_add", "dim 0 duplicates alpha 2", [rnd((4, 3)), idx([1, 3, 1]), T(rnd((3, 3)))], {"dim": Int(0), "alpha": Scal(2.0)})
case("index_add", "dim 1 alpha 1", [rnd((2, 4), f64), idx([0, 3]), rnd((2, 2), f64)], {"dim": Int(1), "alpha": Scal(1)})
case("index_add", "i32", [rnd((3, 2), i32, -9, 9), idx([2, 2]), rnd((2, 2), i32, -9, 9)], {"dim": Int(0), "alpha": Scal(3)},
     grad=False)
case("masked_fill", "broadcast mask strided", [T(rnd((3, 4))), vals([True, False, False, True], boolean)], {"value": Scal(0.5)})
case("masked_fill", "NaN value", [rnd((2, 3)), rnd((2, 3), boolean)], {"value": Scal(float("nan"))})
case("masked_fill", "i64 with an integer", [rnd((2, 3), i64, -9, 9), rnd((2, 3), boolean)], {"value": Scal(-7)}, grad=False)
case("masked_fill", "f16 with -inf", [rnd((2, 3), f16), rnd((2, 3), boolean)], {"value": Scal(float("-inf"))})
case("masked_fill", "mask not bool", [rnd((2, 3)), rnd((2, 3), u8, 0, 1)], {"value": Scal(1.0)}, grad=False)
case("masked_select", "self broadcast to the mask", [rnd((4,)), rnd((3, 4), boolean)])
case("masked_select", "strided", [T(rnd((3, 4))), rnd((3, 4), boolean)])
case("masked_select", "all false", [rnd((2, 3)), vals([False] * 6, boolean, (2, 3))])
case("masked_select", "i32", [rnd((2, 3), i32, -9, 9), rnd((2, 3), boolean)], grad=False)
case("index", "adjacent dims broadcast negative", [rnd((4, 5, 3))],
     {"indices": Tensors(None, idx([0, 4], (2, 1)), idx([2, -1, 0], (3,)))})
case("index", "dims 0 and 2 apart", [rnd((4, 5, 3))], {"indices": Tensors(idx([3, 0, 3]), None, idx([1, -3, 1]))})
case("index", "bool mask", [T(rnd((4, 3)))], {"indices": Tensors(vals([True, False, True, True], boolean))})
case("index", "2-D mask", [rnd((3, 4), i32, -9, 9)], {"indices": Tensors(rnd((3, 4), boolean))}, grad=False)
case("index", "index out of range", [rnd((3, 4))], {"indices": Tensors(idx([0, 3]))}, grad=False)
case("index_put", "rows", [rnd((4, 3)), rnd((2, 3))], {"indices": Tensors(idx([3, 1])), "accumulate": Bool(False)})
case("index_put", "accumulate duplicates broadcast", [T(rnd((3, 4))), rnd((4,))],
     {"indices": Tensors(idx([1, 1])), "accumulate": Bool(True)})
case("index_put", "two index tensors", [rnd((3, 4)), rnd((2,))],
     {"indices": Tensors(idx([0, 2]), idx([3, -1])), "accumulate": Bool(False)})
case("index_put", "i64 accumulate", [rnd((4,), i64, -9, 9), rnd((3,), i64, -9, 9)],
     {"indices": Tensors(idx([0, 0, 3])), "accumulate": Bool(True)}, grad=False)


# ---- issue 29 item 8: the ops added by the op-breadth stop ------------------------------------------
# The matmul family, the statistics / scans / sorting ops, the element-wise math ops, clamp, lerp,
# addcmul / addcdiv and the activations (ops/decl/matmul_family.cpp, reductions_more.cpp,
# unary_math.cpp, activations.cpp). The sampling ops (bernoulli, normal, multinomial, randperm, ...)
# are raw ops outside the registry and have no fixtures: their streams are Philox, not PyTorch's
# generator (a registry op that cannot have fixtures is listed in ops_without_fixtures() in
# tests/test_torch_parity.cpp, with the reason).


def _all_dims(x, dims):
    return None if len(dims) == 0 else dims


def _clamp(x, has_min, has_max, min, max):
    return torch.clamp(x, min if has_min else None, max if has_max else None)


OPS.update({
    # matmul family
    "mm": torch.mm, "bmm": torch.bmm, "mv": torch.mv, "dot": torch.dot, "vdot": torch.vdot,
    "addmm": lambda s, a, b, beta, alpha: torch.addmm(s, a, b, beta=beta, alpha=alpha),
    "addmv": lambda s, a, b, beta, alpha: torch.addmv(s, a, b, beta=beta, alpha=alpha),
    "addr": lambda s, a, b, beta, alpha: torch.addr(s, a, b, beta=beta, alpha=alpha),
    "baddbmm": lambda s, a, b, beta, alpha: torch.baddbmm(s, a, b, beta=beta, alpha=alpha),
    "addbmm": lambda s, a, b, beta, alpha: torch.addbmm(s, a, b, beta=beta, alpha=alpha),
    # statistics, scans, sorting
    "var": lambda x, dims, correction, keepdim: torch.var(x, dim=_all_dims(x, dims), correction=correction,
                                                          keepdim=keepdim),
    "std": lambda x, dims, correction, keepdim: torch.std(x, dim=_all_dims(x, dims), correction=correction,
                                                          keepdim=keepdim),
    "prod": lambda x: torch.prod(x),
    "prod.dim_int": lambda x, dim, keepdim: torch.prod(x, dim, keepdim=keepdim),
    "logsumexp": lambda x, dims, keepdim: torch.logsumexp(x, _dims(x, dims), keepdim=keepdim),
    "linalg_vector_norm": lambda x, ord, dims, keepdim: torch.linalg.vector_norm(x, ord, _all_dims(x, dims),
                                                                                keepdim),
    "max.dim": lambda x, dim, keepdim: torch.max(x, dim, keepdim),
    "min.dim": lambda x, dim, keepdim: torch.min(x, dim, keepdim),
    "median": lambda x: torch.median(x),
    "median.dim": lambda x, dim, keepdim: torch.median(x, dim, keepdim),
    "kthvalue": lambda x, k, dim, keepdim: torch.kthvalue(x, k, dim, keepdim),
    "cummax": lambda x, dim: torch.cummax(x, dim),
    "cummin": lambda x, dim: torch.cummin(x, dim),
    "sort": lambda x, dim, descending: torch.sort(x, dim=dim, descending=descending, stable=True),
    "topk": lambda x, k, dim, largest, sorted: torch.topk(x, k, dim, largest, sorted),
    "cumsum": lambda x, dim: torch.cumsum(x, dim),
    "cumprod": lambda x, dim: torch.cumprod(x, dim),
    # element-wise math
    "round": lambda x, decimals: torch.round(x, decimals=decimals),
    "nan_to_num": lambda x, nan, posinf, neginf: torch.nan_to_num(x, nan, posinf, neginf),
    "fmod.Scalar": lambda x, other: torch.fmod(x, other),
    "remainder.Scalar": lambda x, other: torch.remainder(x, other),
    "clamp": _clamp,
    "clamp.Tensor": lambda x, lo, hi: torch.clamp(x, lo, hi),
    "lerp.Scalar": lambda x, end, weight: torch.lerp(x, end, weight),
    "lerp.Tensor": torch.lerp,
    "addcmul": lambda x, t1, t2, value: torch.addcmul(x, t1, t2, value=value),
    "addcdiv": lambda x, t1, t2, value: torch.addcdiv(x, t1, t2, value=value),
    # activations
    "leaky_relu": lambda x, negative_slope: F.leaky_relu(x, negative_slope),
    "silu": F.silu, "mish": F.mish, "hardswish": F.hardswish, "hardsigmoid": F.hardsigmoid,
    "softsign": F.softsign, "tanhshrink": F.tanhshrink,
    "softplus": lambda x, beta, threshold: F.softplus(x, beta, threshold),
    "elu": lambda x, alpha, scale, input_scale: torch.ops.aten.elu(x, alpha, scale, input_scale),
    "hardtanh": lambda x, min_val, max_val: F.hardtanh(x, min_val, max_val),
    "gelu.tanh": lambda x: F.gelu(x, approximate="tanh"),
})
UNARY_MATH = ("abs", "sign", "square", "floor", "ceil", "trunc", "frac", "sin", "cos", "tan", "asin", "acos",
              "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "log1p", "expm1", "log2", "log10", "exp2",
              "reciprocal", "rsqrt", "erf", "erfc", "erfinv")
BINARY_MATH = ("minimum", "maximum", "fmin", "fmax", "atan2", "hypot", "copysign", "logaddexp", "fmod", "remainder")
for _op in UNARY_MATH + BINARY_MATH:
    OPS[_op] = getattr(torch, _op)

# -- the matmul family: strided operands, dtypes, empty dims, PyTorch's errors.
case("mm", "[3,5]@[5,2]", [rnd((3, 5)), rnd((5, 2))])
case("mm", "transposed both", [T(rnd((3, 5))), T(rnd((5, 4)))])
case("mm", "stepped mat2, K = 70", [rnd((3, 70)), step2(rnd((70, 5)), 0)])
case("mm", "f64", [rnd((4, 6), f64), rnd((6, 3), f64)])
case("mm", "f16", [rnd((4, 6), f16), rnd((6, 3), f16)])
case("mm", "bf16", [rnd((4, 6), bf16), rnd((6, 3), bf16)])
case("mm", "K = 0", [rnd((3, 0)), rnd((0, 2))])
case("mm", "N = 0", [rnd((3, 4)), rnd((4, 0))])
case("mm", "inner sizes differ", [rnd((3, 4)), rnd((5, 2))], grad=False)
case("mm", "dtypes differ", [rnd((3, 4)), rnd((4, 2), f64)], grad=False)
case("mm", "1-D operand", [rnd((3, 4)), rnd((4,))], grad=False)
case("mm", "i32", [rnd((3, 4), i32, -9, 9), rnd((4, 2), i32, -9, 9)], grad=False,
     known_difference="PyTorch multiplies integer matrices on the CPU; Tritium's products need a float dtype")
case("bmm", "[2,3,4]@[2,4,3]", [rnd((2, 3, 4)), rnd((2, 4, 3))])
case("bmm", "transposed batch2", [rnd((3, 2, 4)), T(rnd((3, 4, 5)))])
case("bmm", "batch-major strides", [T(rnd((2, 3, 5)), (0, 1)), rnd((2, 5, 3))])
case("bmm", "f64", [rnd((2, 3, 5), f64), rnd((2, 5, 2), f64)])
case("bmm", "bf16", [rnd((2, 3, 5), bf16), rnd((2, 5, 2), bf16)])
case("bmm", "empty batch", [rnd((0, 3, 4)), rnd((0, 4, 2))])
case("bmm", "batches differ", [rnd((2, 3, 4)), rnd((3, 4, 2))], grad=False)
case("bmm", "2-D operand", [rnd((3, 4)), rnd((4, 2))], grad=False)
case("mv", "[3,5]@[5]", [rnd((3, 5)), rnd((5,))])
case("mv", "transposed matrix, stepped vector", [T(rnd((4, 5))), step2(rnd((5,)))])
case("mv", "f64", [rnd((4, 9), f64), rnd((9,), f64)])
case("mv", "f16", [rnd((4, 9), f16), rnd((9,), f16)])
case("mv", "K = 0", [rnd((3, 0)), rnd((0,))])
case("mv", "sizes differ", [rnd((3, 4)), rnd((5,))], grad=False)
case("mv", "2-D vector", [rnd((3, 4)), rnd((4, 1))], grad=False)
for op in ("dot", "vdot"):
    case(op, "[7]", [rnd((7,)), rnd((7,))])
    case(op, "stepped and expanded", [step2(rnd((5,))), expanded(rnd((1,)), (5,))])
    case(op, "long 1000", [rnd((1000,)), rnd((1000,))])
    case(op, "f64", [rnd((6,), f64), rnd((6,), f64)])
    case(op, "bf16", [rnd((6,), bf16), rnd((6,), bf16)])
    case(op, "empty", [rnd((0,)), rnd((0,))])
    case(op, "sizes differ", [rnd((3,)), rnd((4,))], grad=False)
    case(op, "2-D operand", [rnd((2, 3)), rnd((6,))], grad=False)
    case(op, "dtypes differ", [rnd((3,)), rnd((3,), f64)], grad=False)
S = lambda beta, alpha: {"beta": Dbl(beta), "alpha": Dbl(alpha)}
case("addmm", "beta 0.5 alpha 2", [rnd((3, 2)), rnd((3, 4)), rnd((4, 2))], S(0.5, 2))
case("addmm", "broadcast self [2], transposed mat1", [rnd((2,)), T(rnd((3, 4))), rnd((4, 2))], S(1, 1))
case("addmm", "self [3,1] f64", [rnd((3, 1), f64), rnd((3, 5), f64), rnd((5, 4), f64)], S(-1, 0.5))
case("addmm", "bf16", [rnd((3, 2), bf16), rnd((3, 6), bf16), rnd((6, 2), bf16)], S(1, 1))
case("addmm", "beta 0 ignores NaN in self", [vals([float("nan"), 1.0, float("inf"), 2.0], f32, (2, 2)),
                                             rnd((2, 3)), rnd((3, 2))], S(0, 1), grad=False)
case("addmm", "K = 0", [rnd((3, 2)), rnd((3, 0)), rnd((0, 2))], S(2, 1))
case("addmm", "self does not broadcast", [rnd((3, 3)), rnd((3, 4)), rnd((4, 2))], S(1, 1), grad=False)
case("addmv", "beta 2 alpha -1", [rnd((3,)), rnd((3, 4)), rnd((4,))], S(2, -1))
case("addmv", "broadcast self, transposed mat", [rnd((1,)), T(rnd((3, 5))), rnd((5,))], S(0.5, 1))
case("addmv", "0-dim self", [rnd(()), rnd((3, 5)), rnd((5,))], S(0.5, 1), grad=False)
case("addmv", "f64", [rnd((4,), f64), rnd((4, 7), f64), rnd((7,), f64)], S(1, 1))
case("addmv", "sizes differ", [rnd((3,)), rnd((3, 4)), rnd((5,))], S(1, 1), grad=False)
case("addr", "beta 0.5 alpha 3", [rnd((3, 4)), rnd((3,)), rnd((4,))], S(0.5, 3))
case("addr", "broadcast self, stepped vec1", [rnd((4,)), step2(rnd((3,))), rnd((4,))], S(1, 1))
case("addr", "f16", [rnd((3, 4), f16), rnd((3,), f16), rnd((4,), f16)], S(1, 1))
case("addr", "2-D vec2", [rnd((3, 4)), rnd((3,)), rnd((4, 1))], S(1, 1), grad=False)
case("baddbmm", "broadcast self, beta 0.5 alpha 2", [rnd((3, 2)), rnd((2, 3, 4)), rnd((2, 4, 2))], S(0.5, 2))
case("baddbmm", "transposed batch1 f64", [rnd((2, 3, 2), f64), T(rnd((2, 3, 5), f64)), rnd((2, 5, 2), f64)], S(1, 1))
case("baddbmm", "bf16", [rnd((2, 3, 2), bf16), rnd((2, 3, 4), bf16), rnd((2, 4, 2), bf16)], S(1, 1))
case("baddbmm", "batches differ", [rnd((2, 3, 2)), rnd((2, 3, 4)), rnd((3, 4, 2))], S(1, 1), grad=False)
case("addbmm", "beta 0.5 alpha 2", [rnd((3, 2)), rnd((2, 3, 4)), rnd((2, 4, 2))], S(0.5, 2))
case("addbmm", "broadcast self, transposed batch2", [rnd((2,)), rnd((3, 3, 4)), T(rnd((3, 4, 2)))], S(1, -1))
case("addbmm", "f64", [rnd((3, 2), f64), rnd((2, 3, 5), f64), rnd((2, 5, 2), f64)], S(1, 1))
case("addbmm", "3-D self", [rnd((2, 3, 2)), rnd((2, 3, 4)), rnd((2, 4, 2))], S(1, 1), grad=False)

# -- var / std: dims, correction, keepdim, layouts, dtypes, degenerate counts.
def VS(dims, correction=1.0, keepdim=False):
    return {"dims": Dims(dims), "correction": Dbl(correction), "keepdim": Bool(keepdim)}


for op in ("var", "std"):
    case(op, "dim 1", [rnd((3, 5))], VS([1]))
    case(op, "all dims", [rnd((3, 4))], VS([]))
    case(op, "dims 0,2 correction 0 keepdim", [rnd((2, 3, 4))], VS([0, 2], 0, True))
    case(op, "dim -1 correction 2.5", [rnd((3, 6))], VS([-1], 2.5))
    case(op, "transposed dim 0", [T(rnd((5, 3)))], VS([0]))
    case(op, "stepped dim 1", [step2(rnd((3, 4)), 1)], VS([1]))
    case(op, "long row 1000, mean 3", [rnd((2, 1000), f32, 2.0, 4.0)], VS([1]))
    case(op, "f64", [rnd((3, 7), f64)], VS([1]))
    case(op, "f16", [rnd((3, 7), f16)], VS([1]))
    case(op, "bf16", [rnd((3, 7), bf16)], VS([0]))
    case(op, "0-dim", [rnd(())], VS([], 0))
    case(op, "one element correction 1 is NaN", [rnd((3, 1))], VS([1]), grad=False)
    case(op, "count below correction is inf", [rnd((2, 2))], VS([1], 3), grad=False)
    case(op, "empty reduced dim", [rnd((2, 0))], VS([1]), grad=False)
    case(op, "empty kept dim", [rnd((0, 3))], VS([1]))
    case(op, "NaN and Inf", [vals(SPECIAL[:3] + [1.0, 2.0, 3.0], f32, (2, 3))], VS([1]), grad=False)
    case(op, "i32 is an error", [rnd((3, 4), i32, -9, 9)], VS([1]), grad=False)
    case(op, "dim out of range", [rnd((2, 3))], VS([2]), grad=False)

# -- prod: zeros (the gradient without division), integer promotion, empty.
case("prod", "[3,4]", [rnd((3, 4), f32, 0.5, 1.5)])
case("prod", "one zero", [vals([0.5, 1.2, 0.0, 0.9, 1.4, 0.7], f32, (2, 3))])
case("prod", "two zeros", [vals([0.5, 0.0, 1.1, 0.9, 0.0, 0.7], f32, (2, 3))])
case("prod", "transposed f64", [T(rnd((4, 3), f64, 0.5, 1.5))])
case("prod", "bf16", [rnd((3, 3), bf16, 0.5, 1.5)])
case("prod", "0-dim", [rnd(())])
case("prod", "empty is 1", [rnd((0, 3))])
case("prod", "NaN", [vals([1.0, float("nan"), 2.0])], grad=False)
case("prod", "i32 -> i64", [rnd((2, 3), i32, -5, 5)], grad=False)
case("prod", "bool -> i64", [rnd((4,), boolean)], grad=False)
PD = lambda d, k=False: {"dim": Int(d), "keepdim": Bool(k)}
case("prod.dim_int", "dim 1", [rnd((3, 5), f32, 0.5, 1.5)], PD(1))
case("prod.dim_int", "zeros, dim -1 keepdim", [vals([0.5, 0.0, 1.1, 0.9, 0.0, 0.0, 1.2, 0.8, 1.3], f32, (3, 3))], PD(-1, True))
case("prod.dim_int", "zeros, dim 0 strided", [T(vals([0.0, 1.5, 0.7, 1.2, 0.0, 0.8], f32, (3, 2)))], PD(0))
case("prod.dim_int", "f16", [rnd((3, 5), f16, 0.5, 1.5)], PD(1))
case("prod.dim_int", "empty reduced dim is 1", [rnd((2, 0))], PD(1))
case("prod.dim_int", "i32 -> i64", [rnd((2, 3), i32, -5, 5)], PD(0), grad=False)
case("prod.dim_int", "dim out of range", [rnd((2, 3))], PD(2), grad=False)

# -- logsumexp: -inf rows, +inf, NaN, integers give f32.
for name, x, dims, keep, grad in [
    ("dim 1", rnd((3, 5), f32, -3, 3), [1], False, True),
    ("dims 0,2 keepdim", rnd((2, 3, 4), f32, -3, 3), [0, 2], True, True),
    ("all dims", rnd((3, 4), f32, -3, 3), [], False, True),
    ("transposed dim 0", T(rnd((5, 3), f32, -3, 3)), [0], False, True),
    ("long row 1100", rnd((1, 1100), f32, -3, 3), [1], False, True),
    ("large values", vals([1000.0, 999.0, -1000.0, 88.0, 89.0, 90.0], f32, (2, 3)), [1], False, True),
    ("f64", rnd((3, 7), f64, -3, 3), [1], False, True),
    ("f16", rnd((3, 7), f16, -3, 3), [1], False, True),
    ("bf16", rnd((3, 7), bf16, -3, 3), [0], False, True),
    ("-inf rows, +inf, NaN", vals([float("-inf")] * 3 + [float("inf"), 1.0, 2.0, float("nan"), 0.0, 1.0], f32, (3, 3)),
     [1], False, False),
    ("empty reduced dim is -inf", rnd((2, 0)), [1], False, False),
    ("i32 -> f32", rnd((2, 3), i32, -5, 5), [1], False, False),
]:
    case("logsumexp", name, [x], {"dims": Dims(dims), "keepdim": Bool(keep)}, grad=grad)

# -- linalg_vector_norm: every kind of order, zero vectors, empty reductions.
INF = float("inf")
VN = lambda ord, dims, keepdim=False: {"ord": Dbl(ord), "dims": Dims(dims), "keepdim": Bool(keepdim)}
for name, x, attrs, grad in [
    ("ord 2 all", rnd((3, 4)), VN(2, []), True),
    ("ord 1 dim 1", away((3, 4)), VN(1, [1]), True),
    ("ord 3 dim 0 keepdim", away((3, 4)), VN(3, [0], True), True),
    ("ord 0.5 dim 1", away((3, 4)), VN(0.5, [1]), True),
    ("ord -1 dim 1", away((3, 4)), VN(-1, [1]), True),
    ("ord inf dim 1", rnd((3, 4)), VN(INF, [1]), True),
    ("ord -inf all", away((3, 4)), VN(-INF, []), True),
    ("ord 0 counts non-zeros", vals([0.0, 1.5, -2.0, 0.0, 0.0, 0.0], f32, (2, 3)), VN(0, [1]), True),
    ("ord 2 zero row", vals([0.0, 0.0, 0.0, 1.0, -2.0, 2.0], f32, (2, 3)), VN(2, [1]), True),
    ("ord 2 strided dims 0,2", step2(rnd((2, 3, 4)), 1), VN(2, [0, 2]), True),
    ("ord 2 long row 1100", rnd((1, 1100)), VN(2, [1]), True),
    ("f64 ord 2.5", away((3, 5), f64), VN(2.5, [1]), True),
    ("f16 ord 2", rnd((3, 6), f16), VN(2, [1]), True),
    ("bf16 ord 1", away((3, 6), bf16), VN(1, [0]), True),
    ("NaN and Inf", vals([float("nan"), 1.0, 2.0, float("inf"), 1.0, -3.0], f32, (2, 3)), VN(2, [1]), False),
    ("ord inf NaN", vals([float("nan"), 1.0, 2.0, float("-inf"), 1.0, -3.0], f32, (2, 3)), VN(INF, [1]), False),
    ("empty ord 2 is 0", rnd((2, 0)), VN(2, [1]), False),
    ("empty ord inf is an error", rnd((2, 0)), VN(INF, [1]), False),
    ("i64 is an error", rnd((2, 3), i64, -5, 5), VN(2, [1]), False),
]:
    case("linalg_vector_norm", name, [x], attrs, grad=grad)

# -- max.dim / min.dim / median / kthvalue: ties (PyTorch returns the first extreme), NaN, dtypes.
TIES = [1.0, 3.0, 3.0, -1.0, 2.0, -1.0, 0.5, 0.5, 0.5]
NAN_ROWS = [1.0, float("nan"), 2.0, float("nan"), 0.5, float("nan"), 4.0, -1.0, 3.0]
for op in ("max.dim", "min.dim"):
    case(op, "dim 1", [rnd((3, 5))], PD(1))
    case(op, "dim 0 keepdim", [rnd((4, 3))], PD(0, True))
    case(op, "transposed dim -1", [T(rnd((5, 3)))], PD(-1))
    case(op, "long row 700", [rnd((2, 700))], PD(1))
    case(op, "ties give the first index", [vals(TIES, f32, (3, 3))], PD(1))
    case(op, "NaN is the extreme", [vals(NAN_ROWS, f32, (3, 3))], PD(1), grad=False)
    case(op, "-inf and inf", [vals([float("-inf"), float("inf"), 0.0, -0.0, float("-inf"), 1.0], f32, (2, 3))], PD(1),
         grad=False)
    case(op, "f64", [rnd((3, 4), f64)], PD(0))
    case(op, "bf16", [rnd((3, 6), bf16)], PD(1))
    case(op, "0-dim", [rnd(())], PD(0))
    case(op, "i32", [rnd((3, 5), i32, -20, 20)], PD(1), grad=False)
    case(op, "bool", [rnd((3, 4), boolean)], PD(1), grad=False)
    case(op, "empty reduced dim", [rnd((2, 0))], PD(1), grad=False)
    case(op, "empty kept dim", [rnd((0, 3))], PD(1))
    case(op, "dim out of range", [rnd((2, 3))], PD(-3), grad=False)

# median(x) of all elements: the lower median; an even count, NaN, empty.
case("median", "odd count", [rnd((3, 5))])
case("median", "even count (lower median)", [rnd((2, 3))])
case("median", "strided f64", [T(rnd((4, 3), f64))])
case("median", "bf16", [rnd((3, 3), bf16)])
case("median", "0-dim", [rnd(())])
case("median", "ties share the gradient", [vals([2.0, 1.0, 2.0, 3.0, 2.0])])
case("median", "NaN", [vals([1.0, float("nan"), 2.0])], grad=False)
case("median", "i32", [rnd((7,), i32, -9, 9)], grad=False)
case("median", "empty is NaN", [rnd((0,))], grad=False)
# Distinct values where PyTorch leaves a tied index unspecified (median.dim, kthvalue, topk).
case("median.dim", "dim 1 odd", [rnd((3, 5))], PD(1))
case("median.dim", "dim 0 even keepdim", [rnd((4, 3))], PD(0, True))
case("median.dim", "transposed dim -1", [T(rnd((5, 3)))], PD(-1))
case("median.dim", "f64", [rnd((3, 6), f64)], PD(1))
case("median.dim", "f16", [rnd((3, 6), f16)], PD(1))
case("median.dim", "NaN rows give NaN", [vals(NAN_ROWS, f32, (3, 3))], PD(1), grad=False)
case("median.dim", "i32 distinct", [vals([5, -3, 9, 0, 2, 7, -8, 4], i32, (2, 4))], PD(1), grad=False)
case("median.dim", "0-dim", [rnd(())], PD(0))
case("median.dim", "empty reduced dim", [rnd((2, 0))], PD(1), grad=False)
case("median.dim", "dim out of range", [rnd((2, 3))], PD(2), grad=False)
K = lambda k, d, keep=False: {"k": I64(k), "dim": Int(d), "keepdim": Bool(keep)}
case("kthvalue", "k 2 dim 1", [rnd((3, 5))], K(2, 1))
case("kthvalue", "k 1 dim 0 keepdim", [rnd((4, 3))], K(1, 0, True))
case("kthvalue", "k = size, transposed", [T(rnd((5, 3)))], K(5, 0))
case("kthvalue", "long row 300", [rnd((2, 300))], K(137, 1))
case("kthvalue", "f64", [rnd((3, 6), f64)], K(4, -1))
case("kthvalue", "NaN is the largest", [vals([1.0, float("nan"), 2.0, 0.5, 3.0, float("nan")], f32, (2, 3))], K(3, 1),
     grad=False)
case("kthvalue", "i64 distinct", [vals([5, -3, 9, 0, 2, 7], i64, (2, 3))], K(2, 1), grad=False)
case("kthvalue", "k 0 is an error", [rnd((2, 3))], K(0, 1), grad=False)
case("kthvalue", "k past the size", [rnd((2, 3))], K(4, 1), grad=False)

# -- cummax / cummin: ties and NaN take the latest index (PyTorch's rule).
for op in ("cummax", "cummin"):
    case(op, "dim 1", [rnd((3, 5))], {"dim": Int(1)})
    case(op, "dim 0", [rnd((4, 3))], {"dim": Int(0)})
    case(op, "transposed dim -1", [T(rnd((5, 3)))], {"dim": Int(-1)})
    case(op, "long row 300", [rnd((2, 300))], {"dim": Int(1)})
    case(op, "ties take the latest index", [vals(TIES, f32, (3, 3))], {"dim": Int(1)})
    case(op, "NaN", [vals(NAN_ROWS, f32, (3, 3))], {"dim": Int(1)}, grad=False)
    case(op, "f64", [rnd((3, 4), f64)], {"dim": Int(1)})
    case(op, "bf16", [rnd((3, 4), bf16)], {"dim": Int(0)})
    case(op, "i32 with ties", [vals([3, 1, 3, 2, 5, 5, 0, 5], i32, (2, 4))], {"dim": Int(1)}, grad=False)
    case(op, "bool", [rnd((2, 5), boolean)], {"dim": Int(1)}, grad=False)
    case(op, "0-dim", [rnd(())], {"dim": Int(0)})
    case(op, "empty", [rnd((0, 3))], {"dim": Int(1)})
    case(op, "dim out of range", [rnd((2, 3))], {"dim": Int(2)}, grad=False)

# -- sort (stable: PyTorch's stable=True order) and topk.
SD = lambda d, desc=False: {"dim": Int(d), "descending": Bool(desc)}
case("sort", "dim -1", [rnd((3, 5))], SD(-1))
case("sort", "dim 0 descending", [rnd((4, 3))], SD(0, True))
case("sort", "transposed dim 1", [T(rnd((5, 3)))], SD(1))
case("sort", "long rows 200 (merged runs)", [rnd((3, 200))], SD(1))
case("sort", "long row descending 150 with ties", [rnd((1, 150), i32, -5, 5)], SD(1, True), grad=False)
case("sort", "ties keep their order", [vals(TIES + [2.0, 2.0, 2.0], f32, (3, 4))], SD(1))
case("sort", "ties descending keep their order", [vals(TIES + [2.0, 2.0, 2.0], f32, (3, 4))], SD(1, True))
case("sort", "NaN, Inf and signed zeros", [vals(SPECIAL + [float("nan"), 0.0], f32, (2, 6))], SD(1), grad=False)
case("sort", "NaN first when descending", [vals(SPECIAL + [float("nan"), 0.0], f32, (2, 6))], SD(1, True), grad=False)
case("sort", "f64", [rnd((3, 6), f64)], SD(1))
case("sort", "f16", [rnd((3, 6), f16)], SD(1))
case("sort", "bf16 with ties", [rnd((3, 9), bf16, -2, 2)], SD(1))
case("sort", "i32 with ties", [rnd((3, 8), i32, -3, 3)], SD(1), grad=False)
case("sort", "i64 descending", [rnd((2, 7), i64, -9, 9)], SD(1, True), grad=False)
case("sort", "bool", [rnd((2, 6), boolean)], SD(1), grad=False)
case("sort", "0-dim", [rnd(())], SD(0))
case("sort", "empty", [rnd((2, 0))], SD(1))
case("sort", "dim out of range", [rnd((2, 3))], SD(2), grad=False)
TK = lambda k, d=-1, largest=True, srt=True: {"k": I64(k), "dim": Int(d), "largest": Bool(largest), "sorted": Bool(srt)}
case("topk", "k 2 largest", [rnd((3, 5))], TK(2))
case("topk", "k 3 smallest dim 0", [rnd((4, 3))], TK(3, 0, False))
case("topk", "transposed", [T(rnd((6, 3)))], TK(4, 0))
case("topk", "long row 300", [rnd((2, 300))], TK(10, 1))
case("topk", "k = size", [rnd((2, 4))], TK(4))
case("topk", "k 0", [rnd((2, 4))], TK(0))
case("topk", "NaN is the largest", [vals([1.0, float("nan"), 2.0, 0.5, 3.0, -1.0], f32, (2, 3))], TK(2), grad=False)
case("topk", "f64 smallest", [rnd((3, 6), f64)], TK(2, 1, False))
case("topk", "bf16", [rnd((3, 6), bf16)], TK(3))
case("topk", "i32 distinct", [vals([5, -3, 9, 0, 2, 7, -8, 4], i32, (2, 4))], TK(2), grad=False)
case("topk", "k past the size", [rnd((2, 4))], TK(5), grad=False)

# -- cumsum / cumprod: integer promotion, long rows, zeros in cumprod's gradient.
for op in ("cumsum", "cumprod"):
    lo, hi = (-1.0, 1.0) if op == "cumsum" else (0.8, 1.2)
    case(op, "dim 1", [rnd((3, 5), f32, lo, hi)], {"dim": Int(1)})
    case(op, "dim 0", [rnd((4, 3), f32, lo, hi)], {"dim": Int(0)})
    case(op, "transposed dim -1", [T(rnd((5, 3), f32, lo, hi))], {"dim": Int(-1)})
    case(op, "stepped dim 0 of 3-D", [step2(rnd((3, 2, 4), f32, lo, hi), 0)], {"dim": Int(0)})
    case(op, "long row 1100", [rnd((1, 1100), f32, lo, hi)], {"dim": Int(1)},
         tol=(1e-5, 1e-5), why="a 1100-long f32 scan: PyTorch's sequential sum and Tritium's blocked scan round apart")
    case(op, "f64", [rnd((3, 7), f64, lo, hi)], {"dim": Int(1)})
    if op == "cumprod":
        case(op, "f16", [rnd((3, 7), f16, lo, hi)], {"dim": Int(1)}, tol=(2e-3, 1e-5),
             why="cumprod's f16 gradient (a reverse scan of products) differs from PyTorch's by an ulp either side "
                 "of the float64 answer")
    else:
        case(op, "f16", [rnd((3, 7), f16, lo, hi)], {"dim": Int(1)})
    case(op, "bf16", [rnd((3, 7), bf16, lo, hi)], {"dim": Int(0)})
    case(op, "NaN and Inf", [vals(SPECIAL, f32, (2, 5))], {"dim": Int(1)}, grad=False)
    case(op, "i32 -> i64", [rnd((2, 5), i32, -5, 5)], {"dim": Int(1)}, grad=False)
    case(op, "bool -> i64", [rnd((2, 5), boolean)], {"dim": Int(1)}, grad=False)
    case(op, "0-dim", [rnd(())], {"dim": Int(0)})
    case(op, "empty", [rnd((0, 3))], {"dim": Int(1)})
    case(op, "dim out of range", [rnd((2, 3))], {"dim": Int(2)}, grad=False)
case("cumprod", "zeros in rows", [vals([0.5, 0.0, 1.1, 0.9, 1.2, 0.0, 0.0, 1.3, 0.7, 1.5, 0.8, 0.0], f32, (3, 4))],
     {"dim": Int(1)})

# -- element-wise math, one input: dtypes, layouts, special values, integer and bool inputs.
UNARY_MATH_DOMAIN = {"asin": (-0.9, 0.9), "acos": (-0.9, 0.9), "atanh": (-0.9, 0.9), "erfinv": (-0.9, 0.9),
                     "acosh": (1.2, 3.0), "log1p": (-0.5, 2.0), "log2": (0.1, 3.0), "log10": (0.1, 3.0),
                     "rsqrt": (0.1, 3.0), "floor": (-3.0, 3.0), "ceil": (-3.0, 3.0), "trunc": (-3.0, 3.0),
                     "frac": (-3.0, 3.0), "tan": (-1.2, 1.2)}
UNARY_AWAY = {"abs": (0.1, 2.0), "sign": (0.1, 2.0), "reciprocal": (0.2, 2.0)}
ROUNDING = ("floor", "ceil", "trunc", "round", "frac")
SPECIAL_MATH = SPECIAL + [1.0, -1.0, 0.5, 2.5, -1.5, 1e-30, 80.0, -80.0, 100.0]
for op in UNARY_MATH + ("round",):
    if op in UNARY_AWAY:
        lo, hi = UNARY_AWAY[op]
        make = (lambda s, d=f32, lo=lo, hi=hi: away(s, d, lo, hi))
    else:
        lo, hi = UNARY_MATH_DOMAIN.get(op, (-2.0, 2.0))
        make = (lambda s, d=f32, lo=lo, hi=hi: rnd(s, d, lo, hi))
    attrs = {"decimals": Int(0)} if op == "round" else None
    case(op, "f32 [3,5]", [make((3, 5))], attrs)
    case(op, "f64", [make((3, 4), f64)], attrs)
    case(op, "f16", [make((3, 4), f16)], attrs)
    case(op, "bf16", [make((3, 4), bf16)], attrs)
    case(op, "transposed", [T(make((5, 3)))], attrs)
    case(op, "stepped", [step2(make((2, 5)))], attrs)
    case(op, "0-dim", [make(())], attrs)
    case(op, "empty", [make((0, 4))], attrs)
    case(op, "NaN, Inf, signed zeros, edges", [vals(SPECIAL_MATH)], attrs, grad=False)
    case(op, "f64 NaN, Inf, signed zeros, edges", [vals(SPECIAL_MATH, f64)], attrs, grad=False)
    if op == "round":
        case(op, "i32", [rnd((6,), i32, -3, 3)], attrs, grad=False,
             known_difference="Tritium's round of an integer tensor is a copy, as floor / ceil / trunc; PyTorch's "
                              "CPU round refuses integers (\"round_vml_cpu\" not implemented for 'Int')")
    else:
        case(op, "i32", [rnd((6,), i32, -3, 3)], attrs, grad=False)
    case(op, "bool", [rnd((6,), boolean)], attrs, grad=False)
case("round", "half to even", [vals([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, 1e8 + 0.5])], {"decimals": Int(0)}, grad=False)
case("round", "decimals 2", [rnd((3, 4), f32, -50, 50)], {"decimals": Int(2)})
case("round", "decimals -1 f64", [rnd((3, 4), f64, -500, 500)], {"decimals": Int(-1)})
case("round", "decimals 3 i32 is an error", [rnd((4,), i32, -9, 9)], {"decimals": Int(3)}, grad=False)
for name, x, nan, posinf, neginf, grad in [
    ("defaults", vals(SPECIAL), None, None, None, True),
    ("given values", vals(SPECIAL), 1.5, 100.0, -100.0, True),
    ("f64 defaults", vals(SPECIAL, f64), None, None, None, False),
    ("f16 defaults", vals(SPECIAL, f16), None, None, None, False),
    ("bf16 given", vals(SPECIAL, bf16), -1.0, 7.0, None, False),
    ("strided", T(rnd((4, 3))), None, 1.0, None, True),
    ("i32 unchanged", rnd((5,), i32, -9, 9), None, None, None, False),
    ("empty", rnd((0, 2)), None, None, None, True),
]:
    case("nan_to_num", name, [x], {"nan": OptDbl(nan), "posinf": OptDbl(posinf), "neginf": OptDbl(neginf)}, grad=grad)

# -- element-wise math, two inputs: broadcasting, promotion, special values, ties.
PAIRS_A = [float("nan"), 1.0, float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 2.0, -3.0, 5.5, 1.0, -1.0]
PAIRS_B = [1.0, float("nan"), float("nan"), -float("inf"), 2.0, -0.0, 0.0, 2.0, 2.0, -2.0, float("inf"), 0.0]
BINARY_OTHER = {"fmod": (0.5, 2.0), "remainder": (0.5, 2.0)}
for op in BINARY_MATH:
    other = ((lambda s, d=f32: away(s, d, 0.5, 2.0)) if op in BINARY_OTHER else (lambda s, d=f32: rnd(s, d)))
    first = (lambda s, d=f32: rnd(s, d, -3, 3)) if op in BINARY_OTHER else (lambda s, d=f32: away(s, d, 0.1, 1.0))
    case(op, "same shape f32", [first((3, 5)), other((3, 5))])
    case(op, "broadcast [3,1] [1,4]", [first((3, 1)), other((1, 4))])
    case(op, "0-dim other", [first((2, 3)), other(())])
    case(op, "transposed self, expanded other", [T(first((3, 4))), expanded(other((3, 1)), (3, 4))])
    case(op, "f64", [first((3, 4), f64), other((3, 4), f64)])
    case(op, "f16", [first((3, 4), f16), other((3, 4), f16)])
    case(op, "bf16", [first((3, 4), bf16), other((3, 4), bf16)])
    case(op, "f32 with f64 0-dim -> f32", [first((3, 4)), other((), f64)], tol=(1.3e-6, 1e-5),
         why="the f64 operand's gradient is summed in f32 (the result's dtype), then widened")
    case(op, "i32 with f32", [rnd((3, 4), i32, -5, 5), other((3, 4))], grad=False)
    case(op, "i32 with i64", [rnd((2, 5), i32, -20, 20), vals([3, -4, 7, 1, -2], i64)], grad=False)
    case(op, "bool with bool", [rnd((6,), boolean), rnd((6,), boolean)], grad=False)
    case(op, "empty", [first((0, 3)), other((1, 3))])
    case(op, "NaN, Inf and signed zeros", [vals(PAIRS_A), vals(PAIRS_B)], grad=False)
    case(op, "shapes do not broadcast", [first((2, 3)), other((4,))], grad=False)
for op in ("minimum", "maximum", "fmin", "fmax"):
    case(op, "ties share the gradient", [vals([1.0, 2.0, -1.0, 0.5, 3.0, 3.0]), vals([1.0, 1.0, -1.0, 0.7, 3.0, 2.0])])
case("fmod", "i32 by zero", [vals([5, -5, 7], i32), vals([0, 2, 3], i32)], grad=False,
     known_difference="PyTorch raises ZeroDivisionError for an integer fmod by zero on the CPU; Tritium gives 0")
case("remainder", "i32 by zero", [vals([5, -5, 7], i32), vals([0, 2, 3], i32)], grad=False,
     known_difference="PyTorch raises ZeroDivisionError for an integer remainder by zero on the CPU; Tritium gives 0")
case("remainder", "signs follow the divisor", [vals([5.0, -5.0, 5.0, -5.0, 7.5]), vals([3.0, 3.0, -3.0, -3.0, 2.0])])
case("fmod", "signs follow the dividend", [vals([5.0, -5.0, 5.0, -5.0, 7.5]), vals([3.0, 3.0, -3.0, -3.0, 2.0])])
for op in ("fmod.Scalar", "remainder.Scalar"):
    case(op, "f32 and 1.3", [rnd((3, 4), f32, -3, 3)], {"other": Scal(1.3)})
    case(op, "f32 and -0.7 strided", [T(rnd((4, 3), f32, -3, 3))], {"other": Scal(-0.7)})
    case(op, "f64 and 2", [rnd((3, 4), f64, -5, 5)], {"other": Scal(2)})
    case(op, "bf16 and 0.5", [rnd((3, 4), bf16, -3, 3)], {"other": Scal(0.5)})
    case(op, "i32 and 3", [rnd((6,), i32, -9, 9)], {"other": Scal(3)}, grad=False)
    case(op, "i32 and 2.5 -> f32", [rnd((6,), i32, -9, 9)], {"other": Scal(2.5)}, grad=False)
    case(op, "NaN, Inf and by inf", [vals(SPECIAL)], {"other": Scal(float("inf"))}, grad=False)
    case(op, "by zero", [vals([1.0, -1.0, 0.0, 2.5])], {"other": Scal(0.0)}, grad=False)
    case(op, "empty", [rnd((0, 2))], {"other": Scal(2.0)})

# -- clamp (numbers or tensors), lerp, addcmul, addcdiv.
CL = lambda lo, hi: {"has_min": Bool(lo is not None), "has_max": Bool(hi is not None),
                     "min": Scal(0 if lo is None else lo), "max": Scal(0 if hi is None else hi)}
case("clamp", "min and max", [rnd((3, 5))], CL(-0.45, 0.55))
case("clamp", "min only, transposed", [T(rnd((4, 3)))], CL(-0.2, None))
case("clamp", "max only", [rnd((3, 4))], CL(None, 0.1))
case("clamp", "min above max gives max", [rnd((3, 4))], CL(0.5, -0.5))
case("clamp", "f64", [rnd((3, 4), f64)], CL(-0.3, 0.3))
case("clamp", "bf16", [rnd((3, 4), bf16)], CL(-0.3, 0.3))
case("clamp", "NaN passes, inf clamps", [vals(SPECIAL)], CL(-1.0, 1.0), grad=False)
case("clamp", "NaN bound", [rnd((5,))], CL(float("nan"), 1.0), grad=False)
case("clamp", "i32 integer bounds", [rnd((8,), i32, -9, 9)], CL(-3, 4), grad=False)
case("clamp", "i32 float bound -> f32", [rnd((8,), i32, -9, 9)], CL(-2.5, None), grad=False)
case("clamp", "empty", [rnd((0, 3))], CL(-0.5, 0.5))
case("clamp", "no bound", [rnd((3,))], CL(None, None), grad=False)
case("clamp.Tensor", "min and max tensors broadcast", [rnd((3, 4)), rnd((3, 1), f32, -0.6, -0.2), rnd((4,), f32, 0.2, 0.6)])
case("clamp.Tensor", "min tensor only", [rnd((3, 4)), T(rnd((3, 4))), NONE])
case("clamp.Tensor", "max tensor only f64", [rnd((3, 4), f64), NONE, rnd((3, 4), f64)])
case("clamp.Tensor", "min above max", [rnd((2, 3)), rnd((2, 3), f32, 0.3, 0.6), rnd((2, 3), f32, -0.6, -0.3)])
case("clamp.Tensor", "NaN in a bound", [rnd((4,)), vals([float("nan"), -0.5, -0.5, float("nan")]), vals([0.5, float("nan"), 0.5, 0.5])],
     grad=False)
case("clamp.Tensor", "i32 with f32 bound", [rnd((5,), i32, -9, 9), rnd((5,), f32, -3, 3), NONE], grad=False)
case("clamp.Tensor", "no bound", [rnd((3,)), NONE, NONE], grad=False)
case("clamp.Tensor", "bound does not broadcast", [rnd((3, 4)), rnd((3,)), NONE], grad=False)
case("lerp.Scalar", "w 0.3", [rnd((3, 4)), rnd((3, 4))], {"weight": Scal(0.3)})
case("lerp.Scalar", "w 0.8 broadcast strided", [T(rnd((3, 4))), rnd((4,))], {"weight": Scal(0.8)})
case("lerp.Scalar", "w 0 and w 1 exact f64", [rnd((5,), f64), rnd((5,), f64)], {"weight": Scal(1)})
case("lerp.Scalar", "w 1.5 extrapolates, bf16", [rnd((3, 4), bf16), rnd((3, 4), bf16)], {"weight": Scal(1.5)})
case("lerp.Scalar", "inf end", [rnd((3,)), vals([float("inf"), -1.0, float("nan")])], {"weight": Scal(0.5)}, grad=False)
case("lerp.Scalar", "dtypes differ", [rnd((3,)), rnd((3,), f64)], {"weight": Scal(0.5)}, grad=False)
case("lerp.Scalar", "i32 is an error", [rnd((3,), i32, 0, 5), rnd((3,), i32, 0, 5)], {"weight": Scal(0.5)}, grad=False)
case("lerp.Tensor", "[3,4] x3", [rnd((3, 4)), rnd((3, 4)), rnd((3, 4), f32, 0, 1)])
case("lerp.Tensor", "broadcast, 0-dim weight", [rnd((3, 1)), rnd((4,)), rnd((), f32, 0, 1)])
case("lerp.Tensor", "strided weight above 0.5", [rnd((4, 3)), rnd((4, 3)), T(rnd((4, 3), f32, 0.5, 1.0))])
case("lerp.Tensor", "f64", [rnd((3, 4), f64), rnd((3, 4), f64), rnd((3, 4), f64, 0, 1)])
case("lerp.Tensor", "f16", [rnd((3, 4), f16), rnd((3, 4), f16), rnd((3, 4), f16, 0, 1)])
case("lerp.Tensor", "dtypes differ", [rnd((3,)), rnd((3,)), rnd((3,), f64)], grad=False)
for op, lo3, hi3 in (("addcmul", 0.2, 1.0), ("addcdiv", 0.5, 1.5)):
    case(op, "[2,3] x3 value 0.7", [rnd((2, 3)), rnd((2, 3)), away((2, 3), f32, lo3, hi3)], {"value": Scal(0.7)})
    case(op, "broadcast value -1.5", [rnd((3, 1)), rnd((4,)), away((3, 4), f32, lo3, hi3)], {"value": Scal(-1.5)})
    case(op, "strided value 1", [T(rnd((3, 4))), rnd((3, 4)), T(away((3, 4), f32, lo3, hi3))], {"value": Scal(1)})
    case(op, "f64", [rnd((3, 4), f64), rnd((3, 4), f64), away((3, 4), f64, lo3, hi3)], {"value": Scal(2.0)})
    case(op, "bf16", [rnd((3, 4), bf16), rnd((3, 4), bf16), away((3, 4), bf16, lo3, hi3)], {"value": Scal(0.5)})
    case(op, "f32 with f64 0-dim", [rnd((3,)), rnd((3,)), away((), f64, lo3, hi3)], {"value": Scal(1.0)})
    case(op, "i32", [rnd((5,), i32, -5, 5), rnd((5,), i32, -5, 5), vals([1, 2, -3, 4, -1], i32)], {"value": Scal(2)},
         grad=False)
    case(op, "NaN and Inf", [vals([1.0, float("nan"), 2.0, 0.0]), vals([float("inf"), 1.0, 0.0, 1.0]),
                             vals([2.0, 1.0, 0.0, 0.0])], {"value": Scal(1.0)}, grad=False)
    case(op, "empty", [rnd((0, 3)), rnd((3,)), away((1, 3), f32, lo3, hi3)], {"value": Scal(1.0)})
    case(op, "shapes do not broadcast", [rnd((2, 3)), rnd((4,)), rnd((2, 3))], {"value": Scal(1.0)}, grad=False)

# -- activations: parameters on both sides of their kinks, layouts, dtypes, special values.
ACTIVATIONS = [
    ("leaky_relu", {"negative_slope": Dbl(0.2)}, True), ("silu", {}, False), ("mish", {}, False),
    ("softplus", {"beta": Dbl(2.0), "threshold": Dbl(1.0)}, False),
    ("elu", {"alpha": Dbl(1.3), "scale": Dbl(1.1), "input_scale": Dbl(0.7)}, True),
    ("hardswish", {}, False), ("hardsigmoid", {}, False),
    ("hardtanh", {"min_val": Dbl(-0.55), "max_val": Dbl(0.45)}, False),
    ("softsign", {}, True), ("tanhshrink", {}, False), ("gelu.tanh", {}, False),
]
ACT_SPECIAL = SPECIAL + [-3.0, 3.0, 1.0, -1.0, 20.0, -20.0, 100.0, -100.0, 0.45, -0.55]
for op, attrs, kink_at_zero in ACTIVATIONS:
    wide = op in ("hardswish", "hardsigmoid")
    make = ((lambda s, d=f32: away(s, d, 0.1, 2.0)) if kink_at_zero else
            (lambda s, d=f32, w=wide: rnd(s, d, -5.0, 5.0) if w else rnd(s, d, -3.0, 3.0)))
    case(op, "f32 [3,5]", [make((3, 5))], attrs)
    case(op, "f64", [make((3, 4), f64)], attrs)
    if op == "softsign":
        case(op, "f16", [make((3, 4), f16)], attrs, tol=(2e-3, 1e-5),
             why="the f16 gradient is grad / (1 + |x|)^2 in three f16 ops (as PyTorch's composition), each rounding")
    else:
        case(op, "f16", [make((3, 4), f16)], attrs)
    case(op, "bf16", [make((3, 4), bf16)], attrs)
    case(op, "transposed", [T(make((5, 3)))], attrs)
    case(op, "stepped", [step2(make((2, 5)))], attrs)
    case(op, "0-dim", [make(())], attrs)
    case(op, "empty", [make((0, 4))], attrs)
    case(op, "NaN, Inf, signed zeros, edges", [vals(ACT_SPECIAL)], attrs, grad=False)
    if op in ("hardtanh", "softsign", "tanhshrink"):  # PyTorch's are a clamp or compositions
        case(op, "i32", [rnd((6,), i32, -3, 3)], attrs, grad=False)
        case(op, "bool is an error", [rnd((6,), boolean)], attrs, grad=False)
    else:
        case(op, "i32 is an error", [rnd((6,), i32, -3, 3)], attrs, grad=False)
case("hardtanh", "i8 with fractional bounds", [rnd((7,), i8, -4, 4)], {"min_val": Dbl(-1.5), "max_val": Dbl(2.5)},
     grad=False)
case("leaky_relu", "negative slope 1.5", [away((3, 4), f32, 0.1, 2.0)], {"negative_slope": Dbl(1.5)})
case("softplus", "beta 1 threshold 20 (defaults)", [rnd((3, 4), f32, -25, 25)], {"beta": Dbl(1.0), "threshold": Dbl(20.0)})
case("softplus", "beta -2", [rnd((3, 4), f32, -2, 2)], {"beta": Dbl(-2.0), "threshold": Dbl(20.0)})
case("elu", "selu's constants", [away((3, 4), f32, 0.1, 2.0)],
     {"alpha": Dbl(1.6732632423543772), "scale": Dbl(1.0507009873554805), "input_scale": Dbl(1.0)})
case("elu", "celu alpha 0.5", [away((3, 4), f32, 0.1, 2.0)], {"alpha": Dbl(0.5), "scale": Dbl(1.0), "input_scale": Dbl(2.0)})
case("hardtanh", "relu6 bounds", [rnd((3, 5), f32, -2, 8)], {"min_val": Dbl(0.0), "max_val": Dbl(6.0)})
case("hardtanh", "min above max", [rnd((4,))], {"min_val": Dbl(1.0), "max_val": Dbl(-1.0)}, grad=False)


# -- einsum and unique: PyTorch functions that are not registry ops (einsum is lowered to registry
# ops, unique has no gradient); tests/test_torch_parity.cpp calls them through
# functions_outside_the_registry().
OPS["einsum"] = lambda *ts, equation: torch.einsum(equation, *ts)
OPS["unique"] = lambda x, sorted, return_inverse, return_counts: torch.unique(
    x, sorted=sorted, return_inverse=return_inverse, return_counts=return_counts)
EQ = lambda e: {"equation": Str(e)}
case("einsum", "ij,jk->ik", [rnd((3, 5)), rnd((5, 2))], EQ("ij,jk->ik"))
case("einsum", "implicit output ij,jk", [rnd((3, 5)), T(rnd((5, 4)))], EQ("ij,jk"))
case("einsum", "batched bij,bjk->bik", [rnd((2, 3, 4)), rnd((2, 4, 5))], EQ("bij,bjk->bik"))
case("einsum", "ji->ij is a permute", [rnd((3, 4))], EQ("ji->ij"))
case("einsum", "ii->i diagonal", [rnd((4, 4))], EQ("ii->i"))
case("einsum", "ii trace", [rnd((3, 3))], EQ("ii"))
case("einsum", "ij-> sum", [step2(rnd((3, 4)))], EQ("ij->"))
case("einsum", "i,j->ij outer", [rnd((3,)), rnd((4,))], EQ("i,j->ij"))
case("einsum", "bn,anm,bm->ba bilinear", [rnd((2, 3)), rnd((4, 3, 5)), rnd((2, 5))], EQ("bn,anm,bm->ba"))
case("einsum", "three operands ij,jk,kl->il", [rnd((3, 4)), rnd((4, 6)), rnd((6, 2))], EQ("ij,jk,kl->il"))
case("einsum", "ellipsis broadcast ...ij,...jk", [rnd((2, 1, 3, 4)), rnd((3, 4, 2))], EQ("...ij,...jk->...ik"))
case("einsum", "size-1 dim broadcasts", [rnd((3, 1)), rnd((4, 5))], EQ("ij,jk->ik"))
case("einsum", "upper-case subscripts", [rnd((2, 3)), rnd((3, 2))], EQ("Ab,bC->AC"))
case("einsum", "f64", [rnd((3, 4), f64), rnd((4, 2), f64)], EQ("ij,jk->ik"))
case("einsum", "bf16", [rnd((3, 4), bf16), rnd((4, 2), bf16)], EQ("ij,jk->ik"))
case("einsum", "empty dim", [rnd((3, 0)), rnd((0, 2))], EQ("ij,jk->ik"))
case("einsum", "sizes differ", [rnd((3, 4)), rnd((3, 2))], EQ("ij,jk->ik"), grad=False)
case("einsum", "too few operands", [rnd((3, 4))], EQ("ij,jk->ik"), grad=False)
case("einsum", "bad subscript", [rnd((3, 4))], EQ("i1->i"), grad=False)
case("einsum", "output subscript not in the inputs", [rnd((3, 4))], EQ("ij->k"), grad=False)
U = lambda srt=True, inv=False, cnt=False: {"sorted": Bool(srt), "return_inverse": Bool(inv),
                                             "return_counts": Bool(cnt)}
case("unique", "f32 repeats", [vals([3.0, 1.0, 2.0, 1.0, 3.0, -1.0, 2.0])], U(), grad=False)
case("unique", "inverse and counts of a 2-D", [rnd((3, 4), i64, -3, 3)], U(True, True, True), grad=False)
case("unique", "counts only, strided", [T(rnd((4, 3), i32, 0, 4))], U(True, False, True), grad=False)
case("unique", "NaN each its own, signed zeros", [vals([3.0, 1.0, float("nan"), 1.0, 2.0, float("nan"), 0.0, 0.0])],
     U(True, True, True), grad=False)
case("unique", "bool", [rnd((7,), boolean)], U(True, True, True), grad=False)
case("unique", "f16", [vals([0.5, 0.25, 0.5, -1.0], f16)], U(True, True), grad=False)
case("unique", "sorted=False on integers", [vals([3, 1, 2, 1], i64)], U(False), grad=False)
case("unique", "empty", [rnd((0,))], U(True, True, True), grad=False)


# ---- issue 30 item 1 (wt-conv): conv1d / conv2d / conv_transpose2d --------------------------------------
def CL(maker):
    """The tensor stored channels-last (NHWC strides: torch.channels_last)."""
    def make(g):
        return maker(g).contiguous(memory_format=torch.channels_last)
    return make


def CONV(stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1):
    pad = Str(padding) if isinstance(padding, str) else Dims(padding)
    return {"stride": Dims(stride), "padding": pad, "dilation": Dims(dilation), "groups": Int(groups)}


def CONVT(stride=(1, 1), padding=(0, 0), output_padding=(0, 0), groups=1, dilation=(1, 1)):
    return {"stride": Dims(stride), "padding": Dims(padding), "output_padding": Dims(output_padding),
            "groups": Int(groups), "dilation": Dims(dilation)}


case("conv2d", "3->5 k3 bias", [rnd((2, 3, 7, 6)), rnd((5, 3, 3, 3)), rnd((5,))], CONV())
case("conv2d", "stride 2 padding 1 groups 2", [rnd((2, 4, 9, 8)), rnd((6, 2, 3, 2)), NONE], CONV((2, 2), (1, 1), groups=2))
case("conv2d", "depthwise same dilation 2", [rnd((1, 6, 8, 7)), rnd((6, 1, 3, 3)), rnd((6,))], CONV(padding="same", dilation=(2, 2), groups=6))
case("conv2d", "even kernel same", [rnd((1, 3, 5, 6)), rnd((4, 3, 2, 4)), NONE], CONV(padding="same"))
case("conv2d", "valid 17 channels channels-last", [CL(rnd((1, 17, 6, 5))), rnd((5, 17, 3, 3)), rnd((5,))], CONV((2, 1), "valid"))
case("conv2d", "f64", [rnd((2, 3, 5, 5), f64), rnd((4, 3, 3, 3), f64), rnd((4,), f64)], CONV((2, 2), (1, 1), (2, 2)))
case("conv2d", "f16 channels-last", [CL(rnd((1, 16, 5, 5), f16)), rnd((4, 16, 3, 3), f16), rnd((4,), f16)], CONV(padding=(1, 1)))
case("conv2d", "bf16", [rnd((1, 16, 5, 5), bf16), rnd((4, 16, 3, 3), bf16), NONE], CONV(padding=(1, 1)))
case("conv2d", "channel mismatch", [rnd((2, 4, 5, 5)), rnd((6, 2, 3, 3)), NONE], CONV(), grad=False)
case("conv2d", "kernel larger than the padded input", [rnd((2, 4, 5, 5)), rnd((6, 4, 7, 7)), NONE], CONV(), grad=False)
case("conv2d", "same with stride 2", [rnd((2, 4, 5, 5)), rnd((6, 4, 3, 3)), NONE], CONV((2, 2), "same"), grad=False)
case("conv2d", "3-D weight", [rnd((2, 4, 5, 5)), rnd((6, 4, 3)), NONE], CONV(), grad=False)
case("conv1d", "3->4 k3 stride 2 padding 1", [rnd((2, 3, 11)), rnd((4, 3, 3)), rnd((4,))], CONV((2,), (1,), (1,)))
case("conv1d", "same dilation 2 groups 2", [rnd((2, 4, 9)), rnd((6, 2, 4)), NONE], CONV((1,), "same", (2,), 2))
case("conv1d", "kernel larger than the input", [rnd((2, 4, 5)), rnd((6, 4, 7)), NONE], CONV((1,), (0,), (1,)), grad=False)
case("conv_transpose2d", "stride 2 output_padding 1 groups 2", [rnd((2, 4, 4, 5)), rnd((4, 3, 3, 3)), rnd((6,))], CONVT((2, 2), (1, 1), (1, 1), 2))
case("conv_transpose2d", "dilation channels-last", [CL(rnd((1, 17, 3, 3))), rnd((17, 3, 2, 3)), NONE], CONVT((1, 2), (0, 1), (0, 1), 1, (2, 1)))
case("conv_transpose2d", "f64 stride 3", [rnd((2, 3, 4, 3), f64), rnd((3, 2, 3, 3), f64), rnd((2,), f64)], CONVT((3, 3), (2, 2)))
case("conv_transpose2d", "output padding too large", [rnd((2, 4, 5, 5)), rnd((4, 3, 3, 3)), NONE], CONVT(output_padding=(1, 1)), grad=False)


# ---- issue 30 item 1: pooling, interpolate, embedding (ops/decl/pool.cpp) ------------------------
# Window attributes as the registry takes them: lists of one value or one per dim, [] for
# stride = kernel_size; divisor_override 0 for None; interpolate's scale_factor (every dim) and
# scale_factor_w (the last dim's, when it differs); embedding's padding_idx -1 for None.

def _interp(x, mode, size, scale_factor, scale_factor_w, align_corners):
    sf = None if scale_factor is None else scale_factor if scale_factor_w is None else (scale_factor, scale_factor_w)
    return F.interpolate(x, size=size or None, scale_factor=sf, mode=mode,
                         align_corners=align_corners if mode == "bilinear" else None)


OPS.update({
    "max_pool2d": lambda x, kernel_size, stride, padding, dilation, ceil_mode: F.max_pool2d(
        x, kernel_size, stride or None, padding, dilation, ceil_mode, return_indices=True),
    "max_pool1d": lambda x, kernel_size, stride, padding, dilation, ceil_mode: F.max_pool1d(
        x, kernel_size, stride or None, padding, dilation, ceil_mode, return_indices=True),
    "avg_pool2d": lambda x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override: F.avg_pool2d(
        x, kernel_size, stride or None, padding, ceil_mode, count_include_pad, divisor_override or None),
    "avg_pool1d": lambda x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override: F.avg_pool1d(
        x, kernel_size, stride or None, padding, ceil_mode, count_include_pad),
    "adaptive_avg_pool2d": lambda x, output_size: F.adaptive_avg_pool2d(
        x, [None if s == -1 else s for s in output_size]),
    "interpolate": _interp,
    "embedding": lambda w, i, padding_idx: F.embedding(i, w, None if padding_idx < 0 else padding_idx),
})


def channels_last(maker):
    """maker's [N, C, H, W] tensor with channels-last strides."""
    def make(g):
        return maker(g).contiguous(memory_format=torch.channels_last)
    return make


MAXP = lambda k, s=(), p=(0,), d=(1,), ceil=False: {"kernel_size": Dims(k), "stride": Dims(s), "padding": Dims(p),
                                                    "dilation": Dims(d), "ceil_mode": Bool(ceil)}
AVGP = lambda k, s=(), p=(0,), ceil=False, count_pad=True, div=0: {
    "kernel_size": Dims(k), "stride": Dims(s), "padding": Dims(p), "ceil_mode": Bool(ceil),
    "count_include_pad": Bool(count_pad), "divisor_override": Int(div)}
case("max_pool2d", "k3 s2 p1", [rnd((2, 3, 9, 11), f32, -2, 2)], MAXP([3], [2], [1]))
case("max_pool2d", "k(2,3) s(1,2) d2 ceil", [rnd((2, 2, 9, 10), f32, -2, 2)], MAXP([2, 3], [1, 2], [1], [2], True))
case("max_pool2d", "channels_last", [channels_last(rnd((2, 5, 7, 6), f32, -2, 2))], MAXP([2], [], [1], [1], True))
case("max_pool2d", "unbatched strided", [T(rnd((3, 6, 7), f32, -2, 2))], MAXP([3, 2], [2, 1]))
case("max_pool2d", "f64", [rnd((1, 2, 6, 5), f64, -2, 2)], MAXP([3], [1], [1]))
case("max_pool2d", "bf16", [rnd((1, 2, 6, 5), bf16, -2, 2)], MAXP([2]))
case("max_pool2d", "ties nan -inf", [vals([1.0, 1.0, float("nan"), 2.0, float("nan"), 2.0, -float("inf"), -float("inf"),
                                           0.5, 0.5, 3.0, 3.0], f32, (1, 1, 2, 6))], MAXP([2], [2], [0]), grad=False)
case("max_pool2d", "padding over half the kernel", [rnd((1, 2, 5, 5))], MAXP([3], [], [2]), grad=False)
case("max_pool2d", "kernel larger than the input", [rnd((1, 2, 5, 5))], MAXP([7]), grad=False)
case("max_pool1d", "k3 s2 p1", [rnd((2, 3, 11), f32, -2, 2)], MAXP([3], [2], [1]))
case("max_pool1d", "unbatched d2 ceil", [rnd((3, 10), f32, -2, 2)], MAXP([2], [3], [0], [2], True))
case("avg_pool2d", "k3 s2 p1", [rnd((2, 3, 9, 11))], AVGP([3], [2], [1]))
case("avg_pool2d", "ceil no pad count", [rnd((2, 2, 7, 6))], AVGP([3, 2], [2, 1], [1], True, False))
case("avg_pool2d", "divisor 5 channels_last", [channels_last(rnd((2, 4, 6, 5)))], AVGP([2], [], [1], True, True, 5))
case("avg_pool2d", "f16", [rnd((1, 2, 6, 5), f16)], AVGP([2], [1]))
case("avg_pool2d", "padding over half the kernel", [rnd((1, 2, 5, 5))], AVGP([2], [], [2]), grad=False)
case("avg_pool1d", "k3 s2 p1 no pad count", [rnd((2, 3, 11))], AVGP([3], [2], [1], False, False))
case("avg_pool1d", "unbatched ceil", [rnd((3, 10))], AVGP([4], [3], [2], True))
case("adaptive_avg_pool2d", "7x5 to 3x4", [rnd((2, 3, 7, 5))], {"output_size": Dims([3, 4])})
case("adaptive_avg_pool2d", "upsampling 3x2 to 5x7", [rnd((1, 2, 3, 2))], {"output_size": Dims([5, 7])})
case("adaptive_avg_pool2d", "None, channels_last", [channels_last(rnd((2, 4, 6, 5)))], {"output_size": Dims([-1, 2])})
case("adaptive_avg_pool2d", "global f64", [rnd((2, 3, 7, 7), f64)], {"output_size": Dims([1, 1])})
INTERP = lambda mode, size=(), sf=None, align=False, sf_w=None: {
    "mode": Str(mode), "size": Dims(size), "scale_factor": OptDbl(sf), "scale_factor_w": OptDbl(sf_w),
    "align_corners": Bool(align)}
case("interpolate", "nearest size (9,4)", [rnd((2, 3, 5, 7))], INTERP("nearest", [9, 4]))
case("interpolate", "nearest x2", [rnd((1, 2, 4, 3))], INTERP("nearest", [], 2.0))
case("interpolate", "nearest x(2.5, 1.7)", [rnd((1, 2, 4, 6))], INTERP("nearest", [], 2.5, False, 1.7))
case("interpolate", "nearest 1-d x0.6", [rnd((2, 3, 9))], INTERP("nearest", [], 0.6))
case("interpolate", "bilinear size (7,5)", [rnd((1, 2, 4, 3))], INTERP("bilinear", [7, 5]))
case("interpolate", "bilinear align x1.5", [rnd((2, 1, 3, 4))], INTERP("bilinear", [], 1.5, True))
case("interpolate", "bilinear x(2.1,3) channels_last", [channels_last(rnd((2, 3, 5, 4)))],
     INTERP("bilinear", [], 2.1, False, 3.0))
case("interpolate", "bilinear f64 down to (3,2)", [rnd((1, 2, 7, 5), f64)], INTERP("bilinear", [3, 2]))
case("interpolate", "bilinear 3-D", [rnd((2, 3, 4))], INTERP("bilinear", [], 2.0), grad=False)
case("embedding", "[2,4] repeats", [rnd((7, 3)), idx([0, 6, 2, 2, 5, 0, 2, 1], (2, 4))], {"padding_idx": I64(-1)})
case("embedding", "padding_idx 2 i32", [rnd((5, 4)), idx([2, 1, 2, 4, 3], (5,), i32)], {"padding_idx": I64(2)})
case("embedding", "strided weight", [T(rnd((6, 9))), idx([5, 0, 3])], {"padding_idx": I64(-1)})
case("embedding", "index out of range", [rnd((5, 4)), idx([0, 5])], {"padding_idx": I64(-1)}, grad=False)


# ---- issue 30 item 1: normalisation and losses (wt-norm) ------------------------------------------
# Inputs that Tritium does not differentiate (running statistics, class weights, probability
# targets) are detached inside the callables, so PyTorch's gradient for them is None (zeros).

def _nograd(t):
    return None if t is None else t.detach().clone()


OPS.update({
    "batch_norm": lambda x, rm, rv, w, b, training, momentum, eps: F.batch_norm(
        x, _nograd(rm), _nograd(rv), w, b, training, momentum, eps),
    "group_norm": lambda x, w, b, num_groups, eps: F.group_norm(x, num_groups, w, b, eps),
    "rms_norm": lambda x, w, normalized_shape, eps: F.rms_norm(x, normalized_shape, w, eps),
    "cross_entropy_loss": lambda x, t, w, ignore_index, reduction, label_smoothing: F.cross_entropy(
        x, _nograd(t) if t.is_floating_point() else t, _nograd(w), ignore_index=ignore_index, reduction=reduction,
        label_smoothing=label_smoothing),
    "nll_loss": lambda x, t, w, ignore_index, reduction: F.nll_loss(
        x, t, _nograd(w), ignore_index=ignore_index, reduction=reduction),
})


def channels_last(maker):
    """A [N, C, H, W] view of a contiguous [N, H, W, C] tensor."""
    def make(g):
        return maker(g).permute(0, 3, 1, 2)
    return make


def BN(training, momentum=0.1, eps=1e-5):
    return {"training": Bool(training), "momentum": Dbl(momentum), "eps": Dbl(eps)}


case("batch_norm", "[6,3] training affine", [rnd((6, 3), f32, -2, 2), NONE, NONE, rnd((3,), f32, 0.5, 1.5), rnd((3,))],
     BN(True))
case("batch_norm", "[2,3,5] training running stats no affine",
     [rnd((2, 3, 5), f32, -2, 2), rnd((3,)), rnd((3,), f32, 0.5, 2), NONE, NONE], BN(True, 0.3))
case("batch_norm", "[2,3,4,5] training", [rnd((2, 3, 4, 5), f32, -2, 3), rnd((3,)), rnd((3,), f32, 0.5, 2),
                                          rnd((3,), f32, 0.5, 1.5), rnd((3,))], BN(True))
case("batch_norm", "[2,3,4,5] eval", [rnd((2, 3, 4, 5), f32, -2, 3), rnd((3,)), rnd((3,), f32, 0.5, 2),
                                      rnd((3,), f32, 0.5, 1.5), rnd((3,))], BN(False))
case("batch_norm", "channels-last training", [channels_last(rnd((2, 4, 5, 3), f32, -2, 2)), NONE, NONE,
                                              rnd((3,), f32, 0.5, 1.5), rnd((3,))], BN(True))
case("batch_norm", "f64 eps 1e-3", [rnd((4, 2, 3), f64, -2, 2), NONE, NONE, rnd((2,), f64, 0.5, 1.5), rnd((2,), f64)],
     BN(True, 0.1, 1e-3))
case("batch_norm", "f16", [rnd((4, 3, 5), f16, -2, 2), NONE, NONE, rnd((3,), f16, 0.5, 1.5), rnd((3,), f16)], BN(True))
case("batch_norm", "bf16 eval", [rnd((4, 3, 5), bf16, -2, 2), rnd((3,)), rnd((3,), f32, 0.5, 2), NONE, NONE], BN(False))
case("batch_norm", "one value per channel", [rnd((1, 3)), NONE, NONE, NONE, NONE], BN(True), grad=False)
case("batch_norm", "eval without running stats", [rnd((4, 3)), NONE, NONE, NONE, NONE], BN(False), grad=False)
case("batch_norm", "weight of the wrong length", [rnd((4, 3)), NONE, NONE, rnd((4,)), NONE], BN(True), grad=False)


def GN(groups, eps=1e-5):
    return {"num_groups": I64(groups), "eps": Dbl(eps)}


case("group_norm", "[2,6,5] 3 groups affine", [rnd((2, 6, 5), f32, -2, 2), rnd((6,), f32, 0.5, 1.5), rnd((6,))], GN(3))
case("group_norm", "[3,4,3,5] 2 groups", [rnd((3, 4, 3, 5), f32, -2, 3), rnd((4,), f32, 0.5, 1.5), rnd((4,))], GN(2))
case("group_norm", "[2,6] no affine", [rnd((2, 6), f32, -2, 2), NONE, NONE], GN(2))
case("group_norm", "transposed input", [T(rnd((3, 4, 10), f32, -2, 2), (0, 2)), rnd((4,), f32, 0.5, 1.5), rnd((4,))],
     GN(2))
case("group_norm", "f64", [rnd((2, 4, 3), f64, -2, 2), rnd((4,), f64, 0.5, 1.5), rnd((4,), f64)], GN(1, 1e-3))
case("group_norm", "f16", [rnd((2, 4, 9), f16, -2, 2), rnd((4,), f16, 0.5, 1.5), rnd((4,), f16)], GN(2))
case("group_norm", "bf16", [rnd((2, 4, 9), bf16, -2, 2), rnd((4,), bf16, 0.5, 1.5), rnd((4,), bf16)], GN(2))
case("group_norm", "channels not divisible", [rnd((2, 3, 4)), NONE, NONE], GN(2), grad=False)
case("group_norm", "weight of the wrong length", [rnd((2, 4, 4)), rnd((3,)), NONE], GN(2), grad=False)


def RMS(shape, eps=None):
    return {"normalized_shape": Sizes(shape), "eps": OptDbl(eps)}


case("rms_norm", "[3,5] over [5] eps None", [rnd((3, 5), f32, -2, 2), rnd((5,), f32, 0.5, 1.5)], RMS([5]))
case("rms_norm", "[2,3,4] over [3,4] no weight", [rnd((2, 3, 4), f32, -2, 2), NONE], RMS([3, 4], 1e-6))
case("rms_norm", "transposed input", [T(rnd((4, 6), f32, -2, 2)), rnd((6,), f32, 0.5, 1.5)], RMS([6], 1e-5))
case("rms_norm", "row of 2100 (over one block)", [rnd((1, 2100), f32, -2, 2), rnd((2100,), f32, 0.5, 1.5)], RMS([2100]))
case("rms_norm", "f64", [rnd((3, 7), f64, -2, 2), rnd((7,), f64, 0.5, 1.5)], RMS([7], 1e-3))
case("rms_norm", "f16 eps None", [rnd((3, 8), f16, -2, 2), rnd((8,), f16, 0.5, 1.5)], RMS([8]))
case("rms_norm", "bf16 eps None", [rnd((3, 8), bf16, -2, 2), rnd((8,), bf16, 0.5, 1.5)], RMS([8]))
case("rms_norm", "shape mismatch", [rnd((3, 4)), rnd((5,))], RMS([5]), grad=False)


def CE(reduction="mean", ignore_index=-100, label_smoothing=0.0):
    return {"ignore_index": I64(ignore_index), "reduction": Str(reduction), "label_smoothing": Dbl(label_smoothing)}


def labels_with_ignored(n, classes, ignored_at):
    def make(g):
        t = torch.randint(0, classes, (n,), generator=g, dtype=i64)
        t[list(ignored_at)] = -100
        return t
    return make


for red in ("mean", "sum", "none"):
    case("cross_entropy_loss", f"[4,5] {red}", [rnd((4, 5), f32, -3, 3), randidx((4,), 5), NONE], CE(red))
    case("cross_entropy_loss", f"weight ignore_index smoothing {red}",
         [rnd((6, 5), f32, -3, 3), labels_with_ignored(6, 5, [1, 4]), rnd((5,), f32, 0.5, 2)], CE(red, -100, 0.2))
    case("cross_entropy_loss", f"[2,3,4,2] {red}", [rnd((2, 3, 4, 2), f32, -3, 3), randidx((2, 4, 2), 3), NONE],
         CE(red, -100, 0.1))
    case("cross_entropy_loss", f"probabilities {red}",
         [rnd((4, 5), f32, -3, 3), rnd((4, 5), f32, 0, 1), rnd((5,), f32, 0.5, 2)], CE(red, -100, 0.1))
case("cross_entropy_loss", "ignore_index a class", [rnd((5, 4), f32, -3, 3), randidx((5,), 4), NONE], CE("mean", 2))
case("cross_entropy_loss", "every target ignored", [rnd((3, 4)), idx([-100, -100, -100]), NONE], CE("mean"))
case("cross_entropy_loss", "f64", [rnd((3, 10), f64, -3, 3), randidx((3,), 10), rnd((10,), f64, 0.5, 2)],
     CE("mean", -100, 0.3))
case("cross_entropy_loss", "bf16", [rnd((3, 10), bf16, -3, 3), randidx((3,), 10), NONE], CE("mean", -100, 0.1))
case("cross_entropy_loss", "target out of range", [rnd((3, 4)), idx([0, 4, 1]), NONE], CE(), grad=False)
case("cross_entropy_loss", "i32 target", [rnd((3, 4)), idx([0, 1, 1], dtype=i32), NONE], CE(), grad=False)
case("cross_entropy_loss", "weight of the wrong length", [rnd((3, 4)), idx([0, 1, 1]), rnd((3,)), ], CE(), grad=False)
case("cross_entropy_loss", "smoothing above 1", [rnd((3, 4)), idx([0, 1, 1]), NONE], CE("mean", -100, 1.5), grad=False)


def NLL(reduction="mean", ignore_index=-100):
    return {"ignore_index": I64(ignore_index), "reduction": Str(reduction)}


for red in ("mean", "sum", "none"):
    case("nll_loss", f"[5,4] weight ignore {red}",
         [rnd((5, 4), f32, -3, 0), labels_with_ignored(5, 4, [2]), rnd((4,), f32, 0.5, 2)], NLL(red))
    case("nll_loss", f"[2,3,5] {red}", [rnd((2, 3, 5), f32, -3, 0), randidx((2, 5), 3), NONE], NLL(red, 1))
case("nll_loss", "f64", [rnd((3, 6), f64, -3, 0), randidx((3,), 6), NONE], NLL())
case("nll_loss", "target out of range", [rnd((3, 4)), idx([0, 7, 1]), NONE], NLL(), grad=False)
case("nll_loss", "float target", [rnd((3, 4)), rnd((3,)), NONE], NLL(), grad=False)
case("nll_loss", "batch sizes differ", [rnd((3, 4)), idx([0, 1]), NONE], NLL(), grad=False)


# ---- issue 30 item 1 (wt-rnn): rnn_recurrence, the time loop of RNN / LSTM / GRU ----------------------
# Checked against PyTorch's own cells, one step at a time over precomputed input gates: the cell's
# input is gates_x[t] with an identity W_ih, so its gate maths (order, biases, GRU's r * (W_hn h +
# b_hn)) is PyTorch's. states: [T, B, H] ([T, 2, B, H] for lstm: h then c) at each step's position.
def _rnn_recurrence(gx, h0, c0, w_hh, b_ih, b_hh, mode, reverse):
    T, G = gx.shape[0], gx.shape[2]
    eye = torch.eye(G, dtype=gx.dtype)
    cell = {"rnn_tanh": torch.rnn_tanh_cell, "rnn_relu": torch.rnn_relu_cell, "gru": torch.gru_cell}.get(mode)
    h, c, out = h0, c0, [None] * T
    for t in (range(T - 1, -1, -1) if reverse else range(T)):
        if mode == "lstm":
            h, c = torch.lstm_cell(gx[t], (h, c), eye, w_hh, b_ih, b_hh)
            out[t] = torch.stack((h, c))
        else:
            h = cell(gx[t], h, eye, w_hh, b_ih, b_hh)
            out[t] = h
    return torch.stack(out)


OPS["rnn_recurrence"] = _rnn_recurrence


def RNNR(mode, reverse=False):
    return {"mode": Str(mode), "reverse": Bool(reverse)}


for _mode, _g in (("rnn_tanh", 1), ("rnn_relu", 1), ("lstm", 4), ("gru", 3)):
    _c0 = (lambda b, h=5, dt=f32: rnd((b, h), dt)) if _mode == "lstm" else (lambda b, h=5, dt=f32: NONE)
    case("rnn_recurrence", f"{_mode} T=4 B=3 H=5", [rnd((4, 3, 5 * _g)), rnd((3, 5)), _c0(3), rnd((5 * _g, 5), f32, -0.5, 0.5),
                                                    rnd((5 * _g,)), rnd((5 * _g,))], RNNR(_mode))
    case("rnn_recurrence", f"{_mode} reverse no bias", [rnd((3, 2, 5 * _g)), rnd((2, 5)), _c0(2), rnd((5 * _g, 5), f32, -0.5, 0.5),
                                                        NONE, NONE], RNNR(_mode, True))
    case("rnn_recurrence", f"{_mode} f64 H=17", [rnd((2, 2, 17 * _g), f64), rnd((2, 17), f64),
                                                 _c0(2, 17, f64),
                                                 rnd((17 * _g, 17), f64, -0.3, 0.3), rnd((17 * _g,), f64), NONE], RNNR(_mode))


# ---- issue 31 item 4 (wt-amp): linear, the op nn::Linear runs (one op, as autocast needs) ---------
OPS["linear"] = lambda x, w, b: F.linear(x, w, b)
case("linear", "[3,5] x [4,5] + [4]", [rnd((3, 5)), rnd((4, 5)), rnd((4,))])
case("linear", "[2,3,5] x [4,5] no bias", [rnd((2, 3, 5)), rnd((4, 5)), NONE])
case("linear", "[5] x [4,5] + [4]", [rnd((5,)), rnd((4, 5)), rnd((4,))])
case("linear", "transposed weight, K = 70", [rnd((3, 70)), T(rnd((6, 70))), rnd((6,))])
case("linear", "f64", [rnd((4, 6), f64), rnd((3, 6), f64), rnd((3,), f64)])
case("linear", "in_features differ", [rnd((3, 5)), rnd((4, 6)), rnd((4,))], grad=False)
case("linear", "bias of the wrong size", [rnd((3, 5)), rnd((4, 5)), rnd((3,))], grad=False)


# ---- building the files --------------------------------------------------------------------------

def _storage_recipe(x):
    """(stored tensor, layout or None): a non-contiguous x is stored as its whole storage (1-D) and
    rebuilt by the C++ side as stored.as_strided(shape, strides, offset)."""
    n = x.untyped_storage().nbytes() // x.element_size()
    if x.is_contiguous() and x.storage_offset() == 0 and n == x.numel():
        return x.detach().clone(), None
    base = torch.as_strided(x.detach(), (n,), (1,), 0).clone()
    return base, {"shape": list(x.shape), "strides": list(x.stride()), "offset": x.storage_offset()}


def _float(t):
    return t is not None and t.is_floating_point()


def build_case(c, k, tensors):
    g = torch.Generator().manual_seed(zlib.crc32(f"{c.op}/{c.name}".encode()))
    prefix = f"{k:03d}"
    inputs = [None if m is None else m(g) for m in c.inputs]
    record = {"name": c.name, "inputs": [], "attrs": {}, "check": c.check}
    for i, x in enumerate(inputs):
        if x is None:
            record["inputs"].append(None)
            continue
        stored, layout = _storage_recipe(x)
        tensors[f"{prefix}/in{i}"] = stored
        record["inputs"].append({"tensor": f"{prefix}/in{i}", "layout": layout})
    py_attrs = {}
    for name, a in c.attrs.items():
        if a.tag == "tensors":
            made, names = [], []
            for j, m in enumerate(a.value):
                if m is None:
                    made.append(None)
                    names.append(None)
                    continue
                t = m(g)
                tensors[f"{prefix}/attr/{name}/{j}"] = t.clone()
                made.append(t)
                names.append(f"{prefix}/attr/{name}/{j}")
            record["attrs"][name] = {"tensors": names}
            py_attrs[name] = made
        else:
            record["attrs"][name] = {a.tag: a.value}
            py_attrs[name] = a.py
    if c.known_difference:
        record["known_difference"] = c.known_difference
    if c.tol:
        record["tol"] = {"rtol": c.tol[0], "atol": c.tol[1], "why": c.why}

    grad_inputs = [i for i, x in enumerate(inputs) if _float(x)] if c.grad and c.check != "error" else []
    leaves = []
    for i, x in enumerate(inputs):
        if i in grad_inputs:
            x = x.detach().requires_grad_()  # a view of the same storage: the layout is kept
        leaves.append(x)
    fn = OPS[c.op]
    try:
        with torch.random.fork_rng():
            torch.manual_seed(0)
            out = fn(*leaves, **py_attrs)
    except (RuntimeError, ValueError, IndexError, TypeError) as e:
        if c.grad and grad_inputs:  # an error case says grad=False: this one was meant to run
            raise SystemExit(f"{c.op} / {c.name}: PyTorch raised ({str(e).splitlines()[0][:200]}) on a case that "
                             "records gradients; fix its inputs (T(maker) keeps maker's shape, only the strides "
                             "are transposed), or pass grad=False if the error is the point") from e
        record["check"] = "error"
        record["error"] = str(e).splitlines()[0][:300]
        return record
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    wants_grad = bool(grad_inputs) and outs[0].requires_grad
    go = rnd(tuple(outs[0].shape), outs[0].dtype, 0.5, 1.5)(g) if wants_grad else None
    if any(x is not None and x.dtype in (f16, bf16) for x in inputs) and c.check == "values":
        record["reference"] = f64_reference(c, inputs, py_attrs, grad_inputs if wants_grad else [], go, prefix,
                                            tensors)
    record["outputs"] = []
    for j, o in enumerate(outs):
        tensors[f"{prefix}/out{j}"] = o.detach().clone().contiguous()
        record["outputs"].append(f"{prefix}/out{j}")
    if wants_grad:
        try:
            grads = torch.autograd.grad(outs[0], [leaves[i] for i in grad_inputs], go, allow_unused=True)
        except RuntimeError as e:
            raise SystemExit(f"{c.op} / {c.name}: PyTorch's backward failed ({e}); use grad=False") from e
        tensors[f"{prefix}/grad_output"] = go
        record["grad_output"] = f"{prefix}/grad_output"
        record["grads"] = {}
        for i, gr in zip(grad_inputs, grads):
            if gr is None:
                gr = torch.zeros_like(inputs[i])
            tensors[f"{prefix}/grad{i}"] = gr.detach().clone().contiguous()
            record["grads"][str(i)] = f"{prefix}/grad{i}"
    return record


def f64_reference(c, inputs, py_attrs, grad_inputs, go, prefix, tensors):
    """The same call with every floating input in float64: the accuracy yardstick for f16/bf16
    cases, where PyTorch's own low-precision result may be less accurate than Tritium's (the C++
    side accepts an element within the dtype's tolerance of PyTorch, or at least as close to this
    reference as PyTorch is). `go`: the case's grad_output."""
    up = [x.detach().double().requires_grad_(i in grad_inputs) if _float(x) else x for i, x in enumerate(inputs)]
    out = OPS[c.op](*up, **py_attrs)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    ref = {"outputs": []}
    for j, o in enumerate(outs):
        name = f"{prefix}/ref_out{j}"
        tensors[name] = o.detach().clone().contiguous()
        ref["outputs"].append(name)
    if grad_inputs:
        grads = torch.autograd.grad(outs[0], [up[i] for i in grad_inputs], go.double(), allow_unused=True)
        ref["grads"] = {}
        for i, gr in zip(grad_inputs, grads):
            name = f"{prefix}/ref_grad{i}"
            tensors[name] = (torch.zeros_like(up[i]) if gr is None else gr).detach().clone().contiguous()
            ref["grads"][str(i)] = name
    return ref


def build_file(op, cases):
    tensors, records = {}, []
    for k, c in enumerate(cases):
        records.append(build_case(c, k, tensors))
    # One metadata key: the writer keeps __metadata__ in a hash map, so several keys would come out
    # in a different order on each run (and the files would never be byte-for-byte current).
    fixture = {"format_version": FORMAT_VERSION, "op": op, "torch_version": torch.__version__.split("+")[0],
               "cases": records}
    return st_save(tensors, metadata={"fixture": json.dumps(fixture, separators=(",", ":"))}), records


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="regenerate in memory and compare with the committed files")
    ap.add_argument("--only", default="", help="comma-separated registry op names")
    args = ap.parse_args()
    warnings.simplefilter("ignore")  # deprecation notes of cases that probe legacy behaviour
    torch.set_num_threads(1)  # reductions' summation order does not depend on the machine
    only = set(filter(None, args.only.split(",")))
    by_op = {}
    for c in CASES:
        if not only or c.op in only:
            by_op.setdefault(c.op, []).append(c)
    for op in only - set(by_op):
        sys.exit(f"no cases for op {op!r}")
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    stale, total, errors, total_bytes = [], 0, 0, 0
    for op, cases in by_op.items():
        data, records = build_file(op, cases)
        total += len(records)
        errors += sum(r["check"] == "error" for r in records)
        total_bytes += len(data)
        path = OUT_DIR / f"{op}.safetensors"
        if args.check:
            if not path.exists() or path.read_bytes() != data:
                stale.append(path.name)
        else:
            path.write_bytes(data)
    if not only:
        known = {f"{op}.safetensors" for op in by_op}
        extra = sorted(p.name for p in OUT_DIR.glob("*.safetensors") if p.name not in known)
        if extra and args.check:
            stale += [f"{e} (no longer in the table)" for e in extra]
        elif extra:
            for e in extra:
                (OUT_DIR / e).unlink()
    print(f"{len(by_op)} ops, {total} cases ({errors} expected errors), {total_bytes / 1024:.0f} KiB")
    if args.check:
        if stale:
            print("out of date (run scripts/make_torch_fixtures.py):", ", ".join(stale))
            sys.exit(1)
        print("the committed fixtures are current")


if __name__ == "__main__":
    main()
