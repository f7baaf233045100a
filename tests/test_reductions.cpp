// Reductions and scans: tl::sum/max/min/argmax/argmin/xor_sum, tl::reduce with user combine
// functions (one and two operands), tl::cumsum/cumprod/associative_scan, and a row softmax.
// Every result is checked element by element against a float64 (or exact integer) reference
// computed on the host; outputs are poisoned before each launch.
#include "test_support.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

namespace tl = tritium::tl;
namespace tt = tritium::test;
using tritium::bf16_t;
using tritium::DType;
using tritium::f16_t;

namespace {

// ---- helpers used while tracing ------------------------------------------------------------

int64_t product(const std::vector<int64_t>& s) {
  return std::accumulate(s.begin(), s.end(), int64_t(1), std::multiplies<int64_t>());
}

// Row-major element offsets of a block of the given shape (an i32 block of that shape).
tl::tensor offsets_for(const std::vector<int64_t>& shape) {
  int r = static_cast<int>(shape.size());
  tl::tensor acc;
  int64_t stride = 1;
  for (int d = r - 1; d >= 0; --d) {
    tl::tensor t = tl::arange(0, shape[d]) * static_cast<int>(stride);
    for (int e = 0; e < d; ++e) t = tl::expand_dims(t, 0);
    for (int e = d + 1; e < r; ++e) t = tl::expand_dims(t, t.rank());
    acc = acc.defined() ? acc + t : t;
    stride *= shape[d];
  }
  return tl::broadcast_to(acc, shape);
}

enum Op { SUM, MAX, MIN, ARGMAX, ARGMIN, XOR_SUM, USER_MAX };
const char* op_name(int op) {
  static const char* names[] = {"sum", "max", "min", "argmax", "argmin", "xor_sum", "reduce(maximum)"};
  return names[op];
}

tl::tensor apply_reduce(int op, const tl::tensor& v, tl::axis_t axis, bool keep) {
  switch (op) {
    case SUM: return tl::sum(v, axis, keep);
    case MAX: return tl::max(v, axis, keep);
    case MIN: return tl::min(v, axis, keep);
    case ARGMAX: return tl::argmax(v, *axis, keep);
    case ARGMIN: return tl::argmin(v, *axis, keep);
    case XOR_SUM: return tl::xor_sum(v, axis, keep);
    default: return tl::reduce(v, axis, [](tl::tensor a, tl::tensor b) { return tl::maximum(a, b); }, keep);
  }
}

// Result element types, as Triton: sums widen <32-bit integers to i32, max/min compute narrow
// types in 32 bits, arg-reductions give i32 indices.
template <class T> using sum_t = std::conditional_t<std::is_integral_v<T> && (sizeof(T) < 4), int32_t, T>;
template <class T>
using minmax_t = std::conditional_t<(sizeof(T) < 4), std::conditional_t<tt::is_float_v<T>, float, int32_t>, T>;

// One kernel per (input, output) element type; the op, axis, keep_dims and the block shape
// (up to three dims, 0 = absent) are meta-parameters. Program p reduces block p.
template <class T, class O>
tritium::Kernel& reduce_kernel() {
  static tritium::Kernel k = tritium::kernel(
      "reduce_nd", [](tl::ptr<T> x, tl::ptr<O> out, int OP, int AXIS, bool KEEP, int D0, int D1, int D2) {
        std::vector<int64_t> shape;
        for (int d : {D0, D1, D2})
          if (d > 0) shape.push_back(d);
        int n = static_cast<int>(product(shape));
        auto pid = tl::program_id(0);
        auto v = tl::load(x + pid * n + offsets_for(shape));
        tl::axis_t axis = AXIS < 0 ? tl::axis_t{} : tl::axis_t{AXIS};
        tl::tensor r = apply_reduce(OP, v, axis, KEEP);
        tl::static_assert_(r.dtype() == tritium::dtype_of<O>(),
                           std::string("result dtype is ") + tritium::dtype_name(r.dtype()));
        if (r.rank() == 0) {
          tl::store(out + pid, r);
        } else {
          tl::static_assert_(KEEP ? r.rank() == static_cast<int>(shape.size()) : r.rank() + 1 == static_cast<int>(shape.size()),
                             "unexpected result rank");
          tl::store(out + pid * static_cast<int>(r.numel()) + offsets_for(r.shape()), r);
        }
      });
  return k;
}

// Reference: reduce x (row-major `shape`) along axis (-1: all elements) in double / int64.
std::vector<double> ref_reduce(const std::vector<double>& x, std::vector<int64_t> shape, int axis, int op) {
  if (axis < 0) shape = {product(shape)}, axis = 0;
  int64_t outer = 1, inner = 1, len = shape[axis];
  for (int d = 0; d < axis; ++d) outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  std::vector<double> out(outer * inner);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t k) { return x[(o * len + k) * inner + i]; };
      double acc = at(0);
      int64_t best = 0, bits = static_cast<int64_t>(at(0));
      for (int64_t k = 1; k < len; ++k) {
        double v = at(k);
        switch (op) {
          case SUM: acc += v; break;
          case MAX: case USER_MAX: acc = std::max(acc, v); break;
          case MIN: acc = std::min(acc, v); break;
          case ARGMAX: if (v > at(best)) best = k; break;  // strict: ties keep the lowest index
          case ARGMIN: if (v < at(best)) best = k; break;
          case XOR_SUM: bits ^= static_cast<int64_t>(v); break;
        }
      }
      out[o * inner + i] = op == ARGMAX || op == ARGMIN ? double(best) : op == XOR_SUM ? double(bits) : acc;
    }
  return out;
}

template <class T> std::vector<double> as_doubles(const tt::host_vector<T>& v) {
  std::vector<double> d(v.size());
  for (size_t i = 0; i < v.size(); ++i) d[i] = tt::to_double(v[i]);
  return d;
}
template <class O> tt::host_vector<O> from_doubles(const std::vector<double>& v) {
  tt::host_vector<O> o(v.size());
  for (size_t i = 0; i < v.size(); ++i) o[i] = tt::from_double<O>(v[i]);
  return o;
}

// Tolerance of a floating-point sum of a short row accumulated in T (Triton accumulates in the
// input type: f16/bf16 sums round at every step).
template <class T> double sum_tol() {
  if constexpr (std::is_same_v<T, double>) return 1e-12;
  else if constexpr (std::is_same_v<T, float>) return 1e-6;
  else if constexpr (std::is_same_v<T, f16_t>) return 5e-3;
  else return 3e-2;
}

