#include "jit/passes/axis_info.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "ir/printer.h"

namespace tritium::jit {
namespace {

using ir::Op;
using ir::OpKind;
using ir::Value;

constexpr int64_t kMax = AxisInfo::kMaxDivisor;
constexpr int64_t kNoStride = AxisInfo::kNoStride;

int64_t pow2_divisor(int64_t n) {
  if (n == 0) return kMax;
  uint64_t u = static_cast<uint64_t>(n);
  return static_cast<int64_t>(std::min<uint64_t>(u & (~u + 1), kMax));
}

int64_t multiply_divisor(int64_t a, int64_t b) { return a > kMax / b ? kMax : a * b; }

int64_t gcd3(int64_t a, int64_t b, int64_t c) { return std::gcd(std::gcd(a, b), c); }

size_t dims_of(const ir::Type& t) { return std::max<size_t>(1, t.shape.size()); }
int64_t dim_size(const ir::Type& t, size_t d) { return t.shape.empty() ? 1 : t.shape[d]; }

// Divisor of the values at indices that are multiples of `stride` along d. `unit` is what one
// step of a run adds: 1 for integers, the element size in bytes for pointers.
int64_t divisor_at_stride(const AxisInfo& a, size_t d, int64_t stride, int64_t unit = 1) {
  int64_t run = a.contiguity[d];
  if (run == 1) return a.divisibility[d];
  int64_t g = std::gcd(stride, run);
  if (g == run) return a.divisibility[d];  // every such index starts a run
  return std::min(a.divisibility[d], multiply_divisor(pow2_divisor(g), unit));  // run start + g*k steps
}

int64_t unit_of(const ir::Type& t) { return t.is_ptr() ? std::max(1, dtype_bytes(t.pointee)) : 1; }

// Divisor of every element: a dim with contiguity 1 says it about all of them.
int64_t divisor_of_every_element(const AxisInfo& a) {
  if (a.constant) return pow2_divisor(*a.constant);
  int64_t best = 1;
  for (size_t d = 0; d < a.dims(); ++d)
    if (a.contiguity[d] == 1) best = std::max(best, a.divisibility[d]);
  return best;
}

// The information true of a value that is either a or b.
AxisInfo join(const AxisInfo& a, const AxisInfo& b, int64_t unit) {
  AxisInfo r = AxisInfo::unknown(a.dims());
  for (size_t d = 0; d < a.dims(); ++d) {
    r.contiguity[d] = std::gcd(a.contiguity[d], b.contiguity[d]);
    r.divisibility[d] =
        std::gcd(divisor_at_stride(a, d, r.contiguity[d], unit), divisor_at_stride(b, d, r.contiguity[d], unit));
    r.constancy[d] = std::gcd(a.constancy[d], b.constancy[d]);
    r.stride[d] = a.stride[d] == b.stride[d] ? a.stride[d] : kNoStride;
  }
  if (a.constant && a.constant == b.constant) r.constant = a.constant;
  return r;
}

bool is_cmp(OpKind k) { return k >= OpKind::CmpEq && k <= OpKind::CmpGe; }

// ---- strides (AxisInfo::stride: the likely step between neighbours) ----------------------------

constexpr int64_t kStrideLimit = int64_t{1} << 40;  // larger steps are as good as unknown

int64_t stride_or_none(int64_t s) { return s == kNoStride || s > kStrideLimit || s < -kStrideLimit ? kNoStride : s; }
int64_t stride_add(int64_t a, int64_t b) { return a == kNoStride || b == kNoStride ? kNoStride : stride_or_none(a + b); }
int64_t stride_scale(int64_t s, int64_t c) {
  if (s == 0 || c == 0) return 0;
  if (s == kNoStride || c > kStrideLimit || c < -kStrideLimit) return kNoStride;
  return stride_or_none(s * c);
}
// x / c for a known divisor c > 0, or 0 for a run-time divisor (assumed larger than the step: it
// is a size, and a divisor of 1 would be a constant by specialisation).
int64_t stride_div(int64_t s, std::optional<int64_t> c) {
  if (s == 0) return 0;
  if (s == kNoStride) return kNoStride;
  if (!c) return 0;
  if (*c <= 0) return kNoStride;
  if (s % *c == 0) return s / *c;
  return s < *c && s > -*c ? 0 : kNoStride;
}
// x % c: the dividend's step between wrap-arounds.
int64_t stride_rem(int64_t s, std::optional<int64_t> c) {
  if (s == 0 || s == kNoStride || !c) return s;
  if (*c == 0) return kNoStride;
  if (s % *c == 0) return 0;
  return s < *c && s > -*c ? s : kNoStride;
}

std::optional<int64_t> fold(OpKind k, bool is_unsigned, int64_t a, int64_t b) {
  uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  switch (k) {
    case OpKind::Add: return static_cast<int64_t>(ua + ub);
    case OpKind::Sub: return static_cast<int64_t>(ua - ub);
    case OpKind::Mul: return static_cast<int64_t>(ua * ub);
    case OpKind::Div:
    case OpKind::Rem:
      if (b == 0 || (!is_unsigned && b == -1)) return std::nullopt;
      if (is_unsigned) return static_cast<int64_t>(k == OpKind::Div ? ua / ub : ua % ub);
      return k == OpKind::Div ? a / b : a % b;
    case OpKind::And: return a & b;
    case OpKind::Or: return a | b;
    case OpKind::Xor: return a ^ b;
    case OpKind::Shl: return b >= 0 && b < 64 ? std::optional(static_cast<int64_t>(ua << b)) : std::nullopt;
    case OpKind::Shr:
      if (b < 0 || b >= 64) return std::nullopt;
      return is_unsigned ? static_cast<int64_t>(ua >> b) : a >> b;
    case OpKind::Min: return is_unsigned ? static_cast<int64_t>(std::min(ua, ub)) : std::min(a, b);
    case OpKind::Max: return is_unsigned ? static_cast<int64_t>(std::max(ua, ub)) : std::max(a, b);
    case OpKind::CmpEq: return a == b;
    case OpKind::CmpNe: return a != b;
    case OpKind::CmpLt: return is_unsigned ? ua < ub : a < b;
    case OpKind::CmpLe: return is_unsigned ? ua <= ub : a <= b;
    case OpKind::CmpGt: return is_unsigned ? ua > ub : a > b;
    case OpKind::CmpGe: return is_unsigned ? ua >= ub : a >= b;
    default: return std::nullopt;
  }
}

class Analysis {
 public:
  explicit Analysis(AxisInfoMap& map) : map_(map) {}

