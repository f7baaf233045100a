// Elementwise ops on tensors: one generic mechanism for every op (docs/ops.md).
//
// A call names an operation (detail::Ew), a compute dtype and up to three operands (one of them
// possibly a C++ number). The host side broadcasts the operands' strides to the output shape,
// collapses dims (drops size-1 dims, merges dims that are contiguous in every operand), then
//  - all operands contiguous: the 1-D kernel `ew_contig` over the flat index (vector loads);
//  - otherwise: the kernel `ew_strided`, whose program handles a [BR, BC] tile: BC elements of
//    the last (collapsed) dim times BR "rows" (the other dims flattened). Each row index is split
//    into per-dim indices once per row (divisions by the run-time sizes), the column adds
//    column * inner stride; an inner stride equal to 1 is specialised to the constant 1, so the
//    accesses of a contiguous operand stay vector loads.
// Dtypes are meta-parameters of the kernels: the pointers are tl::ptr<tl::any>, whose element type
// comes from the tensor, and CDT (the compute dtype) and OP select the traced code. Kernel objects
// are static: a launch of a known specialisation is a hash lookup.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dsl/kernel.h"
#include "dsl/ops.h"
#include "ops/elementwise_kernels.h"
#include "ops/math_approx.h"

namespace tritium::ops {

namespace tl = tritium::tl;
using detail::Ew;
using detail::EwCall;

namespace detail {

// ---- helpers shared by the op library ----------------------------------------------------------

std::string shape_str(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b) {
  int bad = 0;
  if (auto s = ir::broadcast_shape(a, b, &bad)) return *s;
  size_t r = std::max(a.size(), b.size());
  auto dim = [&](const Shape& s) { return size_t(bad) < r - s.size() ? int64_t(1) : s[bad - (r - s.size())]; };
  fail("{}: shapes {} and {} cannot be broadcast together (dimension {}: {} vs {})", op, shape_str(a), shape_str(b),
       bad, dim(a), dim(b));
}

Device check_tensors(const char* op, const std::vector<const Tensor*>& ts) {
  Device dev = Device::cpu();
  bool first = true;
  for (size_t i = 0; i < ts.size(); ++i) {
    const Tensor* t = ts[i];
    if (!t->defined()) fail("{}: argument {} is an undefined tensor", op, i);
    if (first) dev = t->device(), first = false;
    else if (t->device() != dev)
      fail("{}: tensors are on different devices ({} and {})", op, dev.str(), t->device().str());
  }
  return dev;
}

int normalize_dim(const char* op, int dim, int rank) {
  int r = std::max(rank, 1);  // a 0-dim tensor accepts dims 0 and -1, as in PyTorch
  int d = dim < 0 ? dim + r : dim;
  if (d < 0 || d >= r)
    fail("{}: dimension {} is out of range for a tensor of rank {} (expected {} to {})", op, dim, rank, -r, r - 1);
  return d;
}

int kind_of(DType d) { return d == DType::i1 ? 0 : is_float(d) ? 2 : 1; }

DType promote_types(const char* op, DType a, DType b) {
  if (a == b) return a;
  int ka = kind_of(a), kb = kind_of(b);
  if (ka != kb) return ka > kb ? a : b;
  if (ka == 2) {
    if (a == DType::f64 || b == DType::f64) return DType::f64;
    return DType::f32;  // f32 with anything narrower, and f16 with bf16
  }
  // Two integers.
  int wa = dtype_bits(a), wb = dtype_bits(b);
  if (is_signed_int(a) == is_signed_int(b)) return wa >= wb ? a : b;
  DType s = is_signed_int(a) ? a : b, u = is_signed_int(a) ? b : a;
  if (dtype_bits(s) > dtype_bits(u)) return s;
  switch (dtype_bits(u)) {
    case 8: return DType::i16;
    case 16: return DType::i32;
    case 32: return DType::i64;
    default: break;
  }
  fail("{}: no integer type holds both {} and {} (cast one of them)", op, dtype_name(a), dtype_name(b));
}

DType scalar_dtype(const Scalar& s) {
  if (std::holds_alternative<bool>(s.value)) return DType::i1;
  if (std::holds_alternative<int64_t>(s.value)) return DType::i64;
  return DType::f32;  // PyTorch types a wrapped float as the default dtype
}

int64_t default_block(int64_t n) { return n >= (int64_t(1) << 16) ? 4096 : 1024; }

tl::tensor apply_family(Ew op, DType cdt, const EwOperands& v) {
  const int k = static_cast<int>(op);
  if (k >= static_cast<int>(Ew::bitwise_first)) return apply_bitwise(op, cdt, v);
  if (k >= static_cast<int>(Ew::activation_first)) return apply_activation(op, cdt, v);
  return apply_unary_math(op, cdt, v);
}

}  // namespace detail

namespace {

using P = tl::ptr<tl::any>;
using detail::shape_str;
constexpr int kMaxRank = 7;  // collapsed dims of the strided kernel: 6 outer + the column dim
constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

tl::tensor convert(const tl::tensor& v, DType d) { return v.dtype() == d ? v : v.to(d); }

// x ** e for an integer e >= 0, by squaring at trace time.
tl::tensor int_power(const tl::tensor& x, int e) {
  if (e == 0) return tl::zeros_like(x) + 1;
  std::optional<tl::tensor> result;
  tl::tensor base = x;
  while (e > 0) {
    if (e & 1) result = result ? *result * base : base;
    e >>= 1;
    if (e) base = base * base;
  }
  return *result;
}

// The traced computation of one op on converted operands.
tl::tensor apply(Ew op, DType cdt, int param, const tl::tensor& x, const tl::tensor& y, const tl::tensor& z,
                 const std::array<tl::tensor, detail::kExtraScalars>& e) {
  if (static_cast<int>(op) >= static_cast<int>(Ew::math_first))
    return detail::apply_family(op, cdt, detail::EwOperands{x, y, z, e, param});
  switch (op) {
    case Ew::copy: return x;
    case Ew::add: return x + y;
    case Ew::sub: return x - y;
    case Ew::rsub: return y - x;
    case Ew::mul: return x * y;
    case Ew::div: return x / y;  // float compute type: IEEE division
    case Ew::logical_or: return x || y;
    case Ew::logical_and: return x && y;
    case Ew::pow_int: {
      if (param >= 0) return int_power(x, param);
      return 1.0 / int_power(x, -param);  // floats only (checked on the host)
    }
    case Ew::pow_float: {
      tl::tensor xd = convert(x, DType::f64);
      return tl::exp2(y * tl::log2(xd));  // y is the f64 exponent; f64 keeps f32 results exact
    }
    case Ew::neg: return -x;
    // f32: Cody-Waite reduction first (ops/math_approx.h), as accurate as PyTorch's expf; tl::exp
    // alone is Triton's ex2.approx of x log2(e), whose error grows with |x| (22 ulp near 88).
    case Ew::exp: return detail::math::exp(x);
    case Ew::log: return tl::log(x);
    case Ew::sqrt: return tl::sqrt(x);
    case Ew::tanh: return tl::tanh(x);
    case Ew::sigmoid: return tl::sigmoid(x);
    case Ew::relu: return tl::where(x < 0, 0, x);  // NaN stays NaN
    case Ew::gelu: return 0.5 * x * (1.0 + tl::erf(x * kInvSqrt2));
    case Ew::eq: return x == y;
    case Ew::ne: return x != y;
    case Ew::lt: return x < y;
    case Ew::le: return x <= y;
    case Ew::gt: return x > y;
    case Ew::ge: return x >= y;
    case Ew::where: return tl::where(x, y, z);
    case Ew::relu_bw: return tl::where(y > 0, x, 0);
    case Ew::gelu_bw: {
      tl::tensor cdf = 0.5 * (1.0 + tl::erf(y * kInvSqrt2));
      tl::tensor pdf = tl::exp(-0.5 * y * y) * kInvSqrt2Pi;
      return x * (cdf + y * pdf);
    }
    case Ew::tanh_bw: return x * (1.0 - y * y);
    case Ew::sigmoid_bw: return x * y * (1.0 - y);
    default: break;
  }
  (void)cdt;
  fail("elementwise: unknown op {}", static_cast<int>(op));
}

// The operands of the traced body: loaded (or the scalar), converted to the compute type.
tl::tensor operand_value(Ew op, DType cdt, int slot, const tl::tensor& loaded) {
  if (op == Ew::where && slot == 0) return convert(loaded, DType::i1);
  return convert(loaded, cdt);
}
tl::tensor scalar_value(Ew op, DType cdt, const tl::tensor& sf, const tl::tensor& si) {
  if (op == Ew::pow_float) return sf;
  return is_float(cdt) ? convert(sf, cdt) : convert(si, cdt);
}
// The extra numbers in the compute type; EXTRA has bit k set when number k was given.
std::array<tl::tensor, detail::kExtraScalars> extra_values(DType cdt, int EXTRA, const std::array<tl::tensor, 3>& f,
                                                           const std::array<tl::tensor, 3>& i) {
  std::array<tl::tensor, detail::kExtraScalars> e;
  for (int k = 0; k < detail::kExtraScalars; ++k)
    if (EXTRA & (1 << k)) e[k] = is_float(cdt) ? convert(f[k], cdt) : convert(i[k], cdt);
  return e;
}

// Ops with a long body (transcendental math: the math and activation families, exp, log, tanh,
// sigmoid, gelu and their backwards) run 16 elements a thread, not 32. At 32, ptxas keeps many
// elements' chains live at once (acos f32: 122 registers, so a quarter of an SM's threads resident)
// and the kernel falls off the bandwidth: on an H100 (2026-11-27, bench/results/2026-11-27n-h100)
// acos / acosh / asin f32 ran at 0.79 / 0.75 / 0.88 x PyTorch with 32 elements a thread and at
// 0.98-1.01 with 16 (acos: 40 registers), acos bf16 0.79-0.81 -> 0.92-0.94; the other heavy ops
// moved within +-0.05 either way, short bodies (add, abs) not at all, so they keep 32.
bool long_body(Ew op) {
  switch (op) {
    case Ew::pow_float: case Ew::exp: case Ew::log: case Ew::tanh: case Ew::sigmoid: case Ew::gelu:
    case Ew::gelu_bw: case Ew::tanh_bw: case Ew::sigmoid_bw:
      return true;
    default:
      return op >= Ew::math_first && op < Ew::bitwise_first;
  }
}

int64_t contiguous_block(Ew op, int64_t n) {
  const int64_t block = detail::default_block(n);
  return long_body(op) ? std::min<int64_t>(block, 2048) : block;
}

Kernel& contiguous_kernel() {
  static Kernel k = tritium::kernel(
      "ew_contig",
      [](P out, P a, P b, P c, tl::f64 sf, tl::i64 si, tl::f64 ef0, tl::f64 ef1, tl::f64 ef2, tl::i64 ei0, tl::i64 ei1,
         tl::i64 ei2, tl::i64 n, int OP, int NIN, bool SCALAR, int CDT, int PARAM, int EXTRA, int BLOCK) {
        const Ew op = static_cast<Ew>(OP);
        const DType cdt = static_cast<DType>(CDT);
        auto offs = tl::program_id(0).to(tl::int64) * BLOCK + tl::arange(0, BLOCK);
        auto mask = offs < n;
        tl::tensor x = operand_value(op, cdt, 0, tl::load(a + offs, mask));
        tl::tensor y, z;
        if (SCALAR) y = scalar_value(op, cdt, sf, si);
        else if (NIN >= 2) y = operand_value(op, cdt, 1, tl::load(b + offs, mask));
        if (NIN >= 3) z = operand_value(op, cdt, 2, tl::load(c + offs, mask));
        tl::store(out + offs, apply(op, cdt, PARAM, x, y, z, extra_values(cdt, EXTRA, {ef0, ef1, ef2}, {ei0, ei1, ei2})),
                  mask);
      },
      {"out", "a", "b", "c", "sf", "si", "ef0", "ef1", "ef2", "ei0", "ei1", "ei2", "n", "OP", "NIN", "SCALAR", "CDT",
       "PARAM", "EXTRA", "BLOCK"});
  return k;
}

// Strided: sizes d0..d5 of the outer dims (d[RANK-2] innermost), the column count `cols`, and per
// operand (out, a, b, c) six outer strides and the column stride.
Kernel& strided_kernel() {
  static Kernel k = tritium::kernel(
      "ew_strided",
      [](P out, P a, P b, P c, tl::f64 sf, tl::i64 si, tl::f64 ef0, tl::f64 ef1, tl::f64 ef2, tl::i64 ei0,
         tl::i64 ei1, tl::i64 ei2, tl::i64 rows, tl::i64 cols,  //
         tl::i64 d0, tl::i64 d1, tl::i64 d2, tl::i64 d3, tl::i64 d4, tl::i64 d5,     //
         tl::i64 so0, tl::i64 so1, tl::i64 so2, tl::i64 so3, tl::i64 so4, tl::i64 so5, tl::i64 soc,
         tl::i64 sa0, tl::i64 sa1, tl::i64 sa2, tl::i64 sa3, tl::i64 sa4, tl::i64 sa5, tl::i64 sac,
         tl::i64 sb0, tl::i64 sb1, tl::i64 sb2, tl::i64 sb3, tl::i64 sb4, tl::i64 sb5, tl::i64 sbc,
         tl::i64 sc0, tl::i64 sc1, tl::i64 sc2, tl::i64 sc3, tl::i64 sc4, tl::i64 sc5, tl::i64 scc,  //
         int OP, int NIN, bool SCALAR, int CDT, int PARAM, int EXTRA, int RANK, int BR, int BC, bool IDX32,
         int COL0, int COLR, bool ROW_RUNS) {
        const Ew op = static_cast<Ew>(OP);
        const DType cdt = static_cast<DType>(CDT);
        const std::array<tl::tensor, 6> d{d0, d1, d2, d3, d4, d5};
        const std::array<std::array<tl::tensor, 7>, 4> s{{{so0, so1, so2, so3, so4, so5, soc},
                                                          {sa0, sa1, sa2, sa3, sa4, sa5, sac},
                                                          {sb0, sb1, sb2, sb3, sb4, sb5, sbc},
                                                          {sc0, sc1, sc2, sc3, sc4, sc5, scc}}};
        const std::array<P, 4> base{out, a, b, c};
        std::array<bool, 4> used{true, true, !SCALAR && NIN >= 2, NIN >= 3};

        auto pid = tl::program_id(0).to(tl::int64);
        auto ncb = tl::cdiv(cols, BC);
        auto col = (pid % ncb) * BC + tl::arange(0, BC);  // [BC] i64
        std::array<std::optional<tl::tensor>, 4> roff;
        tl::tensor mask;
        if (ROW_RUNS) {
          // A tile's rows are BR consecutive indices of the innermost row dim (d[RANK-2]), never
          // crossing it (masked at its end: 196 rows of a 14 x 14 image in 13 tiles of 16): only
          // the outer dims' index is split, as scalars, and the rows add arange(BR) times that
          // dim's strides - offsets the axis analysis sees run contiguously down the rows of an
          // operand whose stride there is 1 (a transposed read, then loaded in squares, not
          // gathered).
          const tl::tensor din = d[RANK - 2];
          auto ncr = tl::cdiv(din, BR);
          auto tile = pid / ncb;
          auto inner = (tile % ncr) * BR + tl::arange(0, BR);  // [BR] i64
          mask = (inner < din)(tl::_, tl::None) && (col < cols)(tl::None, tl::_);
          tl::tensor rem = tile / ncr;
          for (int k = RANK - 3; k >= 0; --k) {
            tl::tensor idx = k == 0 ? rem : rem % d[k];
            if (k > 0) rem = rem / d[k];
            for (int j = 0; j < 4; ++j)
              if (used[j]) roff[j] = roff[j] ? *roff[j] + idx * s[j][k] : idx * s[j][k];
          }
          for (int j = 0; j < 4; ++j)
            if (used[j]) roff[j] = roff[j] ? *roff[j] + inner * s[j][RANK - 2] : inner * s[j][RANK - 2];
        } else {
          // Row offsets per operand: split the row index into the outer dims' indices. IDX32
          // (rows below 2^31): the divisions in 32 bits - a 64-bit division is a ~70-instruction
          // subroutine, a 32-bit one ~20, and a thread splits every row it holds (a permuted copy
          // with 64-element rows spent more on them than on moving its bytes).
          auto row = (pid / ncb) * BR + tl::arange(0, BR);  // [BR] i64
          mask = (row < rows)(tl::_, tl::None) && (col < cols)(tl::None, tl::_);
          tl::tensor rem = IDX32 ? row.to(tl::int32) : row;
          for (int k = RANK - 2; k >= 0; --k) {
            const tl::tensor dk = IDX32 ? d[k].to(tl::int32) : d[k];
            tl::tensor idx = k == 0 ? rem : rem % dk;
            if (k > 0) rem = rem / dk;
            if (IDX32) idx = idx.to(tl::int64);
            for (int j = 0; j < 4; ++j)
              if (used[j]) roff[j] = roff[j] ? *roff[j] + idx * s[j][k] : idx * s[j][k];
          }
        }
        // COL0 bit j: operand j is broadcast along the columns (stride 0), known here so that its
        // loads are one element a row - a run-time stride of 0 left a gather a chunk on the CPU.
        // COLR bit j: operand j runs backwards along the columns (stride -1: flip), known here so
        // that the CPU loads a chunk's span and reverses it (jit/cpu/lane_patterns.cpp) instead
        // of gathering.
        auto ptr = [&](int j) {
          tl::tensor off = ((COL0 >> j) & 1   ? col * int64_t{0}
                            : (COLR >> j) & 1 ? col * int64_t{-1}
                                              : col * s[j][6])(tl::None, tl::_);
          if (roff[j]) off = (*roff[j])(tl::_, tl::None) + off;
          return base[j] + off;
        };
        tl::tensor x = operand_value(op, cdt, 0, tl::load(ptr(1), mask));
        tl::tensor y, z;
        if (SCALAR) y = scalar_value(op, cdt, sf, si);
        else if (NIN >= 2) y = operand_value(op, cdt, 1, tl::load(ptr(2), mask));
        if (NIN >= 3) z = operand_value(op, cdt, 2, tl::load(ptr(3), mask));
        tl::store(ptr(0), apply(op, cdt, PARAM, x, y, z, extra_values(cdt, EXTRA, {ef0, ef1, ef2}, {ei0, ei1, ei2})),
                  mask);
      });
  return k;
}

int64_t pow4_ceil(int64_t x) {
  int64_t p = 1;
  while (p < x) p *= 4;
  return p;
}

struct Collapsed {
  Shape sizes;                     // collapsed sizes, outermost first
  std::array<Shape, 4> strides;    // per operand (out, a, b, c)
  std::array<int64_t, 4> offset{}; // extra element offsets (the host loop over excess dims)
};

// Broadcast strides to `shape`, drop size-1 dims, merge dims contiguous in every operand.
Collapsed collapse(const Shape& shape, const std::array<const Tensor*, 4>& ops) {
  const int R = static_cast<int>(shape.size());
  std::array<Shape, 4> st;
  for (int j = 0; j < 4; ++j) {
    if (!ops[j]) continue;
    const Tensor& t = *ops[j];
    int off = R - t.dim();
    st[j].assign(R, 0);
    for (int dd = off; dd < R; ++dd) st[j][dd] = t.size(dd - off) == 1 ? 0 : t.stride(dd - off);
  }
  Collapsed c;
  // Inner to outer; c.sizes is built reversed then flipped.
  for (int dd = R - 1; dd >= 0; --dd) {
    if (shape[dd] == 1) continue;
    if (!c.sizes.empty()) {
      bool merge = true;
      for (int j = 0; j < 4 && merge; ++j)
        if (ops[j] && st[j][dd] != c.strides[j].back() * c.sizes.back()) merge = false;
      if (merge) {
        c.sizes.back() *= shape[dd];
        continue;
      }
    }
    c.sizes.push_back(shape[dd]);
    for (int j = 0; j < 4; ++j) c.strides[j].push_back(ops[j] ? st[j][dd] : 0);
  }
  std::reverse(c.sizes.begin(), c.sizes.end());
  for (auto& s : c.strides) std::reverse(s.begin(), s.end());
  return c;
}

const Tensor& at_offset(const Tensor& t, int64_t offset, Tensor& holder) {
  if (offset == 0) return t;
  holder = t.as_strided({}, {}, t.storage_offset() + offset);
  return holder;
}

void launch_collapsed(const EwCall& call, const std::array<const Tensor*, 4>& ops, int nin, Collapsed c) {
  // More dims than the kernel takes: loop over the outermost on the host (one launch each).
  if (static_cast<int>(c.sizes.size()) > kMaxRank) {
    int64_t n0 = c.sizes[0];
    Collapsed sub = c;
    sub.sizes.erase(sub.sizes.begin());
    for (auto& s : sub.strides) s.erase(s.begin());
    for (int64_t i = 0; i < n0; ++i) {
      for (int j = 0; j < 4; ++j) sub.offset[j] = c.offset[j] + i * c.strides[j][0];
      launch_collapsed(call, ops, nin, sub);
    }
    return;
  }
  std::array<Tensor, 4> holders;
  std::array<const Tensor*, 4> t{};
  for (int j = 0; j < 4; ++j) t[j] = &at_offset(ops[j] ? *ops[j] : *ops[0], ops[j] ? c.offset[j] : 0, holders[j]);
  double sf = 0;
  int64_t si = 0;
  if (call.scalar) {
    sf = call.scalar->to_double();
    if (auto* iv = std::get_if<int64_t>(&call.scalar->value)) si = *iv;
    else if (auto* bv = std::get_if<bool>(&call.scalar->value)) si = *bv;
    else si = static_cast<int64_t>(sf);
  }
  std::array<double, 3> ef{};
  std::array<int64_t, 3> ei{};
  int EXTRA = 0;
  for (int k = 0; k < detail::kExtraScalars; ++k) {
    if (!call.extra[k]) continue;
    EXTRA |= 1 << k;
    ef[k] = call.extra[k]->to_double();
    if (auto* iv = std::get_if<int64_t>(&call.extra[k]->value)) ei[k] = *iv;
    else if (auto* bv = std::get_if<bool>(&call.extra[k]->value)) ei[k] = *bv;
    else if (std::isfinite(ef[k]) && std::abs(ef[k]) < 9.2e18) ei[k] = static_cast<int64_t>(ef[k]);
  }
  const int OP = static_cast<int>(call.op), CDT = static_cast<int>(call.compute);
  const bool SCALAR = call.scalar.has_value();
  int64_t n = 1;
  for (int64_t s : c.sizes) n *= s;

  bool contiguous = c.sizes.size() <= 1;
  for (int j = 0; j < 4 && contiguous; ++j)
    if (ops[j] && !c.sizes.empty() && c.strides[j][0] != 1) contiguous = false;
  if (contiguous) {
    const int64_t block = contiguous_block(call.op, n);
    contiguous_kernel()[{cdiv(n, block)}](*t[0], *t[1], *t[2], *t[3], sf, si, ef[0], ef[1], ef[2], ei[0], ei[1],
                                          ei[2], n, OP, nin, SCALAR, CDT, call.param, EXTRA, static_cast<int>(block));
    return;
  }
  const int rank = static_cast<int>(c.sizes.size());
  const int64_t cols = c.sizes.back();
  const int64_t rows = n / cols;
  std::array<int64_t, 6> d{1, 1, 1, 1, 1, 1};
  std::array<std::array<int64_t, 7>, 4> s{};
  for (int k = 0; k < rank - 1; ++k) d[k] = c.sizes[k];
  for (int j = 0; j < 4; ++j) {
    if (!ops[j]) continue;
    for (int k = 0; k < rank - 1; ++k) s[j][k] = c.strides[j][k];
    s[j][6] = c.strides[j][rank - 1];
  }
  const int64_t tile = detail::default_block(n);
  int64_t bc = cols >= tile ? tile : std::max<int64_t>(16, pow4_ceil(cols));
  // On the CPU, an operand read down the columns (a transposed view: stride 1 along the rows, and
  // neither 1 nor 0 - a broadcast - along the columns) takes tiles 16 columns wide, which its
  // generator reads in transposed squares of 16 vectors (docs/cpu-backend.md) instead of a gather
  // a chunk. One thread, the
  // contiguous copy of a [1024, 1024] transpose: f32 3.59 ms with [1, 4096] tiles, 0.97 with
  // [256, 16], 1.85 with [128, 32], 3.17 with [64, 64]; bf16 2.54 / 0.43 / 0.96 / 2.21.
  bool transposing = false;
  for (int j = 1; j < 4 && rank >= 2; ++j)
    transposing |= ops[j] && s[j][6] != 1 && s[j][6] != 0 && s[j][rank - 2] == 1;
  if (transposing && t[0]->device().is_cpu() && cols > 16) bc = 16;
  int64_t br = std::max<int64_t>(1, std::min(tile / bc, pow4_ceil(rows)));
  // Transposed reads over more than one row dim (a permuted copy such as NCHW -> NHWC, rows = N x
  // HW): the rows are split by run-time divisions, so the analysis cannot see them run
  // contiguously and the squares above gather. On the CPU, tiles of BR consecutive rows of the
  // innermost row dim (ROW_RUNS: never crossing it, masked at its end) keep each tile inside it.
  // BR halves from the tile's rows while that wastes more than an eighth of the dim in masked
  // rows, down to 16 (a square). One thread, NCHW -> NHWC copies: [5, 64, 56, 56] f32 0.61-0.69
  // -> 0.31-0.52 ms, bf16 0.50-0.59 -> 0.12-0.15; [128, 32, 28, 28] f32 3.7-3.9 -> 2.7-3.3 (CPU
  // time, a loaded machine). Tiles had to divide the dim until stop 54: a 14 x 14 image (196
  // rows) took 4-row tiles, 64 elements a program - the CNN's [128, 32, 14, 14] copy at 3-6 GB/s.
  bool row_runs = false;
  int64_t grid = cdiv(rows, br) * cdiv(cols, bc);
  if (transposing && t[0]->device().is_cpu() && rank >= 3 && d[rank - 2] >= 4) {
    const int64_t din = d[rank - 2];
    int64_t b = br;
    auto waste = [&](int64_t bb) { return cdiv(din, bb) * bb - din; };
    while (b > 16 && waste(b) * 8 > din) b /= 2;
    while (b > din) b /= 2;
    if (b >= 4) {
      br = b, row_runs = true;
      grid = rows / din * cdiv(din, br) * cdiv(cols, bc);
    }
  }
  int col0 = 0, colr = 0;
  for (int j = 1; j < 4; ++j) col0 |= (ops[j] && s[j][6] == 0) << j, colr |= (ops[j] && s[j][6] == -1) << j;
  strided_kernel()[{grid}](*t[0], *t[1], *t[2], *t[3], sf, si, ef[0], ef[1], ef[2], ei[0], ei[1], ei[2], rows, cols,
                           d[0], d[1], d[2], d[3], d[4], d[5],                 //
                           s[0][0], s[0][1], s[0][2], s[0][3], s[0][4], s[0][5], s[0][6],
                           s[1][0], s[1][1], s[1][2], s[1][3], s[1][4], s[1][5], s[1][6],
                           s[2][0], s[2][1], s[2][2], s[2][3], s[2][4], s[2][5], s[2][6],
                           s[3][0], s[3][1], s[3][2], s[3][3], s[3][4], s[3][5], s[3][6],  //
                           OP, nin, SCALAR, CDT, call.param, EXTRA, rank, static_cast<int>(br),
                           static_cast<int>(bc), rows + br <= std::numeric_limits<int32_t>::max(), col0, colr, row_runs);
}

}  // namespace

namespace detail {

void run_elementwise(const EwCall& call, Tensor& out, const std::vector<const Tensor*>& inputs) {
  if (out.numel() == 0) return;
  // Operand slots: out, x, y, z. With a scalar, the tensors are x and z.
  std::array<const Tensor*, 4> ops{&out, nullptr, nullptr, nullptr};
  int nin = static_cast<int>(inputs.size()) + (call.scalar ? 1 : 0);
  if (call.scalar) {
    ops[1] = inputs.size() > 0 ? inputs[0] : nullptr;
    ops[3] = inputs.size() > 1 ? inputs[1] : nullptr;
  } else {
    for (size_t i = 0; i < inputs.size(); ++i) ops[i + 1] = inputs[i];
  }
  launch_collapsed(call, ops, nin, collapse(out.shape(), ops));
}

Tensor elementwise(const EwCall& call, DType out_dtype, const std::vector<const Tensor*>& inputs) {
  Device dev = check_tensors(call.name, inputs);
  Shape shape = inputs[0]->shape();
  for (size_t i = 1; i < inputs.size(); ++i) shape = broadcast_shapes(call.name, shape, inputs[i]->shape());
  Tensor out = Tensor::empty(shape, out_dtype, dev);
  run_elementwise(call, out, inputs);
  return out;
}

}  // namespace detail

// ---- type promotion (PyTorch's result_type) ------------------------------------------------------

namespace {

// PyTorch's three priorities: tensors with dims, zero-dim tensors, wrapped numbers. Within one,
// promote_types; across them a lower priority only counts when its kind (bool < int < float)
// is higher.
struct PromotionState {
  DType dim = DType::invalid, zero = DType::invalid, wrapped = DType::invalid;
  const char* op = "";
  void add(DType& slot, DType d) { slot = slot == DType::invalid ? d : detail::promote_types(op, slot, d); }
  void add(const Tensor& t) { add(t.dim() > 0 ? dim : zero, t.dtype()); }
  void add(const Scalar& s) { add(wrapped, detail::scalar_dtype(s)); }
  DType combine(DType higher, DType lower) const {
    if (higher == DType::invalid) return lower;
    if (lower == DType::invalid) return higher;
    if (is_float(higher)) return higher;
    if (higher == DType::i1 || is_float(lower)) return detail::promote_types(op, higher, lower);
    return higher;
  }
  DType result() const { return combine(dim, combine(zero, wrapped)); }
};

DType promote(const char* op, std::initializer_list<const Tensor*> ts, const Scalar* s = nullptr) {
  PromotionState st;
  st.op = op;
  for (const Tensor* t : ts) {
    if (!t->defined()) fail("{}: argument is an undefined tensor", op);
    st.add(*t);
  }
  if (s) st.add(*s);
  return st.result();
}

DType float_or_f32(DType d) { return is_float(d) ? d : DType::f32; }

}  // namespace

DType detail::promote_operands(const char* op, const std::vector<const Tensor*>& ts, const std::vector<Scalar>& scalars) {
  PromotionState st;
  st.op = op;
  for (const Tensor* t : ts)
    if (t->defined()) st.add(*t);
  for (const Scalar& s : scalars) st.add(s);
  return st.result();
}

namespace {

Tensor binary(const char* name, Ew op, const Tensor& a, const Tensor& b) {
  DType r = promote(name, {&a, &b});
  // PyTorch refuses a bool operand of a subtraction whatever the other one (bool - int included).
  if (op == Ew::sub && r != DType::i1 && (a.dtype() == DType::i1 || b.dtype() == DType::i1))
    fail("{}: subtraction with a bool tensor is not supported; use ~ or logical_not to invert a mask", name);
  if (r == DType::i1) {
    if (op == Ew::add) op = Ew::logical_or;
    else if (op == Ew::mul) op = Ew::logical_and;
    else if (op == Ew::sub)
      fail("{}: subtraction of two bool tensors is not supported; use logical_xor or ~ instead", name);
  }
  if (op == Ew::div) r = float_or_f32(r);
  return detail::elementwise(detail::ew_call(name, op, detail::math_type(r)), r, {&a, &b});
}

Tensor binary(const char* name, Ew op, const Tensor& a, const Scalar& b) {
  DType r = promote(name, {&a}, &b);
  if ((op == Ew::sub || op == Ew::rsub) && r != DType::i1 &&
      (a.dtype() == DType::i1 || std::holds_alternative<bool>(b.value)))
    fail("{}: subtraction with a bool tensor is not supported; use ~ or logical_not to invert a mask", name);
  if (r == DType::i1) {
    if (op == Ew::add) op = Ew::logical_or;
    else if (op == Ew::mul) op = Ew::logical_and;
    else if (op == Ew::sub || op == Ew::rsub)
      fail("{}: subtraction with a bool tensor and a bool is not supported", name);
  }
  if (op == Ew::div) r = float_or_f32(r);
  return detail::elementwise(detail::ew_call(name, op, detail::math_type(r), 0, b), r, {&a});
}

Tensor compare(const char* name, Ew op, const Tensor& a, const Tensor& b) {
  DType c = promote(name, {&a, &b});
  return detail::elementwise(detail::ew_call(name, op, c), DType::i1, {&a, &b});
}

Tensor compare(const char* name, Ew op, const Tensor& a, const Scalar& b) {
  DType c = promote(name, {&a}, &b);
  return detail::elementwise(detail::ew_call(name, op, c, 0, b), DType::i1, {&a});
}

// Float-valued unary ops (exp, log, ...): integers and bool compute in f32, as PyTorch.
Tensor unary_float(const char* name, Ew op, const Tensor& x) {
  detail::check_tensors(name, {&x});
  DType r = float_or_f32(x.dtype());
  return detail::elementwise(detail::ew_call(name, op, detail::math_type(r)), r, {&x});
}

Tensor backward2(const char* name, Ew op, const Tensor& grad, const Tensor& x) {
  detail::check_tensors(name, {&grad, &x});
  if (grad.shape() != x.shape())
    fail("{}: grad shape {} differs from input shape {}", name, shape_str(grad.shape()), shape_str(x.shape()));
  DType r = float_or_f32(promote(name, {&grad, &x}));
  return detail::elementwise(detail::ew_call(name, op, detail::math_type(r)), r, {&grad, &x});
}

}  // namespace

DType result_type(const Tensor& a, const Tensor& b) { return promote("result_type", {&a, &b}); }
DType result_type(const Tensor& a, Scalar b) { return promote("result_type", {&a}, &b); }

Tensor add(const Tensor& a, const Tensor& b) { return binary("add", Ew::add, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary("sub", Ew::sub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary("mul", Ew::mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary("div", Ew::div, a, b); }
Tensor add(const Tensor& a, Scalar b) { return binary("add", Ew::add, a, b); }
Tensor sub(const Tensor& a, Scalar b) { return binary("sub", Ew::sub, a, b); }
Tensor rsub(const Tensor& a, Scalar b) { return binary("rsub", Ew::rsub, a, b); }
Tensor mul(const Tensor& a, Scalar b) { return binary("mul", Ew::mul, a, b); }
Tensor div(const Tensor& a, Scalar b) { return binary("div", Ew::div, a, b); }

Tensor pow(const Tensor& a, Scalar exponent) {
  DType r = promote("pow", {&a}, &exponent);
  double e = exponent.to_double();
  bool integral = !std::holds_alternative<double>(exponent.value) || (std::isfinite(e) && e == std::floor(e));
  if (!is_float(r)) {
    if (r == DType::i1) r = DType::i64;  // bool ** int: PyTorch gives an integer
    if (!integral) fail("pow: exponent {} is not an integer for a {} tensor", e, dtype_name(a.dtype()));
    if (e < 0) fail("pow: integers to negative integer powers are not allowed (exponent {})", e);
    if (e > 64) fail("pow: integer exponent {} is too large (at most 64)", e);
  }
  if (integral && std::abs(e) <= 64)
    return detail::elementwise(
        detail::ew_call("pow", Ew::pow_int, detail::math_type(r), static_cast<int>(e)), r, {&a});
  return detail::elementwise(detail::ew_call("pow", Ew::pow_float, detail::math_type(r), 0, Scalar(e)),
                             r, {&a});
}

Tensor neg(const Tensor& x) {
  detail::check_tensors("neg", {&x});
  if (x.dtype() == DType::i1) fail("neg: negation of a bool tensor is not supported; use logical_not instead");
  return detail::elementwise(detail::ew_call("neg", Ew::neg, detail::math_type(x.dtype())), x.dtype(), {&x});
}
Tensor exp(const Tensor& x) { return unary_float("exp", Ew::exp, x); }
Tensor log(const Tensor& x) { return unary_float("log", Ew::log, x); }
Tensor sqrt(const Tensor& x) { return unary_float("sqrt", Ew::sqrt, x); }
Tensor tanh(const Tensor& x) { return unary_float("tanh", Ew::tanh, x); }
Tensor sigmoid(const Tensor& x) { return unary_float("sigmoid", Ew::sigmoid, x); }
Tensor gelu(const Tensor& x) { return unary_float("gelu", Ew::gelu, x); }
Tensor relu(const Tensor& x) {
  detail::check_tensors("relu", {&x});
  if (x.dtype() == DType::i1) fail("relu: not supported on bool tensors");
  return detail::elementwise(detail::ew_call("relu", Ew::relu, detail::math_type(x.dtype())), x.dtype(), {&x});
}

Tensor eq(const Tensor& a, const Tensor& b) { return compare("eq", Ew::eq, a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return compare("ne", Ew::ne, a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return compare("lt", Ew::lt, a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return compare("le", Ew::le, a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return compare("gt", Ew::gt, a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return compare("ge", Ew::ge, a, b); }
Tensor eq(const Tensor& a, Scalar b) { return compare("eq", Ew::eq, a, b); }
Tensor gt(const Tensor& a, Scalar b) { return compare("gt", Ew::gt, a, b); }
Tensor lt(const Tensor& a, Scalar b) { return compare("lt", Ew::lt, a, b); }

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  detail::check_tensors("where", {&cond, &a, &b});
  if (cond.dtype() != DType::i1) fail("where: the condition must be a bool tensor, got {}", dtype_name(cond.dtype()));
  DType r = promote("where", {&a, &b});
  return detail::elementwise(detail::ew_call("where", Ew::where, detail::math_type(r)), r, {&cond, &a, &b});
}

Tensor relu_backward(const Tensor& grad, const Tensor& x) { return backward2("relu_backward", Ew::relu_bw, grad, x); }
Tensor gelu_backward(const Tensor& grad, const Tensor& x) { return backward2("gelu_backward", Ew::gelu_bw, grad, x); }
Tensor tanh_backward(const Tensor& grad, const Tensor& y) { return backward2("tanh_backward", Ew::tanh_bw, grad, y); }
Tensor sigmoid_backward(const Tensor& grad, const Tensor& y) {
  return backward2("sigmoid_backward", Ew::sigmoid_bw, grad, y);
}

}  // namespace tritium::ops