template <class T> void random_range(double& lo, double& hi) {
  if constexpr (std::is_same_v<T, int8_t>) lo = -128, hi = 127;
  else if constexpr (std::is_integral_v<T>) lo = -100000, hi = 100000;
  else lo = -1, hi = 1;
}

constexpr int kPrograms = 3;

// Runs one (op, shape, axis, keep) case for input type T.
template <class T, class O>
void run_reduce_case(const tt::Backend& be, int op, const std::vector<int64_t>& shape, int axis, bool keep, uint32_t seed) {
  int64_t n = product(shape);
  double lo, hi;
  random_range<T>(lo, hi);
  auto x = tt::random_vector<T>(n * kPrograms, seed, lo, hi);
  std::vector<double> ref;
  for (int p = 0; p < kPrograms; ++p) {
    std::vector<double> part(n);
    for (int64_t i = 0; i < n; ++i) part[i] = tt::to_double(x[p * n + i]);
    auto r = ref_reduce(part, shape, axis, op);
    ref.insert(ref.end(), r.begin(), r.end());
  }
  auto dx = be.template upload<T>(x);
  auto dout = be.template alloc_poisoned<O>(ref.size());
  int d[3] = {0, 0, 0};
  for (size_t i = 0; i < shape.size(); ++i) d[i] = static_cast<int>(shape[i]);
  std::string what = std::string(op_name(op)) + " of " + tritium::dtype_name(tritium::dtype_of<T>()) + " " +
                     tritium::ir::shape_str(shape) + " axis " + (axis < 0 ? std::string("None") : std::to_string(axis)) +
                     (keep ? " keep_dims" : "");
  BOOST_TEST_CONTEXT(what) {
    reduce_kernel<T, O>()[{kPrograms}](dx.ptr(), dout.ptr(), op, axis, keep, d[0], d[1], d[2], be.options());
    auto out = dout.download();
    if (op == SUM && tt::is_float_v<T>) tt::check_close<O>(out, ref, sum_tol<T>(), what);
    else tt::check_equal<O>(out, from_doubles<O>(ref), what);
  }
}

template <class T>
void run_all_ops(const tt::Backend& be, const std::vector<int64_t>& shape, const std::vector<int>& axes,
                 const std::vector<bool>& keeps, uint32_t seed) {
  for (int axis : axes)
    for (bool keep : keeps) {
      ++seed;
      run_reduce_case<T, sum_t<T>>(be, SUM, shape, axis, keep, seed);
      run_reduce_case<T, minmax_t<T>>(be, MAX, shape, axis, keep, seed);
      run_reduce_case<T, minmax_t<T>>(be, MIN, shape, axis, keep, seed);
      run_reduce_case<T, T>(be, USER_MAX, shape, axis, keep, seed);
      if constexpr (std::is_integral_v<T>) run_reduce_case<T, T>(be, XOR_SUM, shape, axis, keep, seed);
      if (axis >= 0) {
        run_reduce_case<T, int32_t>(be, ARGMAX, shape, axis, keep, seed);
        run_reduce_case<T, int32_t>(be, ARGMIN, shape, axis, keep, seed);
      }
    }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_reductions)

// ---- every op, every axis, 1-D / 2-D / 3-D, keep_dims on and off, every dtype -------------------

template <class T> void all_ranks(uint32_t seed, bool all_keeps_3d) {
  tt::for_each_backend([&](const tt::Backend& be) {
    run_all_ops<T>(be, {64}, {0, -1}, {false, true}, seed);
    run_all_ops<T>(be, {8, 32}, {0, 1, -1}, {false, true}, seed + 100);
    run_all_ops<T>(be, {4, 8, 8}, {0, 1, 2, -1}, all_keeps_3d ? std::vector<bool>{false, true} : std::vector<bool>{false},
                   seed + 200);
  });
}

BOOST_AUTO_TEST_CASE(reduce_f32) { all_ranks<float>(1, true); }
BOOST_AUTO_TEST_CASE(reduce_f64) { all_ranks<double>(2, false); }
BOOST_AUTO_TEST_CASE(reduce_f16) { all_ranks<f16_t>(3, false); }
BOOST_AUTO_TEST_CASE(reduce_bf16) { all_ranks<bf16_t>(4, false); }
BOOST_AUTO_TEST_CASE(reduce_i32) { all_ranks<int32_t>(5, false); }
BOOST_AUTO_TEST_CASE(reduce_i8) { all_ranks<int8_t>(6, true); }

// A tall, narrow block (reduction along a short last axis, outer axis longer than 16 lanes).
BOOST_AUTO_TEST_CASE(reduce_tall_block) {
  tt::for_each_backend([&](const tt::Backend& be) {
    run_all_ops<float>(be, {64, 4}, {0, 1}, {false}, 7);
    run_all_ops<int32_t>(be, {32, 2}, {0, 1}, {false}, 8);
    run_all_ops<float>(be, {2, 4, 64}, {0, 1, 2}, {false}, 9);
    // Size-1 dims, and a long outer axis.
    run_all_ops<float>(be, {1, 32}, {0, 1, -1}, {false, true}, 10);
    run_all_ops<int32_t>(be, {32, 1}, {0, 1}, {false, true}, 11);
    run_all_ops<float>(be, {1}, {0}, {false, true}, 12);
    run_all_ops<float>(be, {128, 64}, {0, 1}, {false}, 13);
  });
}

// ---- long rows: fp32 sums of 4096 and 16384 elements within 1e-5 of float64 ------------------