  void block(const ir::Block& b) {
    for (const Op* op : b.ops) this->op(*op);
  }

 private:
  const AxisInfo& info(const Value* v) const { return map_.get(v); }

  void op(const Op& op) {
    switch (op.kind) {
      case OpKind::For: return for_loop(op);
      case OpKind::If: return if_branch(op);
      case OpKind::Reduce:
      case OpKind::Scan:
      case OpKind::While:  // carried values may be anything after a trip
        for (const ir::Block* r : op.regions) {
          for (const Value* a : r->args) map_.set(a, AxisInfo::unknown(dims_of(a->type)));
          block(*r);
        }
        for (const Value* v : op.results) map_.set(v, AxisInfo::unknown(dims_of(v->type)));
        return;
      default:
        break;
    }
    if (op.results.empty()) return;
    if (op.results.size() != 1) {
      for (const Value* v : op.results) map_.set(v, AxisInfo::unknown(dims_of(v->type)));
      return;
    }
    map_.set(op.result(), normalised(infer(op), op.result()->type));
  }

  // Keeps runs within the shape and makes constants and floats say what they are.
  static AxisInfo normalised(AxisInfo a, const ir::Type& t) {
    size_t n = dims_of(t);
    if (a.dims() != n) a = AxisInfo::unknown(n);
    bool numeric = is_int(t.dtype) || t.is_ptr();
    if (!numeric) a.constant.reset();
    for (size_t d = 0; d < n; ++d) {
      int64_t size = dim_size(t, d);
      if (a.constant) {
        a.contiguity[d] = 1;
        a.divisibility[d] = pow2_divisor(*a.constant);
        a.constancy[d] = size;
      }
      if (!numeric) {
        a.contiguity[d] = 1;
        a.divisibility[d] = 1;
      }
      a.contiguity[d] = std::clamp<int64_t>(a.contiguity[d], 1, size);
      a.constancy[d] = std::clamp<int64_t>(a.constancy[d], 1, size);
      a.divisibility[d] = std::clamp<int64_t>(a.divisibility[d], 1, kMax);
      // What runs prove wins over the guess: a run steps by one unit, a constant dim by none.
      if (!numeric) a.stride[d] = kNoStride;
      if (a.contiguity[d] > 1) a.stride[d] = unit_of(t);
      if (a.constancy[d] == size) a.stride[d] = 0;
    }
    return a;
  }

