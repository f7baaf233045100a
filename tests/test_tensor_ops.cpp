// Triton's data movement within a block: tl::join / split / interleave, tl::gather,
// tl::histogram, tl::sort and tl::topk. Values are checked exactly against host references on
// random inputs (duplicates and ties included), with poisoned outputs and row counts that are not
// multiples of the block; every bad input has a test expecting a clear error at the user's line;
// the CUDA code of each op is generated and NVRTC-compiled for sm_90a and sm_80 (not run: no GPU).
#include "test_support.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "jit/cuda/codegen.h"
#include "jit/cuda/nvrtc.h"
#include "jit/passes/axis_info.h"

namespace tl = tritium::tl;
namespace tt = tritium::test;
namespace cuda = tritium::jit::cuda;
using tritium::f16_t;

namespace {

// [rows of the block, C] row-major offsets of the program's block and the mask of its real rows.
struct RowBlock {
  tl::tensor offs, mask;
};
RowBlock row_block(int BR, int C, const tl::tensor& rows) {
  auto r = tl::program_id(0) * BR + tl::arange(0, BR);
  auto c = tl::arange(0, C);
  return {r(tl::_, tl::None) * C + c(tl::None, tl::_), tl::broadcast_to(r(tl::_, tl::None) < rows, {BR, C})};
}

// ---- join / split / interleave ------------------------------------------------------------------

template <class T> tritium::Kernel& join_kernel() {
  static tritium::Kernel k = tritium::kernel(
      "join_split_interleave",
      [](tl::ptr<T> a, tl::ptr<T> b, tl::ptr<T> joined, tl::ptr<T> inter, tl::ptr<T> lo, tl::ptr<T> hi, tl::i32 rows,
         int BR, int C) {
        auto [offs, m] = row_block(BR, C, rows);
        auto x = tl::load(a + offs, m);
        auto y = tl::load(b + offs, m);
        auto j = tl::join(x, y);  // [BR, C, 2]
        auto two = tl::reshape(tl::arange(0, 2), {1, 1, 2});
        tl::store(joined + tl::expand_dims(offs, 2) * 2 + two, j, tl::broadcast_to(tl::expand_dims(m, 2), {BR, C, 2}));
        auto il = tl::interleave(x, y);  // [BR, 2C]
        auto r = tl::program_id(0) * BR + tl::arange(0, BR);
        auto ioffs = r(tl::_, tl::None) * (2 * C) + tl::arange(0, 2 * C)(tl::None, tl::_);
        tl::store(inter + ioffs, il, r(tl::_, tl::None) < rows);
        // split(join(y * 2, x)) gives the two halves back, in their order.
        auto [p, q] = tl::split(tl::join(y + y, x));
        tl::store(lo + offs, p, m);
        tl::store(hi + offs, q, m);
      });
  return k;
}

// num_warps: 0 for the launch default (tests through the layout generator pass others: see
// values_through_the_layout_generator).
tritium::Options options_of(const tt::Backend& be, int num_warps) {
  tritium::Options o = be.options();
  if (num_warps) o.num_warps = num_warps;
  return o;
}

template <class T> void join_case(const tt::Backend& be, int rows, int BR, int C, uint32_t seed, int num_warps = 0) {
  size_t n = size_t(rows) * C;
  auto a = tt::random_vector<T>(n, seed, -50, 50), b = tt::random_vector<T>(n, seed + 1, -50, 50);
  tt::host_vector<T> rj(2 * n), ri(2 * n), rlo(n), rhi(n);
  for (size_t i = 0; i < n; ++i) {
    rj[2 * i] = ri[2 * i] = a[i];
    rj[2 * i + 1] = ri[2 * i + 1] = b[i];
    rlo[i] = tt::from_double<T>(2 * tt::to_double(b[i]));
    rhi[i] = a[i];
  }
  auto da = be.upload<T>(a), db = be.upload<T>(b);
  auto dj = be.alloc_poisoned<T>(2 * n), di = be.alloc_poisoned<T>(2 * n), dlo = be.alloc_poisoned<T>(n),
       dhi = be.alloc_poisoned<T>(n);
  join_kernel<T>()[{(rows + BR - 1) / BR}](da.ptr(), db.ptr(), dj.ptr(), di.ptr(), dlo.ptr(), dhi.ptr(), rows, BR, C,
                                          options_of(be, num_warps));
  tt::check_equal<T>(dj.download(), rj, "join");
  tt::check_equal<T>(di.download(), ri, "interleave");
  tt::check_equal<T>(dlo.download(), rlo, "split first");
  tt::check_equal<T>(dhi.download(), rhi, "split second");
}

// Two scalars join into [2]; split of a [2] gives scalars back (Triton's rules).
tritium::Kernel& scalar_join_kernel() {
  static tritium::Kernel k = tritium::kernel("scalar_join", [](tl::ptr<int32_t> out, tl::i32 a, tl::i32 b) {
    auto j = tl::join(a, b);
    tl::store(out + tl::arange(0, 2), j);
    auto [x, y] = tl::split(j);
    tl::store(out + 2, y);
    tl::store(out + 3, x);
    tl::store(out + 4 + tl::arange(0, 2), tl::interleave(a, b));
  });
  return k;
}

// ---- gather ---------------------------------------------------------------------------------------

// Program p gathers within its block of BR source rows. AXIS 1: index [BR, K] into columns;
// AXIS 0: index [K, C] into the block's rows. Index rows past n_index are masked off.
template <class I> tritium::Kernel& gather_kernel() {
  static tritium::Kernel k = tritium::kernel(
      "gather_rows",
      [](tl::ptr<float> src, tl::ptr<I> index, tl::ptr<float> out, tl::i32 rows, int AXIS, int BR, int C, int K) {
        auto [offs, m] = row_block(BR, C, rows);
        auto s = tl::load(src + offs, m, 0.0f);
        int IR = AXIS == 0 ? K : BR, IC = AXIS == 0 ? C : K;
        auto r = tl::program_id(0) * IR + tl::arange(0, IR);
        auto ioffs = r(tl::_, tl::None) * IC + tl::arange(0, IC)(tl::None, tl::_);
        auto im = tl::broadcast_to(AXIS == 0 ? r(tl::_, tl::None) >= 0 : r(tl::_, tl::None) < rows, {IR, IC});
        auto idx = tl::load(index + ioffs, im, 0);
        tl::store(out + ioffs, tl::gather(s, idx, AXIS), im);
      });
  return k;
}

template <class I>
void gather_case(const tt::Backend& be, int axis, int rows, int BR, int C, int K, uint32_t seed, int num_warps = 0) {
  int programs = (rows + BR - 1) / BR;
  auto src = tt::random_vector<float>(size_t(rows) * C, seed, -10, 10);
  int IR = axis == 0 ? K : BR, IC = axis == 0 ? C : K;
  size_t idx_rows = axis == 0 ? size_t(programs) * K : size_t(rows);
  auto index = tt::random_vector<I>(idx_rows * IC, seed + 7, 0, (axis == 0 ? BR : C) - 1);
  std::vector<double> ref(idx_rows * IC);
  for (size_t i = 0; i < idx_rows; ++i)
    for (int j = 0; j < IC; ++j) {
      int64_t k = static_cast<int64_t>(index[i * IC + j]);
      size_t p = i / IR;
      size_t srow = axis == 0 ? p * BR + size_t(k) : i;
      int scol = axis == 0 ? j : int(k);
      ref[i * IC + j] = srow < size_t(rows) ? tt::to_double(src[srow * C + scol]) : 0.0;  // masked source rows read 0
    }
  auto ds = be.upload<float>(src);
  auto di = be.upload<I>(index);
  auto dout = be.alloc_poisoned<float>(ref.size());
  gather_kernel<I>()[{programs}](ds.ptr(), di.ptr(), dout.ptr(), rows, axis, BR, C, K, options_of(be, num_warps));
  tt::host_vector<float> want(ref.size());
  for (size_t i = 0; i < ref.size(); ++i) want[i] = static_cast<float>(ref[i]);
  tt::check_equal<float>(dout.download(), want, "gather axis " + std::to_string(axis));
}

// ---- histogram ------------------------------------------------------------------------------------

// Program p counts its BLOCK elements of x; MASKED passes `offs < n` as the mask, else masked-off
// loads read -1 (outside the bins).
tritium::Kernel& histogram_kernel() {
  static tritium::Kernel k = tritium::kernel(
      "histogram_blocks", [](tl::ptr<int32_t> x, tl::ptr<int32_t> out, tl::i32 n, int BLOCK, int BINS, bool MASKED) {
        auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
        auto m = offs < n;
        auto v = tl::load(x + offs, m, -1);
        auto h = MASKED ? tl::histogram(v, BINS, m) : tl::histogram(v, BINS);
        tl::store(out + tl::program_id(0) * BINS + tl::arange(0, BINS), h);
      });
  return k;
}

void histogram_case(const tt::Backend& be, int n, int BLOCK, int BINS, bool masked, uint32_t seed, int num_warps = 0) {
  int programs = (n + BLOCK - 1) / BLOCK;
  // Values below 0 and at or past BINS are not counted.
  auto x = tt::random_vector<int32_t>(size_t(n), seed, -3, BINS + 3);
  tt::host_vector<int32_t> ref(size_t(programs) * BINS, 0);
  for (int i = 0; i < n; ++i)
    if (x[i] >= 0 && x[i] < BINS) ++ref[size_t(i / BLOCK) * BINS + x[i]];
  auto dx = be.upload<int32_t>(x);
  auto dout = be.alloc_poisoned<int32_t>(ref.size());
  histogram_kernel()[{programs}](dx.ptr(), dout.ptr(), n, BLOCK, BINS, masked, options_of(be, num_warps));
  tt::check_equal<int32_t>(dout.download(), ref, "histogram of " + std::to_string(n) + (masked ? " masked" : ""));
}

// ---- sort / topk ------------------------------------------------------------------------------------

template <class T> tritium::Kernel& sort_kernel() {
  static tritium::Kernel k = tritium::kernel(
      "sort_rows", [](tl::ptr<T> x, tl::ptr<T> out, tl::i32 rows, int BR, int C, bool DESC, int K) {
        auto [offs, m] = row_block(BR, C, rows);
        auto v = tl::load(x + offs, m);
        if (K == 0) {
          tl::store(out + offs, tl::sort(v, std::nullopt, DESC), m);
        } else {
          auto r = tl::program_id(0) * BR + tl::arange(0, BR);
          auto koffs = r(tl::_, tl::None) * K + tl::arange(0, K)(tl::None, tl::_);
          tl::store(out + koffs, tl::topk(v, K, -1), r(tl::_, tl::None) < rows);
        }
      });
  return k;
}

// Rows of whole numbers in a small range: many ties. K == 0 sorts, else the top K.
template <class T> void sort_case(const tt::Backend& be, int rows, int BR, int C, bool desc, int K, uint32_t seed) {
  auto x = tt::random_vector<T>(size_t(rows) * C, seed, -20, 20);
  if constexpr (tt::is_float_v<T>)
    for (auto& v : x) v = tt::from_double<T>(std::round(tt::to_double(v) * 2) / 4);  // quarters: ties
  int W = K == 0 ? C : K;
  tt::host_vector<T> ref(size_t(rows) * W);
  for (int r = 0; r < rows; ++r) {
    std::vector<double> row(C);
    for (int c = 0; c < C; ++c) row[c] = tt::to_double(x[size_t(r) * C + c]);
    if (desc || K) std::sort(row.begin(), row.end(), std::greater<>());
    else std::sort(row.begin(), row.end());
    for (int c = 0; c < W; ++c) ref[size_t(r) * W + c] = tt::from_double<T>(row[c]);
  }
  auto dx = be.upload<T>(x);
  auto dout = be.alloc_poisoned<T>(ref.size());
  sort_kernel<T>()[{(rows + BR - 1) / BR}](dx.ptr(), dout.ptr(), rows, BR, C, desc, K, be.options());
  auto out = dout.download();
  // -0.0 and 0.0 tie: compare values, not bits, for floats.
  if constexpr (tt::is_float_v<T>) {
    std::vector<double> rd(ref.size());
    for (size_t i = 0; i < ref.size(); ++i) rd[i] = tt::to_double(ref[i]);
    tt::check_close<T>(out, rd, 0.0, K ? "topk" : "sort");
  } else {
    tt::check_equal<T>(out, ref, K ? "topk" : "sort");
  }
}

// Traces without compiling (the error tests).
template <class F> void trace(F body) {
  auto k = tritium::kernel("bad_tensor_op", body);
  k.ir(static_cast<float*>(nullptr));
}

// Generates the element-loop CUDA C++ for `k` and compiles it with NVRTC for sm_90a and sm_80.
template <class... A> std::string cuda_compiles(tritium::Kernel& k, const A&... args) {
  auto f = k.optimized_function(args...);
  tritium::jit::CompileOptions opts;
  opts.num_warps = 4;
  cuda::KernelSource ks = cuda::generate_cuda(*f, tritium::jit::analyze_axis_info(*f), opts, cuda::kSharedMemoryBudget);
  for (const char* arch : {"sm_90a", "sm_80"}) {
    std::vector<char> cubin;
    try {
      cubin = cuda::compile_to_cubin(ks.source, ks.entry, arch);
    } catch (const tritium::Error& e) {
      BOOST_ERROR("kernel " << ks.entry << " does not compile for " << arch << ":\n" << e.what());
    }
    BOOST_TEST(!cubin.empty(), ks.entry << " for " << arch);
  }
  return ks.source.substr(ks.source.find("__global__"));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_tensor_ops)

BOOST_AUTO_TEST_CASE(join_split_interleave) {
  tt::for_each_backend([&](const tt::Backend& be) {
    join_case<float>(be, 13, 4, 8, 1);
    join_case<int8_t>(be, 5, 2, 16, 2);
    join_case<f16_t>(be, 7, 8, 4, 3);
    auto out = be.alloc_poisoned<int32_t>(6);
    scalar_join_kernel()[{1}](out.ptr(), 7, -3, be.options());
    tt::check_equal<int32_t>(out.download(), {7, -3, -3, 7, 7, -3}, "join of scalars");
  });
}

BOOST_AUTO_TEST_CASE(gather_along_each_axis) {
  tt::for_each_backend([&](const tt::Backend& be) {
    gather_case<int32_t>(be, 1, 11, 4, 16, 8, 10);   // columns: [4, 16] -> [4, 8]
    gather_case<int64_t>(be, 1, 6, 2, 8, 32, 11);    // more indices than columns, i64 index
    gather_case<int32_t>(be, 0, 16, 8, 4, 16, 12);   // rows: [8, 4] -> [16, 4]
    gather_case<int16_t>(be, 0, 9, 4, 8, 2, 13);     // masked source rows read as 0
  });
}

BOOST_AUTO_TEST_CASE(histogram_counts) {
  tt::for_each_backend([&](const tt::Backend& be) {
    histogram_case(be, 1000, 256, 16, true, 20);
    histogram_case(be, 300, 128, 128, false, 21);
    histogram_case(be, 77, 64, 2, true, 22);
  });
}

BOOST_AUTO_TEST_CASE(sort_and_topk_rows) {
  tt::for_each_backend([&](const tt::Backend& be) {
    sort_case<float>(be, 9, 4, 16, false, 0, 30);
    sort_case<float>(be, 9, 4, 16, true, 0, 31);
    sort_case<int32_t>(be, 5, 2, 32, false, 0, 32);
    sort_case<f16_t>(be, 3, 1, 64, true, 0, 33);
    sort_case<int8_t>(be, 6, 4, 8, false, 0, 34);
    sort_case<float>(be, 9, 4, 32, false, 4, 35);   // top 4 of 32
    sort_case<int32_t>(be, 5, 2, 16, false, 1, 36);  // the max
    sort_case<float>(be, 3, 2, 8, false, 8, 37);    // k = the row: a descending sort
  });
}

// A row of 512 (Liger's sparsemax sorts rows this long and longer): the network's blocks are
// [2, 2, ..., 2] of rank 9, which the CPU backend once compiled as a nest of nine 2-trip loops a
// op that LLVM unrolled fully (a 256-wide sort took 33 s to compile, 1024 minutes; now ~2 s).
BOOST_AUTO_TEST_CASE(sort_a_wide_row) {
  tt::for_each_backend([&](const tt::Backend& be) { sort_case<float>(be, 3, 1, 512, true, 0, 39); });
}

// NaN: Triton's network compares with >, which is false for NaN, so NaN's place is not defined;
// the pairs swap as a whole, so the result is a permutation of the row whatever the NaNs.
BOOST_AUTO_TEST_CASE(sort_keeps_the_elements_with_nan) {
  tt::for_each_backend([&](const tt::Backend& be) {
    const int C = 16, rows = 4;
    auto x = tt::random_vector<float>(rows * C, 40, -5, 5);
    for (int i = 0; i < rows * C; i += 5) x[i] = NAN;
    auto dx = be.upload<float>(x);
    auto dout = be.alloc_poisoned<float>(x.size());
    sort_kernel<float>()[{rows}](dx.ptr(), dout.ptr(), rows, 1, C, false, 0, be.options());
    auto out = dout.download();
    for (int r = 0; r < rows; ++r) {
      std::multiset<uint32_t> want, got;
      for (int c = 0; c < C; ++c) want.insert(std::bit_cast<uint32_t>(x[r * C + c])), got.insert(std::bit_cast<uint32_t>(out[r * C + c]));
      BOOST_TEST((want == got), "row " << r << " is not a permutation of its input");
    }
  });
}

BOOST_AUTO_TEST_CASE(bad_inputs_name_the_line) {
  unsigned line = 0;
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      auto v = tl::load(x + tl::arange(0, 16)).to(tl::int32);
      line = __LINE__; auto h = tl::histogram(v, 0);
      (void)h;
    });
  }, __FILE__, line, {"tl::histogram", "num_bins must be positive", "0"}, "num_bins 0");
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      auto v = tl::load(x + tl::arange(0, 16)).to(tl::int32);
      line = __LINE__; auto h = tl::histogram(v, 12);
      (void)h;
    });
  }, __FILE__, line, {"tl::histogram", "power of two"}, "num_bins 12");
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      line = __LINE__; auto h = tl::histogram(tl::load(x + tl::arange(0, 16)), 8);
      (void)h;
    });
  }, __FILE__, line, {"tl::histogram", "integers", "f32"}, "histogram of floats");
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      auto v = tl::load(x + tl::arange(0, 16)).to(tl::int32);
      line = __LINE__; auto h = tl::histogram(v, 8, v);
      (void)h;
    });
  }, __FILE__, line, {"tl::histogram", "mask must be boolean"}, "histogram mask of i32");
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      auto v = tl::load(x + tl::arange(0, 16))(tl::_, tl::None);
      line = __LINE__; auto s = tl::split(v);
      (void)s;
    });
  }, __FILE__, line, {"tl::split", "last dim must be 2", "[16,1]"}, "split of [16, 1]");
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      auto a = tl::load(x + tl::arange(0, 16));
      line = __LINE__; auto j = tl::join(a, a.to(tl::float16));
      (void)j;
    });
  }, __FILE__, line, {"tl::join", "one dtype", "f32", "f16"}, "join of f32 and f16");
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      auto a = tl::load(x + tl::arange(0, 16));
      line = __LINE__; auto j = tl::join(a, tl::load(x + tl::arange(0, 8)));
      (void)j;
    });
  }, __FILE__, line, {"join", "[16]", "[8]"}, "join of [16] and [8]");
  auto two_d = [](tl::ptr<float> x) {
    return tl::load(x + tl::arange(0, 4)(tl::_, tl::None) * 8 + tl::arange(0, 8)(tl::None, tl::_));
  };
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      auto s = two_d(x);
      line = __LINE__; auto g = tl::gather(s, s, 1);
      (void)g;
    });
  }, __FILE__, line, {"tl::gather", "index must be an integer"}, "float index");
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      auto s = two_d(x);
      line = __LINE__; auto g = tl::gather(s, tl::zeros({4, 8}, tl::int32), 2);
      (void)g;
    });
  }, __FILE__, line, {"tl::gather", "axis 2 is out of range"}, "gather axis 2");
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      auto s = two_d(x);
      line = __LINE__; auto g = tl::gather(s, tl::zeros({8, 8}, tl::int32), 1);
      (void)g;
    });
  }, __FILE__, line, {"tl::gather", "index dim 0", "must match"}, "gather off-axis shape");
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      auto s = two_d(x);
      line = __LINE__; auto g = tl::gather(s, tl::zeros({8}, tl::int32), 0);
      (void)g;
    });
  }, __FILE__, line, {"tl::gather", "same rank"}, "gather rank");
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      auto s = two_d(x);
      line = __LINE__; auto t = tl::sort(s, 0);
      (void)t;
    });
  }, __FILE__, line, {"tl::sort", "only the last dim"}, "sort along dim 0");
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      auto s = two_d(x);
      line = __LINE__; auto t = tl::sort(s, 2);
      (void)t;
    });
  }, __FILE__, line, {"tl::sort", "dim 2 is out of range"}, "sort dim 2");
  for (int64_t k : {0, 3, 16})
    tt::check_throws_at([&] {
      trace([&](tl::ptr<float> x) {
        auto s = two_d(x);
        line = __LINE__; auto t = tl::topk(s, k);
        (void)t;
      });
    }, __FILE__, line, {"tl::topk", "power of two in [1, 8]"}, "topk k " + std::to_string(k));
  // Blocks are powers of two, as in Triton: a 12-wide row cannot exist to be sorted.
  tt::check_throws_at([&] {
    trace([&](tl::ptr<float> x) {
      line = __LINE__; auto t = tl::sort(tl::load(x + tl::arange(0, 12)));
      (void)t;
    });
  }, __FILE__, line, {"power of two"}, "sort of 12 elements");
}