BOOST_AUTO_TEST_CASE(long_rows) {
  // One row per program, in one block (masked when the row is shorter than the block).
  auto one_block = tritium::kernel("row_sum", [](tl::ptr<float> x, tl::ptr<float> sums, tl::ptr<float> maxs,
                                                  tl::i32 n, int BLOCK) {
    auto row = tl::program_id(0);
    auto offs = tl::arange(0, BLOCK);
    auto mask = offs < n;
    auto v = tl::load(x + row * n + offs, mask, 0.0f);
    tl::store(sums + row, tl::sum(v, 0));
    auto w = tl::load(x + row * n + offs, mask, -INFINITY);
    tl::store(maxs + row, tl::max(w));
  });
  // The same with a run-time loop over chunks, a block accumulator and one final sum.
  auto chunked = tritium::kernel("row_sum_chunked", [](tl::ptr<float> x, tl::ptr<float> sums, tl::i32 n, int BLOCK) {
    auto row = tl::program_id(0);
    auto acc = tl::zeros({BLOCK}, tl::float32);
    for (auto start : tl::range(0, n, BLOCK)) {
      auto offs = start + tl::arange(0, BLOCK);
      acc += tl::load(x + row * n + offs, offs < n, 0.0f);
    }
    tl::store(sums + row, tl::sum(acc, 0));
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int rows = 8;
    struct Case { int n, block; double lo, hi; };
    for (Case c : {Case{4096, 4096, -1, 1}, Case{16384, 16384, -1, 1}, Case{16384, 16384, 0, 1},
                   Case{16000, 16384, 0, 1}, Case{4000, 4096, -1, 1}}) {
      BOOST_TEST_CONTEXT("n " << c.n << " block " << c.block << " values in [" << c.lo << ", " << c.hi << "]") {
        auto x = tt::random_vector<float>(size_t(rows) * c.n, 11 + c.n, c.lo, c.hi);
        std::vector<double> ref_sum(rows, 0.0), ref_max(rows, -INFINITY);
        for (int r = 0; r < rows; ++r)
          for (int i = 0; i < c.n; ++i) ref_sum[r] += x[size_t(r) * c.n + i], ref_max[r] = std::max<double>(ref_max[r], x[size_t(r) * c.n + i]);
        auto dx = be.upload<float>(x);
        auto sums = be.alloc_poisoned<float>(rows), maxs = be.alloc_poisoned<float>(rows);
        one_block[{rows}](dx.ptr(), sums.ptr(), maxs.ptr(), c.n, c.block, be.options());
        tt::check_close<float>(sums.download(), ref_sum, 1e-5, "one-block sum");
        tt::check_equal<float>(maxs.download(), from_doubles<float>(ref_max), "one-block max");
        auto sums2 = be.alloc_poisoned<float>(rows);
        chunked[{rows}](dx.ptr(), sums2.ptr(), c.n, 1024, be.options());
        tt::check_close<float>(sums2.download(), ref_sum, 1e-5, "chunked sum");
      }
    }
  });
}

// ---- masked rows (not multiples of the block) with `other` ------------------------------------

template <class T>
tritium::Kernel& masked_rows_kernel() {
  static tritium::Kernel k = tritium::kernel(
      "masked_rows", [](tl::ptr<T> x, tl::ptr<sum_t<T>> sums, tl::ptr<minmax_t<T>> maxs, tl::ptr<minmax_t<T>> mins,
                        tl::ptr<int32_t> amax, tl::ptr<int32_t> amin, tl::i32 n_cols, tl::i32 stride, int BLOCK_R,
                        int BLOCK_C) {
        // A [BLOCK_R, BLOCK_C] tile of rows; rows and columns past the end are masked.
        auto rows = tl::program_id(0) * BLOCK_R + tl::arange(0, BLOCK_R);
        auto cols = tl::arange(0, BLOCK_C);
        auto mask = (rows(tl::_, tl::None) < tl::num_programs(0) * BLOCK_R) && (cols(tl::None, tl::_) < n_cols);
        auto ptrs = x + rows(tl::_, tl::None) * stride + cols(tl::None, tl::_);
        double lowest, highest;
        if constexpr (tt::is_float_v<T>) lowest = -INFINITY, highest = INFINITY;
        else lowest = std::numeric_limits<T>::min(), highest = std::numeric_limits<T>::max();
        auto zero = tl::load(ptrs, mask, 0);
        tl::tensor lo_fill, hi_fill;
        if constexpr (tt::is_float_v<T>) {
          lo_fill = tl::load(ptrs, mask, -INFINITY);
          hi_fill = tl::load(ptrs, mask, INFINITY);
        } else {
          lo_fill = tl::load(ptrs, mask, static_cast<int64_t>(lowest));
          hi_fill = tl::load(ptrs, mask, static_cast<int64_t>(highest));
        }
        tl::store(sums + rows, tl::sum(zero, 1));
        tl::store(maxs + rows, tl::max(lo_fill, 1));
        tl::store(mins + rows, tl::min(hi_fill, 1));
        tl::store(amax + rows, tl::argmax(lo_fill, 1));
        tl::store(amin + rows, tl::argmin(hi_fill, 1));
      });
  return k;
}

template <class T> void masked_rows_case(const tt::Backend& be, int rows, int n_cols, int block_c, uint32_t seed) {
  const int block_r = 4, stride = n_cols + 3;  // rows are not contiguous with each other
  double lo, hi;
  random_range<T>(lo, hi);
  auto x = tt::random_vector<T>(size_t(rows) * stride, seed, lo, hi);
  std::vector<double> rs(rows), rmax(rows), rmin(rows), ramax(rows), ramin(rows);
  for (int r = 0; r < rows; ++r) {
    std::vector<double> row(n_cols);
    for (int c = 0; c < n_cols; ++c) row[c] = tt::to_double(x[size_t(r) * stride + c]);
    rs[r] = ref_reduce(row, {n_cols}, 0, SUM)[0];
    rmax[r] = ref_reduce(row, {n_cols}, 0, MAX)[0];
    rmin[r] = ref_reduce(row, {n_cols}, 0, MIN)[0];
    ramax[r] = ref_reduce(row, {n_cols}, 0, ARGMAX)[0];
    ramin[r] = ref_reduce(row, {n_cols}, 0, ARGMIN)[0];
  }
  auto dx = be.template upload<T>(x);
  auto s = be.alloc_poisoned<sum_t<T>>(rows);
  auto mx = be.alloc_poisoned<minmax_t<T>>(rows), mn = be.alloc_poisoned<minmax_t<T>>(rows);
  auto ax = be.alloc_poisoned<int32_t>(rows), an = be.alloc_poisoned<int32_t>(rows);
  BOOST_TEST_CONTEXT(tritium::dtype_name(tritium::dtype_of<T>()) << " rows " << rows << " cols " << n_cols << " block "
                                                                  << block_c) {
    masked_rows_kernel<T>()[{rows / block_r}](dx.ptr(), s.ptr(), mx.ptr(), mn.ptr(), ax.ptr(), an.ptr(), n_cols, stride,
                                               block_r, block_c, be.options());
    if constexpr (tt::is_float_v<T>) tt::check_close<sum_t<T>>(s.download(), rs, sum_tol<T>() * 4, "sum");
    else tt::check_equal<sum_t<T>>(s.download(), from_doubles<sum_t<T>>(rs), "sum");
    tt::check_equal<minmax_t<T>>(mx.download(), from_doubles<minmax_t<T>>(rmax), "max");
    tt::check_equal<minmax_t<T>>(mn.download(), from_doubles<minmax_t<T>>(rmin), "min");
    tt::check_equal<int32_t>(ax.download(), from_doubles<int32_t>(ramax), "argmax");
    tt::check_equal<int32_t>(an.download(), from_doubles<int32_t>(ramin), "argmin");
  }
}