  // Unknown values whose runs of equal values are at least those common to all operands.
  AxisInfo constancy_only(const Op& op) const {
    AxisInfo r = AxisInfo::unknown(dims_of(op.result()->type));
    for (const Value* v : op.operands) {
      const AxisInfo& a = info(v);
      if (a.dims() != r.dims()) return AxisInfo::unknown(r.dims());
      for (size_t d = 0; d < r.dims(); ++d) {
        r.constancy[d] = v == op.operands.front() ? a.constancy[d] : std::gcd(r.constancy[d], a.constancy[d]);
        r.stride[d] = v == op.operands.front() || r.stride[d] == 0 ? (a.stride[d] == 0 ? 0 : kNoStride) : kNoStride;
      }
    }
    return r;
  }

  AxisInfo infer(const Op& op) const {
    const ir::Type& t = op.result()->type;
    size_t n = dims_of(t);
    switch (op.kind) {
      case OpKind::Constant: {
        AxisInfo r = AxisInfo::unknown(n);
        if (!is_float(t.dtype)) r.constant = op.attrs.ival;
        for (size_t d = 0; d < n; ++d) r.constancy[d] = dim_size(t, d);
        return r;
      }
      case OpKind::Arange: {
        AxisInfo r = AxisInfo::unknown(1);
        r.contiguity[0] = op.attrs.ints[1] - op.attrs.ints[0];
        r.divisibility[0] = pow2_divisor(op.attrs.ints[0]);
        r.stride[0] = 1;
        return r;
      }
      case OpKind::Splat: {
        const AxisInfo& s = info(op.operand(0));
        AxisInfo r = AxisInfo::unknown(n);
        for (size_t d = 0; d < n; ++d) {
          r.divisibility[d] = s.divisibility[0];
          r.constancy[d] = dim_size(t, d);
          r.stride[d] = 0;
        }
        r.constant = s.constant;
        return r;
      }
      case OpKind::Broadcast: {
        const AxisInfo& x = info(op.operand(0));
        const ir::Type& in = op.operand(0)->type;
        AxisInfo r = x;
        for (size_t d = 0; d < n; ++d)
          if (dim_size(in, d) == 1) r.constancy[d] = dim_size(t, d), r.stride[d] = 0;
        return r;
      }
      case OpKind::ExpandDims: return expand_dims(op);
      case OpKind::Reshape: return reshape(op);
      case OpKind::Permute: {
        const AxisInfo& x = info(op.operand(0));
        AxisInfo r = AxisInfo::unknown(n);
        for (size_t d = 0; d < n; ++d) {
          auto from = static_cast<size_t>(op.attrs.ints[d]);
          r.contiguity[d] = x.contiguity[from];
          r.divisibility[d] = x.divisibility[from];
          r.constancy[d] = x.constancy[from];
          r.stride[d] = x.stride[from];
        }
        r.constant = x.constant;
        return r;
      }
      case OpKind::ConvertLayout: return info(op.operand(0));  // the same values, elsewhere
      case OpKind::MultipleOf:
      case OpKind::MaxContiguous: {
        AxisInfo r = info(op.operand(0));
        for (size_t d = 0; d < n && d < op.attrs.ints.size(); ++d) {
          if (op.kind == OpKind::MultipleOf) {
            r.divisibility[d] = std::max(r.divisibility[d], op.attrs.ints[d]);
          } else {
            r.contiguity[d] = std::max(r.contiguity[d], op.attrs.ints[d]);
            if (r.contiguity[d] > 1) r.constancy[d] = 1;
          }
        }
        return r;
      }
      case OpKind::Add: case OpKind::Sub: case OpKind::AddPtr: return add_sub(op);
      case OpKind::Mul: return mul(op);
      case OpKind::Div: case OpKind::Shr: return div(op);
      case OpKind::Rem: return rem(op);
      case OpKind::Shl: return shl(op);
      case OpKind::And: case OpKind::Or: case OpKind::Xor: case OpKind::Min: case OpKind::Max:
        return bitwise_or_minmax(op);
      case OpKind::Select: return select(op);
      case OpKind::Neg: case OpKind::Abs: {
        AxisInfo r = constancy_only(op);
        const AxisInfo& x = info(op.operand(0));
        for (size_t d = 0; d < n; ++d) r.divisibility[d] = divisor_at_stride(x, d, 1);
        for (size_t d = 0; d < n && op.kind == OpKind::Neg; ++d) r.stride[d] = stride_scale(x.stride[d], -1);
        if (x.constant && op.kind == OpKind::Neg) r.constant = -*x.constant;
        if (x.constant && op.kind == OpKind::Abs) r.constant = *x.constant < 0 ? -*x.constant : *x.constant;
        return r;
      }
      case OpKind::Cast: case OpKind::Bitcast: return cast(op);
      case OpKind::Load: return constancy_only(op);  // equal pointers load equal values
      default:
        if (is_cmp(op.kind)) return compare(op);
        if (ir::is_elementwise(op.kind)) return constancy_only(op);
        return AxisInfo::unknown(n);
    }
  }