// The element-loop CUDA generator lowers every op (histogram with shared-memory atomics), and the
// code compiles for Hopper and Ampere. Compiled only: no GPU in CI.
BOOST_AUTO_TEST_CASE(cuda_code_compiles) {
  if (!cuda::nvrtc_available()) {
    BOOST_TEST_MESSAGE("skipped: NVRTC is unavailable: " << cuda::nvrtc_unavailable_reason());
    return;
  }
  auto p = [](auto* t) { return t; };
  float* f = nullptr;
  int32_t* i = nullptr;
  std::string h = cuda_compiles(histogram_kernel(), p(i), p(i), 1000, 256, 16, true);
  BOOST_TEST(h.find("atomicAdd") != std::string::npos);
  cuda_compiles(join_kernel<float>(), f, f, f, f, f, f, 13, 4, 8);
  cuda_compiles(scalar_join_kernel(), i, 7, -3);
  cuda_compiles(gather_kernel<int32_t>(), f, i, f, 11, 1, 4, 16, 8);
  cuda_compiles(gather_kernel<int32_t>(), f, i, f, 16, 0, 8, 4, 16);
  cuda_compiles(sort_kernel<float>(), f, f, 9, 4, 16, true, 0);
  cuda_compiles(sort_kernel<float>(), f, f, 9, 4, 32, false, 4);
}