BOOST_AUTO_TEST_CASE(masked_rows_with_other) {
  tt::for_each_backend([&](const tt::Backend& be) {
    masked_rows_case<float>(be, 12, 37, 64, 21);
    masked_rows_case<float>(be, 8, 1000, 1024, 22);
    masked_rows_case<float>(be, 4, 17, 32, 23);
    masked_rows_case<int32_t>(be, 12, 37, 64, 24);
    masked_rows_case<int8_t>(be, 8, 100, 128, 25);
    masked_rows_case<f16_t>(be, 8, 45, 64, 26);
  });
}

// ---- argmax / argmin ties: the lowest index wins ------------------------------------------------

BOOST_AUTO_TEST_CASE(arg_reduce_ties) {
  tt::for_each_backend([&](const tt::Backend& be) {
    // Few distinct values, so every row and column has ties for its max and its min.
    auto xi = tt::random_vector<int32_t>(3 * 8 * 32, 31, -2, 2);
    auto xf = tt::host_vector<float>(3 * 8 * 32);
    auto pick = tt::random_vector<int32_t>(xf.size(), 32, 0, 2);
    for (size_t i = 0; i < xf.size(); ++i) xf[i] = pick[i] == 0 ? -0.5f : pick[i] == 1 ? 0.25f : 1.5f;
    for (int axis : {0, 1})
      for (int op : {ARGMAX, ARGMIN}) {
        std::vector<double> refi, reff;
        for (int p = 0; p < 3; ++p) {
          std::vector<double> a(xi.begin() + p * 256, xi.begin() + (p + 1) * 256), b(xf.begin() + p * 256, xf.begin() + (p + 1) * 256);
          auto ri = ref_reduce(a, {8, 32}, axis, op), rf = ref_reduce(b, {8, 32}, axis, op);
          refi.insert(refi.end(), ri.begin(), ri.end());
          reff.insert(reff.end(), rf.begin(), rf.end());
        }
        BOOST_TEST_CONTEXT(op_name(op) << " axis " << axis) {
          auto di = be.upload<int32_t>(xi);
          auto oi = be.alloc_poisoned<int32_t>(refi.size());
          reduce_kernel<int32_t, int32_t>()[{3}](di.ptr(), oi.ptr(), op, axis, false, 8, 32, 0, be.options());
          tt::check_equal<int32_t>(oi.download(), from_doubles<int32_t>(refi), "i32 ties");
          auto df = be.upload<float>(xf);
          auto of = be.alloc_poisoned<int32_t>(reff.size());
          reduce_kernel<float, int32_t>()[{3}](df.ptr(), of.ptr(), op, axis, false, 8, 32, 0, be.options());
          tt::check_equal<int32_t>(of.download(), from_doubles<int32_t>(reff), "f32 ties");
        }
      }
  });
}

// ---- tl::reduce with user combine functions ----------------------------------------------------

// Two operands: (value, index) -> argmin where ties go to the HIGHEST index (unlike tl::argmin),
// returning both the minimum and its index.
BOOST_AUTO_TEST_CASE(reduce_two_operands) {
  auto k = tritium::kernel("argmin_last", [](tl::ptr<int32_t> x, tl::ptr<int32_t> vals, tl::ptr<int32_t> idxs, int AXIS,
                                            int BM, int BN) {
    auto rm = tl::arange(0, BM), rn = tl::arange(0, BN);
    auto v = tl::load(x + rm(tl::_, tl::None) * BN + rn(tl::None, tl::_));
    auto idx = tl::broadcast_to(AXIS == 0 ? rm(tl::_, tl::None) : rn(tl::None, tl::_), {BM, BN});
    auto r = tl::reduce({v, idx}, AXIS, [](std::span<const tl::tensor> l, std::span<const tl::tensor> r) {
      auto take_left = (l[0] < r[0]) || ((l[0] == r[0]) && (l[1] > r[1]));
      return std::vector<tl::tensor>{tl::where(take_left, l[0], r[0]), tl::where(take_left, l[1], r[1])};
    });
    auto o = tl::arange(0, AXIS == 0 ? BN : BM);
    tl::store(vals + o, r[0]);
    tl::store(idxs + o, r[1]);
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int BM = 16, BN = 32;
    auto x = tt::random_vector<int32_t>(BM * BN, 41, -3, 3);
    for (int axis : {0, 1}) {
      int n_out = axis == 0 ? BN : BM, len = axis == 0 ? BM : BN;
      tt::host_vector<int32_t> rv(n_out), ri(n_out);
      for (int o = 0; o < n_out; ++o) {
        auto at = [&](int k) { return axis == 0 ? x[k * BN + o] : x[o * BN + k]; };
        int best = 0;
        for (int k = 1; k < len; ++k)
          if (at(k) <= at(best)) best = k;
        rv[o] = at(best), ri[o] = best;
      }
      auto dx = be.upload<int32_t>(x);
      auto dv = be.alloc_poisoned<int32_t>(n_out), di = be.alloc_poisoned<int32_t>(n_out);
      k[{1}](dx.ptr(), dv.ptr(), di.ptr(), axis, BM, BN, be.options());
      tt::check_equal<int32_t>(dv.download(), rv, "values axis " + std::to_string(axis));
      tt::check_equal<int32_t>(di.download(), ri, "indices axis " + std::to_string(axis));
    }
  });
}

// A combine function that uses a run-time kernel argument: saturating addition of non-negative
// integers (associative), so the result is min(sum, cap).
BOOST_AUTO_TEST_CASE(reduce_combine_uses_argument) {
  auto k = tritium::kernel("saturating_sum", [](tl::ptr<int32_t> x, tl::ptr<int32_t> out, tl::i32 cap, int BLOCK) {
    auto v = tl::load(x + tl::program_id(0) * BLOCK + tl::arange(0, BLOCK));
    tl::store(out + tl::program_id(0), tl::reduce(v, 0, [&](tl::tensor a, tl::tensor b) { return tl::minimum(a + b, cap); }));
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int P = 6, BLOCK = 128;
    auto x = tt::random_vector<int32_t>(P * BLOCK, 42, 0, 100);
    for (int cap : {1000, 6000, 100000}) {
      tt::host_vector<int32_t> ref(P);
      for (int p = 0; p < P; ++p) {
        int64_t s = 0;
        for (int i = 0; i < BLOCK; ++i) s += x[p * BLOCK + i];
        ref[p] = static_cast<int32_t>(std::min<int64_t>(s, cap));
      }
      auto dx = be.upload<int32_t>(x);
      auto out = be.alloc_poisoned<int32_t>(P);
      k[{P}](dx.ptr(), out.ptr(), cap, BLOCK, be.options());
      tt::check_equal<int32_t>(out.download(), ref, "cap " + std::to_string(cap));
    }
  });
}