  AxisInfo expand_dims(const Op& op) const {
    const AxisInfo& x = info(op.operand(0));
    if (op.operand(0)->type.is_scalar()) return x;  // [1] from a scalar: the same one entry
    AxisInfo r = x;
    auto at = static_cast<size_t>(op.attrs.axis);
    r.contiguity.insert(r.contiguity.begin() + at, 1);
    r.divisibility.insert(r.divisibility.begin() + at, divisor_of_every_element(x));
    r.constancy.insert(r.constancy.begin() + at, 1);
    r.stride.insert(r.stride.begin() + at, 0);
    return r;
  }

  // Exact when the reshape only adds or drops size-1 dims; otherwise only what holds for every
  // element survives.
  AxisInfo reshape(const Op& op) const {
    const AxisInfo& x = info(op.operand(0));
    const ir::Shape& in = op.operand(0)->type.shape;
    const ir::Shape& out = op.result()->type.shape;
    AxisInfo r = AxisInfo::unknown(out.size());
    r.constant = x.constant;
    int64_t every = divisor_of_every_element(x);
    for (auto& d : r.divisibility) d = every;
    std::vector<size_t> in_dims, out_dims;
    for (size_t d = 0; d < in.size(); ++d)
      if (in[d] != 1) in_dims.push_back(d);
    for (size_t d = 0; d < out.size(); ++d)
      if (out[d] != 1) out_dims.push_back(d);
    bool same = in_dims.size() == out_dims.size();
    for (size_t i = 0; same && i < in_dims.size(); ++i) same = in[in_dims[i]] == out[out_dims[i]];
    if (!same) return r;
    for (size_t i = 0; i < in_dims.size(); ++i) {
      r.contiguity[out_dims[i]] = x.contiguity[in_dims[i]];
      r.divisibility[out_dims[i]] = x.divisibility[in_dims[i]];
      r.constancy[out_dims[i]] = x.constancy[in_dims[i]];
      r.stride[out_dims[i]] = x.stride[in_dims[i]];
    }
    return r;
  }

