#!/usr/bin/env python3
"""PyTorch parity fixtures for Tritium's op registry (issue 29, item 8).

Writes tests/fixtures/torch/<op>.safetensors, one file per registry op, holding for each case of
the table below: the inputs (a non-contiguous input is stored as its whole storage plus a
shape/strides/offset recipe the C++ side rebuilds with as_strided), the attributes (typed, in
__metadata__ as JSON), PyTorch's outputs and, for differentiable cases, the gradient of each
floating input for a fixed random grad_output. A case where PyTorch raises records the error, and
Tritium must raise one too. tests/test_torch_parity.cpp runs every case through the registry on
every backend; CI needs no PyTorch.

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
case("where", "strided self", [rnd((4, 3), boolean), T(rnd((3, 4))), rnd((4, 3))])
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
case("cross_entropy", "transposed logits", [T(rnd((7, 4), f32, -3, 3)), randidx((4,), 7)])
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
case("layer_norm", "transposed input", [T(rnd((6, 4), f32, -2, 2)), rnd((6,), f32, 0.5, 1.5), rnd((6,))], LN([6]))
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
case("matmul", "transposed both", [T(rnd((5, 3))), T(rnd((4, 5)))])
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
     [T(rnd((1, 5, 2, 8)), (1, 2)), rnd((1, 2, 5, 8)), rnd((1, 2, 5, 8))], SDPA())
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
case("unflatten", "dim -1 into [2,-1]", [T(rnd((4, 3)))], {"dim": Int(-1), "sizes": Sizes([2, -1])})
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
case("cat", "dim -1 one strided", [rnd((3, 2)), T(rnd((4, 3))), rnd((3, 1))], {"dim": Int(-1)})
case("cat", "dim 0 promotes f32 f64", [rnd((2, 3)), rnd((1, 3), f64)], {"dim": Int(0)})
case("cat", "legacy empty [0] skipped", [rnd((2, 3)), rnd((0,)), rnd((1, 3))], {"dim": Int(0)})
case("cat", "one tensor", [rnd((2, 3))], {"dim": Int(1)})
case("cat", "i32 and bool", [rnd((2,), i32, -9, 9), rnd((3,), boolean)], {"dim": Int(0)}, grad=False)
case("cat", "shapes differ", [rnd((2, 3)), rnd((2, 4))], {"dim": Int(0)}, grad=False)
case("stack", "dim 1 one strided", [rnd((3, 2)), T(rnd((2, 3)))], {"dim": Int(1)})
case("stack", "dim -1 three", [rnd((2,)), rnd((2,)), rnd((2,))], {"dim": Int(-1)})
case("stack", "0-dim tensors", [rnd(()), rnd(())], {"dim": Int(0)})
case("stack", "shapes differ", [rnd((2,)), rnd((3,))], {"dim": Int(0)}, grad=False)

# Indexing ops (ops/decl/indexing.cpp).
case("gather", "dim -1 repeated", [T(rnd((4, 3))), idx([0, 3, 2, 2, 1, 0], (3, 2))], {"dim": Int(-1)})
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
case("masked_fill", "broadcast mask strided", [T(rnd((4, 3))), vals([True, False, False, True], boolean)], {"value": Scal(0.5)})
case("masked_fill", "NaN value", [rnd((2, 3)), rnd((2, 3), boolean)], {"value": Scal(float("nan"))})
case("masked_fill", "i64 with an integer", [rnd((2, 3), i64, -9, 9), rnd((2, 3), boolean)], {"value": Scal(-7)}, grad=False)
case("masked_fill", "f16 with -inf", [rnd((2, 3), f16), rnd((2, 3), boolean)], {"value": Scal(float("-inf"))})
case("masked_fill", "mask not bool", [rnd((2, 3)), rnd((2, 3), u8, 0, 1)], {"value": Scal(1.0)}, grad=False)
case("masked_select", "self broadcast to the mask", [rnd((4,)), rnd((3, 4), boolean)])
case("masked_select", "strided", [T(rnd((4, 3))), rnd((3, 4), boolean)])
case("masked_select", "all false", [rnd((2, 3)), vals([False] * 6, boolean, (2, 3))])
case("masked_select", "i32", [rnd((2, 3), i32, -9, 9), rnd((2, 3), boolean)], grad=False)
case("index", "adjacent dims broadcast negative", [rnd((4, 5, 3))],
     {"indices": Tensors(None, idx([0, 4], (2, 1)), idx([2, -1, 0], (3,)))})
case("index", "dims 0 and 2 apart", [rnd((4, 5, 3))], {"indices": Tensors(idx([3, 0, 3]), None, idx([1, -3, 1]))})
case("index", "bool mask", [T(rnd((3, 4)))], {"indices": Tensors(vals([True, False, True, True], boolean))})
case("index", "2-D mask", [rnd((3, 4), i32, -9, 9)], {"indices": Tensors(rnd((3, 4), boolean))}, grad=False)
case("index", "index out of range", [rnd((3, 4))], {"indices": Tensors(idx([0, 3]))}, grad=False)
case("index_put", "rows", [rnd((4, 3)), rnd((2, 3))], {"indices": Tensors(idx([3, 1])), "accumulate": Bool(False)})
case("index_put", "accumulate duplicates broadcast", [T(rnd((3, 4))), rnd((3,))],
     {"indices": Tensors(idx([1, 1])), "accumulate": Bool(True)})
case("index_put", "two index tensors", [rnd((3, 4)), rnd((2,))],
     {"indices": Tensors(idx([0, 2]), idx([3, -1])), "accumulate": Bool(False)})
case("index_put", "i64 accumulate", [rnd((4,), i64, -9, 9), rnd((3,), i64, -9, 9)],
     {"indices": Tensors(idx([0, 0, 3])), "accumulate": Bool(True)}, grad=False)


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