// On CUDA, the same value checks with every kernel forced through the layout generator
// (TRITIUM_CUDA_CODEGEN=layouts; jit/cuda/lowering/data_movement.cpp), at 2 and 8 warps: launches
// whose key (it has num_warps, not the generator) no other test of these kernels uses, so they are
// compiled under the variable and not taken from the in-memory cache. The lead's GPU run checks
// them (docs/cuda-backend.md); skipped without a GPU - test_layout_data_movement compiles the same
// ops through layouts with NVRTC on every machine.
BOOST_AUTO_TEST_CASE(values_through_the_layout_generator) {
  tt::for_each_backend([](const tt::Backend& be) {
    if (!be.device.is_cuda()) return;
    tt::ScopedEnv env("TRITIUM_CUDA_CODEGEN", "layouts");
    for (int w : {2, 8}) {
      BOOST_TEST_CONTEXT(w << " warps") {
        join_case<float>(be, 13, 4, 8, 31, w);
        join_case<int8_t>(be, 5, 2, 16, 32, w);
        join_case<f16_t>(be, 7, 8, 4, 33, w);
        gather_case<int32_t>(be, 1, 11, 4, 16, 8, 34, w);
        gather_case<int32_t>(be, 1, 11, 4, 16, 16, 35, w);  // index and source alike: warp shuffles
        gather_case<int64_t>(be, 1, 6, 2, 8, 32, 36, w);
        gather_case<int32_t>(be, 0, 16, 8, 4, 16, 37, w);
        gather_case<int16_t>(be, 0, 9, 4, 8, 2, 38, w);
        histogram_case(be, 1000, 256, 16, true, 39, w);
        histogram_case(be, 300, 128, 128, false, 40, w);
        histogram_case(be, 77, 64, 2, true, 41, w);
        auto out = be.alloc_poisoned<int32_t>(6);
        tritium::Options o = be.options();
        o.num_warps = w;
        scalar_join_kernel()[{1}](out.ptr(), 7, -3, o);
        tt::check_equal<int32_t>(out.download(), {7, -3, -3, 7, 7, -3}, "join of scalars");
      }
    }
  });
}

BOOST_AUTO_TEST_SUITE_END()