  std::optional<int64_t> fold_constants(const Op& op) const {
    std::vector<int64_t> values;
    for (const Value* v : op.operands) {
      const AxisInfo& a = info(v);
      if (!a.constant) return std::nullopt;
      values.push_back(*a.constant);
    }
    if (values.size() != 2) return std::nullopt;
    bool is_unsigned = !is_signed_int(op.operand(0)->type.dtype);
    return fold(op.kind, is_unsigned, values[0], values[1]);
  }

  // Pointer arithmetic counts offsets in elements; divisibility of pointers is in bytes.
  int64_t offset_scale(const Op& op) const {
    return op.kind == OpKind::AddPtr ? std::max(1, dtype_bytes(op.operand(0)->type.pointee)) : 1;
  }

  AxisInfo add_sub(const Op& op) const {
    const AxisInfo& l = info(op.operand(0));
    const AxisInfo& r = info(op.operand(1));
    int64_t scale = offset_scale(op);
    int64_t unit = unit_of(op.operand(0)->type);
    AxisInfo out = AxisInfo::unknown(l.dims());
    for (size_t d = 0; d < l.dims(); ++d) {
      // A run plus (or minus) something constant over the run stays a run; constant minus a run
      // goes down, not up.
      int64_t run = std::gcd(l.contiguity[d], r.constancy[d]);
      if (op.kind != OpKind::Sub) run = std::max(run, std::gcd(l.constancy[d], r.contiguity[d]));
      out.contiguity[d] = run;
      out.divisibility[d] =
          std::gcd(divisor_at_stride(l, d, run, unit), multiply_divisor(divisor_at_stride(r, d, run), scale));
      out.constancy[d] = std::gcd(l.constancy[d], r.constancy[d]);
      out.stride[d] = stride_add(l.stride[d], stride_scale(r.stride[d], op.kind == OpKind::Sub ? -scale : scale));
    }
    if (l.constant && r.constant) {
      uint64_t a = static_cast<uint64_t>(*l.constant), b = static_cast<uint64_t>(*r.constant) * scale;
      out.constant = static_cast<int64_t>(op.kind == OpKind::Sub ? a - b : a + b);
    }
    return out;
  }

  AxisInfo mul(const Op& op) const {
    const AxisInfo& l = info(op.operand(0));
    const AxisInfo& r = info(op.operand(1));
    if (r.constant == 1) return l;
    if (l.constant == 1) return r;
    AxisInfo out = AxisInfo::unknown(l.dims());
    for (size_t d = 0; d < l.dims(); ++d) {
      out.divisibility[d] = multiply_divisor(divisor_at_stride(l, d, 1), divisor_at_stride(r, d, 1));
      out.constancy[d] = std::gcd(l.constancy[d], r.constancy[d]);
      if (r.constant) out.stride[d] = stride_scale(l.stride[d], *r.constant);
      else if (l.constant) out.stride[d] = stride_scale(r.stride[d], *l.constant);
      else if (l.stride[d] == 0 && r.stride[d] == 0) out.stride[d] = 0;
    }
    out.constant = fold_constants(op);
    return out;
  }

  // Division by a positive constant c (Shr by k is division by 2^k). A run starting at a
  // multiple of D only crosses multiples of c at offsets that are multiples of gcd(D, c).
  AxisInfo div(const Op& op) const {
    const AxisInfo& l = info(op.operand(0));
    const AxisInfo& r = info(op.operand(1));
    int64_t divisor = r.constant.value_or(0);  // 0: not a known constant
    if (op.kind == OpKind::Shr)
      divisor = r.constant && *r.constant >= 0 && *r.constant < 62 ? int64_t{1} << *r.constant : 0;
    if (divisor == 1) return l;
    AxisInfo out = AxisInfo::unknown(l.dims());
    for (size_t d = 0; d < l.dims(); ++d) {
      out.constancy[d] = std::gcd(l.constancy[d], r.constancy[d]);
      if (divisor > 0) out.stride[d] = stride_div(l.stride[d], divisor);
      else if (r.stride[d] == 0 && !r.constant) out.stride[d] = stride_div(l.stride[d], std::nullopt);
      if (divisor > 0) {
        int64_t c = divisor;
        int64_t crossing = std::gcd(l.divisibility[d], pow2_divisor(c));
        out.constancy[d] = std::max(out.constancy[d], std::gcd(l.contiguity[d], crossing));
        // Every element s + j (j < run <= c, c | D) divides down to s / c.
        if (c == pow2_divisor(c) && l.divisibility[d] % c == 0 && l.contiguity[d] <= c)
          out.divisibility[d] = std::max<int64_t>(1, l.divisibility[d] / c);
      }
    }
    out.constant = fold_constants(op);
    return out;
  }