// ---- scans ----------------------------------------------------------------------------------------

enum ScanOp { CUMSUM, CUMPROD, CUMMAX };

template <class T, class O>
tritium::Kernel& scan_kernel() {
  static tritium::Kernel k = tritium::kernel(
      "scan_nd", [](tl::ptr<T> x, tl::ptr<O> out, int OP, int AXIS, bool REVERSE, int D0, int D1, int D2) {
        std::vector<int64_t> shape;
        for (int d : {D0, D1, D2})
          if (d > 0) shape.push_back(d);
        int n = static_cast<int>(product(shape));
        auto offs = tl::program_id(0) * n + offsets_for(shape);
        auto v = tl::load(x + offs);
        tl::tensor r;
        if (OP == CUMSUM) r = tl::cumsum(v, AXIS, REVERSE);
        else if (OP == CUMPROD) r = tl::cumprod(v, AXIS, REVERSE);
        else r = tl::associative_scan(v, AXIS, [](tl::tensor a, tl::tensor b) { return tl::maximum(a, b); }, REVERSE);
        tl::static_assert_(r.dtype() == tritium::dtype_of<O>(), std::string("scan result dtype is ") + tritium::dtype_name(r.dtype()));
        tl::store(out + offs, r);
      });
  return k;
}

int32_t wrap32(int64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v))); }

template <class T>
std::vector<double> ref_scan(const tt::host_vector<T>& x, size_t base, const std::vector<int64_t>& shape, int axis, int op,
                             bool reverse) {
  int64_t outer = 1, inner = 1, len = shape[axis];
  for (int d = 0; d < axis; ++d) outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  std::vector<double> out(outer * len * inner);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double acc = 0;
      int64_t iacc = 0;
      for (int64_t s = 0; s < len; ++s) {
        int64_t k = reverse ? len - 1 - s : s;
        int64_t at = (o * len + k) * inner + i;
        double v = tt::to_double(x[base + at]);
        if constexpr (std::is_integral_v<T>) {
          int64_t iv = static_cast<int64_t>(v);
          iacc = s == 0 ? iv : op == CUMSUM ? wrap32(iacc + iv) : op == CUMPROD ? wrap32(iacc * iv) : std::max(iacc, iv);
          out[at] = double(iacc);
        } else {
          acc = s == 0 ? v : op == CUMSUM ? acc + v : op == CUMPROD ? acc * v : std::max(acc, v);
          out[at] = acc;
        }
      }
    }
  return out;
}

template <class T>
void scan_cases(const tt::Backend& be, uint32_t seed) {
  using S = sum_t<T>;
  // Rows along the last axis of 8, 16, 32, 64 and 128 take the CPU's chunked scan (log-step lanes
  // and a carry: one chunk, two, eight); rows of 4 and the other axes its scalar loop.
  for (auto shape : {std::vector<int64_t>{64}, std::vector<int64_t>{8, 32}, std::vector<int64_t>{32, 4},
                     std::vector<int64_t>{4, 8, 16}, std::vector<int64_t>{16, 8}, std::vector<int64_t>{2, 128}})
    for (int axis = 0; axis < static_cast<int>(shape.size()); ++axis)
      for (bool reverse : {false, true})
        for (int op : {CUMSUM, CUMPROD, CUMMAX}) {
          const int P = 2;
          int64_t n = product(shape);
          tt::host_vector<T> x;
          if (op == CUMPROD && tt::is_float_v<T>) x = tt::random_vector<T>(n * P, ++seed, 0.8, 1.25);
          else if (op == CUMPROD) x = tt::random_nonzero<T>(n * P, ++seed, -3, 3, 1);
          else {
            double lo, hi;
            random_range<T>(lo, hi);
            if (std::is_integral_v<T> && sizeof(T) == 4) lo = -1000, hi = 1000;
            x = tt::random_vector<T>(n * P, ++seed, lo, hi);
          }
          std::vector<double> ref;
          for (int p = 0; p < P; ++p) {
            auto r = ref_scan<T>(x, p * n, shape, axis, op, reverse);
            ref.insert(ref.end(), r.begin(), r.end());
          }
          std::string what = std::string(op == CUMSUM ? "cumsum" : op == CUMPROD ? "cumprod" : "associative_scan(max)") +
                             " of " + tritium::dtype_name(tritium::dtype_of<T>()) + " " + tritium::ir::shape_str(shape) +
                             " axis " + std::to_string(axis) + (reverse ? " reverse" : "");
          int d0 = static_cast<int>(shape[0]), d1 = shape.size() > 1 ? static_cast<int>(shape[1]) : 0;
          int d2 = shape.size() > 2 ? static_cast<int>(shape[2]) : 0;
          auto dx = be.template upload<T>(x);
          BOOST_TEST_CONTEXT(what) {
            if (op == CUMMAX) {
              auto out = be.template alloc_poisoned<T>(ref.size());
              scan_kernel<T, T>()[{P}](dx.ptr(), out.ptr(), op, axis, reverse, d0, d1, d2, be.options());
              tt::check_equal<T>(out.download(), from_doubles<T>(ref), what);
            } else {
              auto out = be.template alloc_poisoned<S>(ref.size());
              scan_kernel<T, S>()[{P}](dx.ptr(), out.ptr(), op, axis, reverse, d0, d1, d2, be.options());
              if constexpr (tt::is_float_v<T>) tt::check_close<S>(out.download(), ref, std::is_same_v<T, double> ? 1e-12 : 1e-5, what);
              else tt::check_equal<S>(out.download(), from_doubles<S>(ref), what);
            }
          }
        }
}

BOOST_AUTO_TEST_CASE(scans) {
  tt::for_each_backend([&](const tt::Backend& be) {
    scan_cases<float>(be, 51);
    scan_cases<double>(be, 151);
    scan_cases<int32_t>(be, 251);
    scan_cases<int8_t>(be, 351);
  });
}

