// tl::sort and tl::topk as bitonic networks written in the language itself (as Triton's
// standard.py does), so every backend runs them without an op of its own. The block is viewed as
// [2, 2, ..., 2]: bit j of an element's position along the sorted dim is the dim n-1-j, so the
// partner of a compare-and-swap at bit j is one xor-reduction away, and the network is a fixed
// sequence of reductions over size-2 dims, broadcasts and selects.
#include "dsl/ops.h"
#include "dsl/semantic.h"

namespace tritium::tl {

using ir::Shape;

namespace {

SourceLoc L(const loc_t& l) { return SourceLoc::from(l); }

int log2_exact(int64_t n) {
  int l = 0;
  while ((int64_t{1} << l) < n) ++l;
  return l;
}

// The dim to sort along: Triton supports only the last one.
void check_last_dim(const char* op, const tensor& x, std::optional<int> dim, const SourceLoc& loc) {
  if (x.rank() == 0) fail(loc, "tl::{}: expects a block, got scalar {}", op, dsl::describe(x.value()));
  if (x.type().is_ptr()) fail(loc, "tl::{}: cannot order pointers ({})", op, dsl::describe(x.value()));
  int r = x.rank();
  if (dim) {
    int d = *dim < 0 ? *dim + r : *dim;
    if (d < 0 || d >= r) fail(loc, "tl::{}: dim {} is out of range for {} (rank {})", op, *dim, dsl::describe(x.value()), r);
    if (d != r - 1)
      fail(loc, "tl::{}: only the last dim ({}) is supported, as in Triton; got dim {} of {}", op, r - 1, *dim,
           dsl::describe(x.value()));
  }
}

// A [1, .., 2, .., 1] i1 block over n dims: true where bit `bit` of the position is 1.
tensor bit_is_set(int n, int bit, const loc_t& loc) {
  Shape s(static_cast<size_t>(n), 1);
  s[static_cast<size_t>(n - 1 - bit)] = 2;
  return reshape(arange(0, 2, loc), s, loc) == 1;
}

// The integer type whose bits carry x's (same width), for the xor that finds partners.
DType bits_type(DType d) {
  switch (dtype_bits(d)) {
    case 8: return DType::i8;
    case 16: return DType::i16;
    case 32: return DType::i32;
    default: return DType::i64;
  }
}

// One compare-and-swap layer at `bit`: every pair (left, right) differing in that bit becomes
// (min, max), or (max, min) where `descending` holds. The pair swaps as a whole (l > r decides
// both elements), so the result is always a permutation, NaNs included.
tensor compare_and_swap(const tensor& y, const tensor& descending, int n, int bit, const loc_t& loc) {
  DType d = y.dtype();
  bool raw = is_int(d);
  tensor iy = raw ? y : y.to(bits_type(d), true, loc);
  tensor partner = iy ^ broadcast_to(xor_sum(iy, n - 1 - bit, true, loc), iy.shape(), loc);
  tensor right = bit_is_set(n, bit, loc);
  tensor l = where(right, partner, iy, loc), r = where(right, iy, partner, loc);
  if (!raw) l = l.to(d, true, loc), r = r.to(d, true, loc);
  tensor swap = (l > r) != descending;
  tensor out = where(swap, partner, iy, loc);
  return raw ? out : out.to(d, true, loc);
}

// Sorts every run of 2^active elements that is bitonic: descending where `descending` holds.
tensor bitonic_merge(tensor y, const tensor& descending, int n, int active, const loc_t& loc) {
  for (int j = active - 1; j >= 0; --j) y = compare_and_swap(y, descending, n, j, loc);
  return y;
}

// Runs of 2^bits alternate ascending, descending (by bit `bits` of the position).
tensor alternating(int n, int bits, const loc_t& loc) { return bit_is_set(n, bits, loc); }

tensor constant_order(bool descending, const loc_t& loc) { return full({}, descending, DType::i1, loc); }

}  // namespace

tensor sort(const tensor& x, std::optional<int> dim, bool descending, loc_t loc) {
  check_last_dim("sort", x, dim, L(loc));
  if (x.dtype() == DType::i1) return sort(x.to(DType::i8, false, loc), dim, descending, loc).to(DType::i1, false, loc);
  int n = log2_exact(x.numel());
  int m = log2_exact(x.shape().back());
  if (m == 0) return x;
  tensor y = reshape(x, Shape(static_cast<size_t>(n), 2), loc);
  for (int i = 1; i <= m; ++i)
    y = bitonic_merge(y, i == m ? constant_order(descending, loc) : alternating(n, i, loc), n, i, loc);
  return reshape(y, x.shape(), loc);
}

tensor topk(const tensor& x, int64_t k, std::optional<int> dim, loc_t loc) {
  check_last_dim("topk", x, dim, L(loc));
  int64_t len = x.shape().back();
  if (k <= 0 || (k & (k - 1)) != 0 || k > len)
    fail(L(loc), "tl::topk: k must be a power of two in [1, {}] (the last dim of {}), got {}", len,
         dsl::describe(x.value()), k);
  if (x.dtype() == DType::i1) return topk(x.to(DType::i8, false, loc), k, dim, loc).to(DType::i1, false, loc);
  if (k == len) return sort(x, dim, true, loc);
  int n = log2_exact(x.numel());
  int m = log2_exact(len);
  int kb = log2_exact(k);
  tensor y = reshape(x, Shape(static_cast<size_t>(n), 2), loc);
  // Runs of k sorted, alternately ascending and descending.
  for (int i = 1; i <= kb; ++i) y = bitonic_merge(y, alternating(n, i, loc), n, i, loc);
  // Each step halves the row: the elementwise max of an ascending run and the descending run
  // beside it holds the k largest of both as a bitonic run, which a merge sorts again.
  for (int level = kb + 1; level <= m; ++level) {
    y = reduce(y, n - 1 - kb, [&](tensor a, tensor b) { return where(a > b || a != a, a, b, loc); }, false, loc);
    --n;
    bool last = level == m;
    y = bitonic_merge(y, last ? constant_order(true, loc) : alternating(n, kb, loc), n, kb, loc);
  }
  Shape out = x.shape();
  out.back() = k;
  return reshape(y, out, loc);
}

}  // namespace tritium::tl