  AxisInfo rem(const Op& op) const {
    const AxisInfo& l = info(op.operand(0));
    const AxisInfo& r = info(op.operand(1));
    AxisInfo out = AxisInfo::unknown(l.dims());
    for (size_t d = 0; d < l.dims(); ++d) {
      // Wrap-arounds of a run happen at offsets that are multiples of gcd(D_lhs, D_rhs).
      int64_t wrap = std::gcd(l.divisibility[d], divisor_at_stride(r, d, 1));
      int64_t run = gcd3(l.contiguity[d], wrap, r.constancy[d]);
      out.contiguity[d] = run;
      out.divisibility[d] = std::gcd(divisor_at_stride(l, d, run), divisor_at_stride(r, d, run));
      out.constancy[d] = std::gcd(l.constancy[d], r.constancy[d]);
      if (r.stride[d] == 0) out.stride[d] = stride_rem(l.stride[d], r.constant);
    }
    out.constant = fold_constants(op);
    return out;
  }

  AxisInfo shl(const Op& op) const {
    const AxisInfo& l = info(op.operand(0));
    const AxisInfo& r = info(op.operand(1));
    if (r.constant == 0) return l;
    AxisInfo out = constancy_only(op);
    if (r.constant && *r.constant > 0 && *r.constant < 62)
      for (size_t d = 0; d < l.dims(); ++d) {
        out.divisibility[d] = multiply_divisor(divisor_at_stride(l, d, 1), int64_t{1} << *r.constant);
        out.stride[d] = stride_scale(l.stride[d], int64_t{1} << *r.constant);
      }
    out.constant = fold_constants(op);
    return out;
  }

  AxisInfo bitwise_or_minmax(const Op& op) const {
    const AxisInfo& l = info(op.operand(0));
    const AxisInfo& r = info(op.operand(1));
    AxisInfo out = constancy_only(op);
    for (size_t d = 0; d < l.dims(); ++d) {
      int64_t a = divisor_at_stride(l, d, 1), b = divisor_at_stride(r, d, 1);
      // x & y keeps the low zero bits of either; or, xor, min and max only the common ones.
      out.divisibility[d] = op.kind == OpKind::And ? std::max(a, b) : std::gcd(a, b);
    }
    out.constant = fold_constants(op);
    return out;
  }

  AxisInfo compare(const Op& op) const {
    const AxisInfo& l = info(op.operand(0));
    const AxisInfo& r = info(op.operand(1));
    AxisInfo out = constancy_only(op);
    // A run compared with a value constant over it flips once, at an aligned offset, for
    // run < n and run >= n (n > run and n <= run when the run is on the right).
    OpKind k = op.kind;
    const AxisInfo* run = nullptr;
    const AxisInfo* bound = nullptr;
    if (k == OpKind::CmpLt || k == OpKind::CmpGe) run = &l, bound = &r;
    if (k == OpKind::CmpGt || k == OpKind::CmpLe) run = &r, bound = &l;
    if (run)
      for (size_t d = 0; d < l.dims(); ++d) {
        // Pointers: a run moves by whole elements, so flips sit at element offsets dividing this.
        int64_t flip = std::gcd(run->divisibility[d], divisor_at_stride(*bound, d, 1)) / unit_of(op.operand(0)->type);
        flip = std::max<int64_t>(flip, 1);
        int64_t same = gcd3(run->contiguity[d], flip, bound->constancy[d]);
        out.constancy[d] = std::max(out.constancy[d], same);
      }
    out.constant = fold_constants(op);
    return out;
  }