// A two-operand, non-commutative scan: the linear recurrence h = a * h_prev + b, with
// (a1, b1) . (a2, b2) = (a1 * a2, b1 * a2 + b2).
BOOST_AUTO_TEST_CASE(scan_two_operands_recurrence) {
  auto k = tritium::kernel("recurrence", [](tl::ptr<float> a, tl::ptr<float> b, tl::ptr<float> h, int AXIS, bool REVERSE,
                                           int BM, int BN) {
    auto offs = tl::arange(0, BM)(tl::_, tl::None) * BN + tl::arange(0, BN)(tl::None, tl::_);
    auto r = tl::associative_scan(
        {tl::load(a + offs), tl::load(b + offs)}, AXIS,
        [](std::span<const tl::tensor> l, std::span<const tl::tensor> r) {
          return std::vector<tl::tensor>{l[0] * r[0], l[1] * r[0] + r[1]};
        },
        REVERSE);
    tl::store(h + offs, r[1]);
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int BM = 16, BN = 32;
    auto a = tt::random_vector<float>(BM * BN, 61, 0.5, 1.0);
    auto b = tt::random_vector<float>(BM * BN, 62, -1, 1);
    for (int axis : {0, 1})
      for (bool reverse : {false, true}) {
        std::vector<double> ref(BM * BN);
        int len = axis == 0 ? BM : BN, n_outer = axis == 0 ? BN : BM;
        for (int o = 0; o < n_outer; ++o) {
          double hv = 0;
          for (int s = 0; s < len; ++s) {
            int k2 = reverse ? len - 1 - s : s;
            int at = axis == 0 ? k2 * BN + o : o * BN + k2;
            hv = s == 0 ? b[at] : double(a[at]) * hv + b[at];
            ref[at] = hv;
          }
        }
        auto da = be.upload<float>(a), db = be.upload<float>(b);
        auto dh = be.alloc_poisoned<float>(BM * BN);
        k[{1}](da.ptr(), db.ptr(), dh.ptr(), axis, reverse, BM, BN, be.options());
        tt::check_close<float>(dh.download(), ref, 1e-5, "axis " + std::to_string(axis) + (reverse ? " reverse" : ""));
      }
  });
}

// Scans of every shape the CUDA parallel scan splits differently (jit/cuda/scan.h; the split each
// gets at 4 warps is in the comments, tests/test_cuda_scans checks the generated code): cumsum and
// the non-commutative two-operand recurrence h = a * h_prev + b, forward and reverse, in one kernel.
BOOST_AUTO_TEST_CASE(scan_shapes) {
  auto k = tritium::kernel("scan_shapes", [](tl::ptr<float> x, tl::ptr<float> a, tl::ptr<float> b, tl::ptr<float> out,
                                            int AXIS, bool REVERSE, int D0, int D1, int D2) {
    std::vector<int64_t> shape;
    for (int d : {D0, D1, D2})
      if (d > 0) shape.push_back(d);
    int n = static_cast<int>(product(shape));
    auto offs = offsets_for(shape);
    tl::store(out + offs, tl::cumsum(tl::load(x + offs), AXIS, REVERSE));
    auto r = tl::associative_scan(
        {tl::load(a + offs), tl::load(b + offs)}, AXIS,
        [](std::span<const tl::tensor> l, std::span<const tl::tensor> r) {
          return std::vector<tl::tensor>{l[0] * r[0], l[1] * r[0] + r[1]};
        },
        REVERSE);
    tl::store(out + n + offs, r[1]);
  });
  struct Case {
    std::vector<int64_t> shape;
    int axis, num_warps = 4;
  };
  const std::vector<Case> cases = {
      {{4096}, 0},     // one row over 4 warps, 32 elements a thread
      {{4096}, 0, 8},  // over 8 warps
      {{64}, 0},       // two warps, an element a thread
      {{16}, 0},       // half a warp
      {{4, 256}, 1},   // a warp a row
      {{4, 256}, 0},   // 256 rows: a thread a row, two passes
      {{256, 8}, 0},   // half a warp a row, along the outer dim
      {{2, 8, 16}, 0}, {{2, 8, 16}, 1}, {{2, 8, 16}, 2},  // a thread a row; 4 and 8 threads a row
      {{1024, 2}, 0},  // two rows of two warps each
      {{1024, 2}, 1},  // a thread a row, eight passes
      // Forward ones along the last dim run in registers on CUDA (element_scan.cpp), rows of
      // 16-element segments (the mapping's V = 4 f32): 4 segments, half a warp, 2 and 4 warps.
      {{32, 8}, 1}, {{16, 64}, 1}, {{4, 256}, 1, 8}, {{8, 512}, 1, 8},
  };
  tt::for_each_backend([&](const tt::Backend& be) {
    uint32_t seed = 700;
    for (const Case& c : cases)
      for (bool reverse : {false, true}) {
        const int64_t n = product(c.shape);
        auto x = tt::random_vector<float>(n, ++seed, -1, 1);
        auto a = tt::random_vector<float>(n, ++seed, 0.9, 1.0);
        auto b = tt::random_vector<float>(n, ++seed, -1, 1);
        int64_t outer = 1, inner = 1, len = c.shape[c.axis];
        for (int d = 0; d < c.axis; ++d) outer *= c.shape[d];
        for (size_t d = c.axis + 1; d < c.shape.size(); ++d) inner *= c.shape[d];
        std::vector<double> ref(2 * n);
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t i = 0; i < inner; ++i) {
            double sum = 0, h = 0;
            for (int64_t s = 0; s < len; ++s) {
              int64_t at = (o * len + (reverse ? len - 1 - s : s)) * inner + i;
              sum += x[at];
              h = s == 0 ? double(b[at]) : double(a[at]) * h + b[at];
              ref[at] = sum;
              ref[n + at] = h;
            }
          }
        auto dx = be.upload<float>(x), da = be.upload<float>(a), db = be.upload<float>(b);
        auto out = be.alloc_poisoned<float>(2 * n);
        tritium::Options opts = be.options();
        opts.num_warps = c.num_warps;
        int d0 = static_cast<int>(c.shape[0]), d1 = c.shape.size() > 1 ? static_cast<int>(c.shape[1]) : 0;
        int d2 = c.shape.size() > 2 ? static_cast<int>(c.shape[2]) : 0;
        k[{1}](dx.ptr(), da.ptr(), db.ptr(), out.ptr(), c.axis, reverse, d0, d1, d2, opts);
        // (f32 sums in another association than the reference's: rounding only, far below a
        // misplaced or missing prefix.)
        tt::check_close<float>(out.download(), ref, 1e-5,
                               tritium::ir::shape_str(c.shape) + " axis " + std::to_string(c.axis) + " num_warps " +
                                   std::to_string(c.num_warps) + (reverse ? " reverse" : ""));
      }
  });
}

