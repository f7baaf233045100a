// Loads whose lanes read a fixed pattern of nearby elements (docs/cpu-backend.md, "Lane patterns"):
// a pooling window's stride-2 columns (lane l reads p0 + 2 l), the backward's shared window
// (p0 + l / 2), a reversed row (p0 - l). Axis info calls these neither contiguous nor constant, so
// they were gathers (16 element loads a chunk, plus a vector division per lane when the index
// divides). The generator derives the pattern from the index arithmetic at compile time. Without
// a division the pattern is exact (integer arithmetic assumed not to wrap, as axis info assumes)
// and each chunk loads the span it covers with one or a few vector loads and permutes it into the
// lanes. With one it assumes what axis info cannot prove (that the chunk's first index is a
// multiple of each divisor), so each chunk first checks at run time that its addresses are
// exactly the first lane's plus the pattern (lanes off take `other`, as in the gather). A chunk that fails the check gathers as
// before: the result is the gather's in every case.
#include "jit/cpu/codegen_impl.h"

namespace tritium::jit::cpu::detail {

namespace {

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

// The most elements a pattern's span may cover (one load of up to four 512-bit registers).
constexpr int64_t kMaxSpanBytes = 256;
// The most values one pattern's walk visits (index trees are a few dozen ops).
constexpr int kMaxPatternWalk = 200;

}  // namespace

std::optional<Codegen::LanePattern> Codegen::lane_pattern(const ir::Value* v, const Index& idx, int w) {
  PatternWalk walk;
  std::optional<std::vector<int64_t>> offsets = lane_pattern(v, idx, w, walk);
  if (!offsets) return std::nullopt;
  return LanePattern{std::move(*offsets), !walk.assumed};
}

std::optional<std::vector<int64_t>> Codegen::lane_pattern(const ir::Value* v, const Index& idx, int w, PatternWalk& walk) {
  using Pattern = std::vector<int64_t>;
  if (v->type.is_scalar()) return Pattern(static_cast<size_t>(w), 0);
  const int d = lane_dim(idx, w);
  if (d == -1) return Pattern(static_cast<size_t>(w), 0);
  if (d < 0) return std::nullopt;
  // A value's pattern depends only on the dim its lanes move along: remembered per (value, dim),
  // so index trees that share subexpressions are walked once, and the walk is bounded.
  const auto key = std::make_pair(v, d);
  if (auto it = walk.seen.find(key); it != walk.seen.end()) return it->second;
  if (++walk.visited > kMaxPatternWalk) return std::nullopt;
  std::optional<Pattern> r = pattern_of(v, idx, w, d, walk);
  walk.seen[key] = r;
  return r;
}

std::optional<std::vector<int64_t>> Codegen::pattern_of(const ir::Value* v, const Index& idx, int w, int d,
                                                         PatternWalk& walk) {
  using Pattern = std::vector<int64_t>;
  const Pattern zeros(static_cast<size_t>(w), 0);
  const AxisInfo& ai = axis_.get(v);
  if (ai.constancy[d] >= w) return zeros;
  if (ai.contiguity[d] >= w) {
    Pattern iota(static_cast<size_t>(w));
    for (int l = 0; l < w; ++l) iota[size_t(l)] = l;
    return iota;
  }
  const ir::Op* op = v->def;
  if (!op) return std::nullopt;
  auto operand = [&](int i, const Index& in) { return lane_pattern(op->operand(i), in, w, walk); };
  auto combine = [&](const std::optional<Pattern>& a, const std::optional<Pattern>& b, auto f) -> std::optional<Pattern> {
    if (!a || !b) return std::nullopt;
    Pattern r(a->size());
    for (size_t l = 0; l < r.size(); ++l) r[l] = f((*a)[l], (*b)[l]);
    return r;
  };
  auto scaled = [&](const std::optional<Pattern>& a, auto f) -> std::optional<Pattern> {
    if (!a) return std::nullopt;
    Pattern r(a->size());
    for (size_t l = 0; l < r.size(); ++l) r[l] = f((*a)[l]);
    return r;
  };
  // An operand's value when axis info knows it (a constant, or a splat of one).
  auto known = [&](int i) -> std::optional<int64_t> { return axis_.get(op->operand(i)).constant; };
  switch (op->kind) {
    case OpKind::Constant:
    case OpKind::Splat: return zeros;
    case OpKind::MultipleOf:
    case OpKind::MaxContiguous: return operand(0, idx);
    case OpKind::Broadcast:
    case OpKind::ExpandDims:
    case OpKind::Permute: return operand(0, view_operand_index(op, idx));
    case OpKind::Cast:
      if (!is_int(op->operand(0)->type.dtype) || !is_int(v->type.dtype)) return std::nullopt;
      return operand(0, idx);
    case OpKind::Add:
    case OpKind::AddPtr: return combine(operand(0, idx), operand(1, idx), [](int64_t a, int64_t b) { return a + b; });
    case OpKind::Sub: return combine(operand(0, idx), operand(1, idx), [](int64_t a, int64_t b) { return a - b; });
    case OpKind::Neg: return scaled(operand(0, idx), [](int64_t a) { return -a; });
    case OpKind::Mul: {
      for (int i : {0, 1})
        if (auto c = known(i)) return scaled(operand(1 - i, idx), [c](int64_t a) { return a * *c; });
      return std::nullopt;
    }
    case OpKind::Shl: {
      auto c = known(1);
      if (!c || *c < 0 || *c > 32) return std::nullopt;
      return scaled(operand(0, idx), [c](int64_t a) { return a * (int64_t(1) << *c); });
    }
    case OpKind::Div:
    case OpKind::Rem: {
      // Assumes the first lane's dividend is a multiple of the divisor (and the dividends are not
      // negative): then lane l's quotient is the first's plus floor(p_l / k). The run-time check
      // catches the chunks where that is false.
      auto k = known(1);
      if (!is_int(v->type.dtype) || !k || *k <= 0) return std::nullopt;
      walk.assumed = true;
      if (op->kind == OpKind::Div) return scaled(operand(0, idx), [k](int64_t a) { return floor_div(a, *k); });
      return scaled(operand(0, idx), [k](int64_t a) { return floor_mod(a, *k); });
    }
    default: return std::nullopt;
  }
}

bool Codegen::pattern_worth_loading(const std::vector<int64_t>& pat, DType d) {
  const auto [lo, hi] = std::minmax_element(pat.begin(), pat.end());
  if (*lo == *hi) return false;  // every lane one element: same_element's case, or nothing known
  const int64_t span = *hi - *lo + 1;
  return span * dtype_bytes(d) <= kMaxSpanBytes;
}

Value* Codegen::load_by_pattern(Value* p0, Value* ptrs, const std::vector<int64_t>& pat, Value* mask, Value* other,
                                DType d, const std::function<Value*()>& gather) {
  llvm::Type* mt = mem_type(d);
  const int w = static_cast<int>(pat.size());
  const auto [lo_it, hi_it] = std::minmax_element(pat.begin(), pat.end());
  const int64_t lo = *lo_it, span = *hi_it - lo + 1;
  int64_t padded = 1;
  while (padded < span) padded *= 2;
  llvm::BasicBlock *fast_bb = nullptr, *slow_bb = nullptr, *cont = nullptr;
  if (ptrs) {
    // The lanes that are on read exactly p0 (lane 0's pointer, whether or not it is on) plus
    // the pattern.
    std::vector<llvm::Constant*> offsets;
    for (int64_t o : pat) offsets.push_back(b_.getInt64(static_cast<uint64_t>(o)));
    Value* expected = b_.CreateGEP(mt, p0, llvm::ConstantVector::get(offsets));
    Value* matches = b_.CreateICmpEQ(ptrs, expected);
    if (mask) matches = b_.CreateOr(matches, b_.CreateNot(mask));
    Value* ok = b_.CreateAndReduce(matches);
    fast_bb = llvm::BasicBlock::Create(ctx_, "pattern.load", fn_);
    slow_bb = llvm::BasicBlock::Create(ctx_, "pattern.gather", fn_);
    cont = llvm::BasicBlock::Create(ctx_, "pattern.end", fn_);
    b_.CreateCondBr(ok, fast_bb, slow_bb);
    b_.SetInsertPoint(fast_bb);
  }
  // The span from the first to the last element the lanes that are on read holds only elements
  // between two of them: loading all of it is safe. Outside it (lanes off, the power-of-two
  // padding) the load is masked off.
  llvm::Type* span_t = vec_of(mt, static_cast<int>(padded));
  Value* base = b_.CreateGEP(mt, p0, b_.getInt64(static_cast<uint64_t>(lo)));
  llvm::Align align(dtype_bytes(d));
  std::vector<llvm::Constant*> rel, pos;
  for (int64_t o : pat) rel.push_back(b_.getInt32(static_cast<uint32_t>(o - lo)));
  for (int64_t j = 0; j < padded; ++j) pos.push_back(b_.getInt32(static_cast<uint32_t>(j)));
  Value* in_span = nullptr;
  if (mask) {
    Value* relv = llvm::ConstantVector::get(rel);
    Value* first = b_.CreateIntMinReduce(b_.CreateSelect(mask, relv, splat(i32(INT32_MAX), w)), true);
    Value* last = b_.CreateIntMaxReduce(b_.CreateSelect(mask, relv, splat(i32(-1), w)), true);
    Value* posv = llvm::ConstantVector::get(pos);
    in_span = b_.CreateAnd(b_.CreateICmpSGE(posv, splat(first, int(padded))), b_.CreateICmpSLE(posv, splat(last, int(padded))));
  } else if (padded != span) {
    std::vector<llvm::Constant*> on;
    for (int64_t j = 0; j < padded; ++j) on.push_back(b_.getInt1(j < span));
    in_span = llvm::ConstantVector::get(on);
  }
  Value* spanv = in_span ? static_cast<Value*>(b_.CreateMaskedLoad(span_t, base, align, in_span, llvm::PoisonValue::get(span_t)))
                         : static_cast<Value*>(b_.CreateAlignedLoad(span_t, base, align));
  std::vector<int> lanes;
  for (int64_t o : pat) lanes.push_back(static_cast<int>(o - lo));
  Value* fast = b_.CreateShuffleVector(spanv, lanes);
  if (mask) fast = b_.CreateSelect(mask, fast, other);
  if (!ptrs) return fast;
  llvm::BasicBlock* fast_end = b_.GetInsertBlock();
  b_.CreateBr(cont);

  b_.SetInsertPoint(slow_bb);
  Value* slow = gather();
  llvm::BasicBlock* slow_end = b_.GetInsertBlock();
  b_.CreateBr(cont);

  b_.SetInsertPoint(cont);
  llvm::PHINode* phi = b_.CreatePHI(vec_of(mt, w), 2);
  phi->addIncoming(fast, fast_end);
  phi->addIncoming(slow, slow_end);
  return phi;
}

}  // namespace tritium::jit::cpu::detail