  AxisInfo select(const Op& op) const {
    const AxisInfo& c = info(op.operand(0));
    const AxisInfo& a = info(op.operand(1));
    const AxisInfo& b = info(op.operand(2));
    if (c.constant) return *c.constant ? a : b;
    int64_t unit = unit_of(op.result()->type);
    AxisInfo out = AxisInfo::unknown(a.dims());
    for (size_t d = 0; d < a.dims(); ++d) {
      int64_t run = gcd3(a.contiguity[d], b.contiguity[d], c.constancy[d]);
      out.contiguity[d] = run;
      out.divisibility[d] = std::gcd(divisor_at_stride(a, d, run, unit), divisor_at_stride(b, d, run, unit));
      out.constancy[d] = gcd3(a.constancy[d], b.constancy[d], c.constancy[d]);
      out.stride[d] = c.stride[d] == 0 && a.stride[d] == b.stride[d] ? a.stride[d] : kNoStride;
    }
    if (a.constant && a.constant == b.constant) out.constant = a.constant;
    return out;
  }

  AxisInfo cast(const Op& op) const {
    const ir::Type& from = op.operand(0)->type;
    const ir::Type& to = op.result()->type;
    bool widening_int = is_int(from.dtype) && is_int(to.dtype) && dtype_bits(to.dtype) >= dtype_bits(from.dtype) &&
                        (from.dtype == DType::i1 || is_signed_int(from.dtype) == is_signed_int(to.dtype));
    bool pointer_int = (from.is_ptr() || to.is_ptr()) && dtype_bits(from.dtype) == dtype_bits(to.dtype) &&
                       !is_float(from.dtype) && !is_float(to.dtype);
    if (widening_int) return info(op.operand(0));
    if (!pointer_int) {
      AxisInfo r = constancy_only(op);
      // Narrowing integers keep their steps as long as nothing wraps (assumed, as everywhere).
      if (is_int(from.dtype) && is_int(to.dtype)) r.stride = info(op.operand(0)).stride;
      return r;
    }
    // An address and a 64-bit integer share their bits, so divisibility (bytes = units) and
    // constancy carry over; a run counts steps of one element of the value's own type, so it
    // survives only between types that step by the same number of bytes (an i64 run is a run of
    // byte addresses, not of f16 ones).
    const AxisInfo& x = info(op.operand(0));
    if (unit_of(from) == unit_of(to)) return x;
    AxisInfo r = x;
    for (size_t d = 0; d < r.dims(); ++d) {
      r.divisibility[d] = divisor_at_stride(x, d, 1, unit_of(from));
      r.contiguity[d] = 1;
    }
    return r;
  }

  void for_loop(const Op& op) {
    const ir::Block& body = *op.regions.at(0);
    const AxisInfo& lb = info(op.operand(0));
    const AxisInfo& step = info(op.operand(2));
    AxisInfo iv = AxisInfo::unknown(1);
    iv.divisibility[0] = std::gcd(lb.divisibility[0], step.divisibility[0]);
    iv.stride[0] = 0;  // a scalar
    map_.set(body.args.at(0), iv);

    std::vector<AxisInfo> carried;
    for (size_t i = 3; i < op.operands.size(); ++i) carried.push_back(info(op.operands[i]));
    const Op* yield = body.ops.empty() || body.ops.back()->kind != OpKind::Yield ? nullptr : body.ops.back();
    // Start from the inits and weaken with what the body yields until nothing changes; every
    // step lowers some gcd, so this ends, but give up (to "unknown") after a bound.
    constexpr int kMaxRounds = 32;
    bool stable = false;
    for (int round = 0; round < kMaxRounds && !stable; ++round) {
      for (size_t i = 0; i < carried.size(); ++i) map_.set(body.args.at(i + 1), carried[i]);
      block(body);
      stable = true;
      for (size_t i = 0; i < carried.size() && yield; ++i) {
        AxisInfo joined = join(carried[i], info(yield->operand(i)), unit_of(op.results[i]->type));
        if (joined != carried[i]) carried[i] = std::move(joined), stable = false;
      }
    }
    if (!stable) {
      for (size_t i = 0; i < carried.size(); ++i) {
        carried[i] = AxisInfo::unknown(carried[i].dims());
        map_.set(body.args.at(i + 1), carried[i]);
      }
      block(body);
    }
    for (size_t i = 0; i < op.results.size(); ++i) map_.set(op.results[i], carried.at(i));
  }