// A block whose padded shared copy does not fit beside its result buffer (16384 f64: 128 KB of
// result, 132 KB of copy, past an H100's 219 KB budget): the element-loop generator scans in place
// in the result buffer instead (jit/cuda/element_scan.cpp), one row over 8 warps, 64 elements a
// thread.
BOOST_AUTO_TEST_CASE(scan_larger_than_shared_copy) {
  auto k = tritium::kernel("scan_large", [](tl::ptr<double> x, tl::ptr<double> out, bool REVERSE, int N) {
    auto offs = tl::arange(0, N);
    tl::store(out + offs, tl::cumsum(tl::load(x + offs), 0, REVERSE));
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int N = 16384;
    auto x = tt::random_vector<double>(N, 801, -1, 1);
    auto dx = be.upload<double>(x);
    tritium::Options opts = be.options();
    opts.num_warps = 8;
    for (bool reverse : {false, true}) {
      std::vector<double> ref(N);
      double sum = 0;
      for (int s = 0; s < N; ++s) {
        int at = reverse ? N - 1 - s : s;
        ref[at] = sum += x[at];
      }
      auto out = be.alloc_poisoned<double>(N);
      k[{1}](dx.ptr(), out.ptr(), reverse, N, opts);
      tt::check_close<double>(out.download(), ref, 1e-12, reverse ? "reverse" : "forward");
    }
  });
}

// FlagGems' block-scan loop (kernels/cumsum.cpp): each tile's cumsum plus the prefix carried from
// the tiles before, the prefix advanced by the tile's sum; int32 into int64 and f16 into f32, a row
// that is not a multiple of the tile (the last one masked). On CUDA the tile is a register value
// read by a scan in registers.
BOOST_AUTO_TEST_CASE(scan_tiles_with_a_carried_prefix) {
  auto k = tritium::kernel("scan_tiles", [](tl::ptr<tl::any> x, tl::ptr<tl::any> out, tl::i32 n, int TILE) {
    const tritium::DType acc = tritium::is_float(x.type().pointee) ? tritium::DType::f32 : tritium::DType::i64;
    auto m = tl::program_id(0).to(tl::int64);
    auto prefix = tl::zeros({}, acc);
    for (auto start : tl::range(0, n, TILE)) {
      auto offs = start + tl::arange(0, TILE);
      auto v = tl::load(x + m * n + offs, offs < n).to(acc);
      tl::store(out + m * n + offs, prefix + tl::cumsum(v, 0), offs < n);
      prefix += tl::sum(v, 0);
    }
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int rows = 3, n = 3000;
    tritium::Options opts = be.options();
    opts.num_warps = 4;
    auto xi = tt::random_vector<float>(rows * n, 901, -50, 50);
    std::vector<int32_t> hi(xi.begin(), xi.end());
    auto hh = tt::random_vector<tritium::f16_t>(rows * n, 902, -1, 1);
    std::vector<double> ref_i(rows * n), ref_h(rows * n);
    for (int r = 0; r < rows; ++r) {
      double si = 0, sh = 0;
      for (int j = 0; j < n; ++j) {
        ref_i[r * n + j] = si += hi[r * n + j];
        ref_h[r * n + j] = sh += double(tt::to_float(hh[r * n + j]));
      }
    }
    auto di = be.upload<int32_t>(hi);
    auto oi = be.alloc_poisoned<int64_t>(rows * n);
    k[{rows}](di.ptr(), oi.ptr(), n, 1024, opts);
    std::vector<int64_t> got_i = oi.download();
    for (int e = 0; e < rows * n; ++e)
      if (double(got_i[e]) != ref_i[e]) BOOST_FAIL("int32 -> int64 element " << e << ": " << got_i[e] << " != " << ref_i[e]);
    auto dh = be.upload<tritium::f16_t>(hh);
    auto oh = be.alloc_poisoned<float>(rows * n);
    k[{rows}](dh.ptr(), oh.ptr(), n, 1024, opts);
    tt::check_close<float>(oh.download(), ref_h, 1e-5, "f16 -> f32");
  });
}

// ---- reductions of fused expressions, broadcasts, reshapes, transposes, bools, scans -----------