  void if_branch(const Op& op) {
    for (const ir::Block* r : op.regions) block(*r);
    const AxisInfo& cond = info(op.operand(0));
    for (size_t i = 0; i < op.results.size(); ++i) {
      auto yielded = [&](int region) -> const AxisInfo& { return info(op.regions.at(region)->ops.back()->operand(i)); };
      AxisInfo r = cond.constant ? yielded(*cond.constant ? 0 : 1)
                                 : join(yielded(0), yielded(1), unit_of(op.results[i]->type));
      map_.set(op.results[i], std::move(r));
    }
  }

  AxisInfoMap& map_;
};

}  // namespace

AxisInfo AxisInfo::unknown(size_t dims) {
  return AxisInfo{std::vector<int64_t>(dims, 1), std::vector<int64_t>(dims, 1), std::vector<int64_t>(dims, 1),
                  std::vector<int64_t>(dims, kNoStride), {}};
}

std::string AxisInfo::str() const {
  std::string s = fmt::format("{{contiguity=[{}], divisibility=[{}], constancy=[{}]", fmt::join(contiguity, ", "),
                              fmt::join(divisibility, ", "), fmt::join(constancy, ", "));
  std::vector<std::string> st;
  for (int64_t x : stride) st.push_back(x == kNoStride ? "?" : std::to_string(x));
  s += fmt::format(", stride=[{}]", fmt::join(st, ", "));
  if (constant) s += fmt::format(", constant={}", *constant);
  return s + "}";
}

const AxisInfo& AxisInfoMap::get(const ir::Value* v) const {
  auto it = infos_.find(v);
  if (it == infos_.end()) throw Error(fmt::format("axis info: value {} was not analysed", ir::print_value(v)));
  return it->second;
}

AxisInfoMap analyze_axis_info(ir::Function& f) {
  AxisInfoMap map;
  for (size_t i = 0; i < f.body->args.size(); ++i) {
    AxisInfo a = AxisInfo::unknown(1);
    if (i < f.params.size()) a.divisibility[0] = std::max(1, f.params[i].divisibility);
    a.stride[0] = 0;  // a scalar
    map.set(f.body->args[i], a);
  }
  Analysis(map).block(*f.body);
  return map;
}

int64_t vector_width(const AxisInfoMap& info, const ir::Op& op, int64_t max_bytes) {
  if (op.operands.empty()) return 1;
  const Value* ptr = op.operand(0);
  if (!ptr->type.is_ptr() || ptr->type.is_scalar()) return 1;
  const AxisInfo& p = info.get(ptr);
  int64_t elem = std::max(1, dtype_bytes(ptr->type.pointee));
  int64_t width = pow2_divisor(p.contiguity.back());
  width = std::min(width, std::max<int64_t>(1, p.divisibility.back() / elem));
  width = std::min(width, std::max<int64_t>(1, max_bytes / elem));
  const Value* mask = nullptr;
  if (op.kind == OpKind::Load && op.operands.size() >= 2) mask = op.operand(1);
  if (op.kind != OpKind::Load && op.kind != OpKind::AtomicCas && op.operands.size() == 3) mask = op.operand(2);
  if (mask) width = std::min(width, pow2_divisor(info.get(mask).constancy.back()));
  return width;
}

}  // namespace tritium::jit