BOOST_AUTO_TEST_CASE(reduce_of_expressions) {
  auto k = tritium::kernel("reduce_exprs", [](tl::ptr<float> a, tl::ptr<float> b, tl::ptr<float> x, tl::ptr<float> outer0,
                                              tl::ptr<float> outer1, tl::ptr<float> centered, tl::ptr<float> flat8,
                                              tl::ptr<float> trans1, tl::ptr<int32_t> positives, tl::ptr<int32_t> running,
                                              tl::ptr<float> scan_sum, int BM, int BN) {
    auto rm = tl::arange(0, BM), rn = tl::arange(0, BN);
    auto av = tl::load(a + rm), bv = tl::load(b + rn);
    auto prod = av(tl::_, tl::None) * bv(tl::None, tl::_);  // an inline [BM, BN] expression
    tl::store(outer0 + rn, tl::sum(prod, 0));
    tl::store(outer1 + rm, tl::sum(prod, 1));
    tl::store(outer1 + BM, tl::sum(prod));            // axis None of an inline broadcast expression
    tl::store(outer1 + BM + 1, tl::max(tl::trans(prod)));
    auto offs = rm(tl::_, tl::None) * BN + rn(tl::None, tl::_);
    auto xv = tl::load(x + offs);
    auto m = tl::max(xv, 1, true);  // [BM, 1], broadcast back
    auto e = xv - m;
    tl::store(centered + offs, e / tl::sum(tl::abs(e), 1, true));
    auto flat = tl::reshape(xv, {BM * BN / 8, 8});
    tl::store(flat8 + tl::arange(0, BM * BN / 8), tl::sum(flat, 1));
    tl::store(trans1 + rn, tl::sum(tl::trans(xv), 1));
    tl::store(positives + rm, tl::sum(xv > 0, 1));
    tl::store(running + offs, tl::cumsum(xv > 0.25f, 1));
    tl::store(scan_sum + rm, tl::sum(tl::cumsum(xv, 1), 1));
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int BM = 16, BN = 32;
    auto a = tt::random_vector<float>(BM, 81), b = tt::random_vector<float>(BN, 82), x = tt::random_vector<float>(BM * BN, 83);
    std::vector<double> r_outer0(BN, 0.0), r_outer1(BM, 0.0), r_centered(BM * BN), r_flat8(BM * BN / 8, 0.0), r_trans1(BN, 0.0),
        r_scan(BM, 0.0);
    tt::host_vector<int32_t> r_pos(BM, 0), r_running(BM * BN);
    for (int i = 0; i < BM; ++i)
      for (int j = 0; j < BN; ++j) r_outer0[j] += double(a[i]) * b[j], r_outer1[i] += double(a[i]) * b[j];
    for (int i = 0; i < BM; ++i) {
      double m = -INFINITY, s = 0, run = 0;
      int cnt = 0;
      for (int j = 0; j < BN; ++j) m = std::max<double>(m, x[i * BN + j]);
      for (int j = 0; j < BN; ++j) s += std::abs(x[i * BN + j] - m);
      for (int j = 0; j < BN; ++j) {
        double v = x[i * BN + j];
        r_centered[i * BN + j] = (v - m) / s;
        r_trans1[j] += v;
        r_pos[i] += v > 0;
        cnt += v > 0.25;
        r_running[i * BN + j] = cnt;
        run += v;
        r_scan[i] += run;
      }
    }
    for (int i = 0; i < BM * BN; ++i) r_flat8[i / 8] += x[i];
    double all_sum = 0, all_max = -INFINITY;
    for (int i = 0; i < BM; ++i)
      for (int j = 0; j < BN; ++j) all_sum += double(a[i]) * b[j], all_max = std::max<double>(all_max, a[i] * b[j]);
    r_outer1.push_back(all_sum);
    r_outer1.push_back(all_max);
    auto da = be.upload<float>(a), db = be.upload<float>(b), dx = be.upload<float>(x);
    auto o0 = be.alloc_poisoned<float>(BN), o1 = be.alloc_poisoned<float>(BM + 2), c = be.alloc_poisoned<float>(BM * BN);
    auto f8 = be.alloc_poisoned<float>(BM * BN / 8), t1 = be.alloc_poisoned<float>(BN);
    auto pos = be.alloc_poisoned<int32_t>(BM), run = be.alloc_poisoned<int32_t>(BM * BN);
    auto ss = be.alloc_poisoned<float>(BM);
    k[{1}](da.ptr(), db.ptr(), dx.ptr(), o0.ptr(), o1.ptr(), c.ptr(), f8.ptr(), t1.ptr(), pos.ptr(), run.ptr(), ss.ptr(), BM,
           BN, be.options());
    tt::check_close<float>(o0.download(), r_outer0, 1e-6, "sum(a[:, None] * b[None, :], 0)");
    tt::check_close<float>(o1.download(), r_outer1, 1e-6, "sum(a[:, None] * b[None, :], 1), then over all, then max of its transpose");
    tt::check_close<float>(c.download(), r_centered, 1e-6, "(x - max(x, 1, keep_dims)) / sum(|.|, 1, keep_dims)");
    tt::check_close<float>(f8.download(), r_flat8, 1e-6, "sum(reshape(x, [BM*BN/8, 8]), 1)");
    tt::check_close<float>(t1.download(), r_trans1, 1e-6, "sum(trans(x), 1)");
    tt::check_equal<int32_t>(pos.download(), r_pos, "sum(x > 0, 1) (bools count as i32)");
    tt::check_equal<int32_t>(run.download(), r_running, "cumsum(x > 0.25, 1)");
    tt::check_close<float>(ss.download(), r_scan, 1e-6, "sum(cumsum(x, 1), 1)");
  });
}

// ---- softmax (Triton's tutorial 02) ---------------------------------------------------------------

BOOST_AUTO_TEST_CASE(row_softmax) {
  auto softmax = tritium::kernel("softmax_kernel", [](tl::ptr<float> output_ptr, tl::ptr<float> input_ptr,
                                                       tl::i32 input_row_stride, tl::i32 output_row_stride,
                                                       tl::i32 n_rows, tl::i32 n_cols, int BLOCK_SIZE) {
    auto row_start = tl::program_id(0);
    auto row_step = tl::num_programs(0);
    for (auto row_idx : tl::range(row_start, n_rows, row_step)) {
      auto row_start_ptr = input_ptr + row_idx * input_row_stride;
      auto col_offsets = tl::arange(0, BLOCK_SIZE);
      auto input_ptrs = row_start_ptr + col_offsets;
      auto mask = col_offsets < n_cols;
      auto row = tl::load(input_ptrs, mask, -INFINITY);
      auto row_minus_max = row - tl::max(row, 0);
      auto numerator = tl::exp(row_minus_max);
      auto denominator = tl::sum(numerator, 0);
      auto softmax_output = numerator / denominator;
      auto output_row_start_ptr = output_ptr + row_idx * output_row_stride;
      tl::store(output_row_start_ptr + col_offsets, softmax_output, mask);
    }
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    struct Case { int rows, cols, programs; };
    for (Case c : {Case{37, 781, 8}, Case{64, 1024, 64}, Case{5, 3, 2}, Case{19, 2000, 4}}) {
      int in_stride = c.cols + 5, out_stride = c.cols + 2;
      auto x = tt::random_vector<float>(size_t(c.rows) * in_stride, 71 + c.cols, -5, 5);
      std::vector<double> ref(size_t(c.rows) * c.cols);
      for (int r = 0; r < c.rows; ++r) {
        double m = -INFINITY, s = 0;
        for (int i = 0; i < c.cols; ++i) m = std::max<double>(m, x[size_t(r) * in_stride + i]);
        for (int i = 0; i < c.cols; ++i) s += std::exp(double(x[size_t(r) * in_stride + i]) - m);
        for (int i = 0; i < c.cols; ++i) ref[size_t(r) * c.cols + i] = std::exp(double(x[size_t(r) * in_stride + i]) - m) / s;
      }
      auto dx = be.upload<float>(x);
      auto dout = be.alloc_poisoned<float>(size_t(c.rows) * out_stride);
      softmax[{c.programs}](dout.ptr(), dx.ptr(), in_stride, out_stride, c.rows, c.cols,
                            static_cast<int>(tritium::next_power_of_2(c.cols)), be.options());
      auto out = dout.download();
      tt::host_vector<float> got(size_t(c.rows) * c.cols);
      size_t padding_written = 0;
      for (int r = 0; r < c.rows; ++r) {
        for (int i = 0; i < c.cols; ++i) got[size_t(r) * c.cols + i] = out[size_t(r) * out_stride + i];
        for (int i = c.cols; i < out_stride; ++i) padding_written += !tt::is_poison<float>(out[size_t(r) * out_stride + i]);
      }
      BOOST_TEST_CONTEXT("rows " << c.rows << " cols " << c.cols) {
        tt::check_close<float>(got, ref, 1e-5, "softmax");
        BOOST_TEST(padding_written == 0u, "masked-off columns were written");
      }
    }
  });
}

BOOST_AUTO_TEST_SUITE_END()
