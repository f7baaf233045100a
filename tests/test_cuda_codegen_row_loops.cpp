// Loops over rows in the element-loop CUDA generator (issue 28: Liger's RMSNorm-type backwards,
// one program per SM walking rows_per_program rows and accumulating dW in registers), and the
// bf16 rounding of values whose NaN bits nothing can see. Code checks compile with NVRTC for
// sm_90a without a GPU; the value checks run on every backend (the CPU here, CUDA on a GPU
// machine) against float64 references.
#include <boost/test/unit_test.hpp>
#include <tritium/tritium.h>

#include <cmath>
#include <string>
#include <vector>

#include "test_support.h"

#ifdef TRITIUM_HAS_CUDA_BACKEND
#include "cuda_codegen_check.h"
#include "jit/cuda/cubin_stats.h"
#endif

namespace tl = tritium::tl;
namespace tt = tritium::test;
using tritium::bf16_t;
using P = tl::ptr<tl::any>;

namespace {

// Liger's _rms_norm_backward_kernel reduced to what the row loop does (casting mode "gemma": f32
// math): dY and W-scaled dY used three times, X once (by its cast), rstd a scalar load, dW carried.
tritium::Kernel& rms_backward() {
  static auto k = tritium::kernel(
      "row_loop_rms_backward", [](P dY, P dX, P X, P W, P RSTD, P dW, tl::i32 n_rows, tl::i32 n_cols, tl::i32 rows_per_program,
                                  int BLOCK) {
        auto pid = tl::program_id(0).to(tl::int64);
        auto row_start = pid * rows_per_program;
        auto row_end = tl::minimum((pid + 1) * rows_per_program, n_rows);
        auto cols = tl::arange(0, BLOCK);
        auto mask = cols < n_cols;
        tl::tensor dw = tl::zeros({BLOCK}, tl::float32);
        auto w = tl::load(W + cols, mask, 0.0);
        for (auto row : tl::range(row_start, row_end)) {
          auto dy = tl::load(dY + row * n_cols + cols, mask, 0.0).to(tl::float32);
          auto x = tl::load(X + row * n_cols + cols, mask, 0.0).to(tl::float32);
          auto rstd = tl::load(RSTD + row);
          auto m = dy * w;
          auto dx = rstd * m - (rstd * rstd * rstd / n_cols) * tl::sum(m * x, 0) * x;
          dw += dy * (x * rstd);
          tl::store(dX + row * n_cols + cols, dx, mask);
        }
        tl::store(dW + pid * n_cols + cols, dw, mask);
      });
  return k;
}

// bf16 arithmetic whose intermediate NaNs are seen in three ways: through more arithmetic (b),
// stored directly (a) and stored after a cast to f32 (c).
tritium::Kernel& bf16_nans() {
  static auto k = tritium::kernel("bf16_nan_bits", [](P X, P A, P B, P C, tl::i32 n, int BLOCK) {
    auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    auto mask = offs < n;
    auto x = tl::load(X + offs, mask);
    auto sq = x * x;                       // bf16, used by arithmetic only (b's product, c's difference)
    auto b = sq * x + x;                   // bf16 arithmetic on it: stored
    auto a = (x + x) * x;                  // stored as it is
    auto c = (x - x * x).to(tl::float32);  // bf16 widened and stored as f32
    tl::store(A + offs, a, mask);
    tl::store(B + offs, b, mask);
    tl::store(C + offs, c, mask);
  });
  return k;
}

float bf16r(double v) { return tt::to_float(tt::to_bf16(static_cast<float>(v))); }

}  // namespace

BOOST_AUTO_TEST_SUITE(test_cuda_codegen_row_loops)

// Every backend: the row loop against float64 (rows not a multiple of the programs, columns not
// a multiple of the block, outputs poisoned).
BOOST_AUTO_TEST_CASE(row_loop_rms_backward_values) {
  tt::for_each_backend([&](const tt::Backend& be) {
    const int rows = 37, cols = 300, BLOCK = 512, programs = 4, per_program = (rows + programs - 1) / programs;
    auto dy = tt::random_vector<bf16_t>(size_t(rows) * cols, 1), x = tt::random_vector<bf16_t>(size_t(rows) * cols, 2);
    auto w = tt::random_vector<float>(cols, 3, 0.5, 1.5), rstd = tt::random_vector<float>(rows, 4, 0.5, 2.0);
    auto ddy = be.upload<bf16_t>(dy), dx_ = be.upload<bf16_t>(x);
    auto dw_in = be.upload<float>(w), drstd = be.upload<float>(rstd);
    auto ddx = be.alloc_poisoned<bf16_t>(size_t(rows) * cols);
    auto ddw = be.alloc_poisoned<float>(size_t(programs) * cols);
    rms_backward()[{programs}](ddy.ptr(), ddx.ptr(), dx_.ptr(), dw_in.ptr(), drstd.ptr(), ddw.ptr(), rows, cols, per_program, BLOCK,
                               be.options());
    std::vector<double> ref_dx(size_t(rows) * cols), ref_dw(size_t(programs) * cols, 0.0);
    for (int r = 0; r < rows; ++r) {
      const double s = rstd[size_t(r)];
      double dot = 0;
      for (int j = 0; j < cols; ++j) dot += double(tt::to_float(dy[size_t(r * cols + j)])) * w[size_t(j)] * tt::to_float(x[size_t(r * cols + j)]);
      for (int j = 0; j < cols; ++j) {
        const double dyj = tt::to_float(dy[size_t(r * cols + j)]), xj = tt::to_float(x[size_t(r * cols + j)]);
        ref_dx[size_t(r * cols + j)] = s * dyj * w[size_t(j)] - s * s * s / cols * dot * xj;
        ref_dw[size_t((r / per_program) * cols + j)] += dyj * xj * s;
      }
    }
    tt::check_close<bf16_t>(ddx.download(), ref_dx, 1e-2, "dX");
    tt::check_close<float>(ddw.download(), ref_dw, 1e-5, "dW");
  });
}

// Every backend: bf16 NaNs reach memory as 0x7fc0 (the CPU backend's bits; f32 0x7fc00000 after a
// cast), however they were rounded on the way; other values as float64 rounded op by op.
BOOST_AUTO_TEST_CASE(bf16_nan_bits_in_memory) {
  tt::for_each_backend([&](const tt::Backend& be) {
    const int n = 1000, BLOCK = 256;
    auto x = tt::random_vector<bf16_t>(n, 5, -2.0, 2.0);
    for (int i = 0; i < n; i += 7) x[size_t(i)] = bf16_t{uint16_t(i % 2 ? 0x7fc1 : 0xffff)};  // NaNs with payloads
    auto dx = be.upload<bf16_t>(x);
    auto da = be.alloc_poisoned<bf16_t>(n), db = be.alloc_poisoned<bf16_t>(n);
    auto dc = be.alloc_poisoned<float>(n);
    bf16_nans()[{(n + BLOCK - 1) / BLOCK}](dx.ptr(), da.ptr(), db.ptr(), dc.ptr(), n, BLOCK, be.options());
    auto a = da.download(), b = db.download();
    auto c = dc.download();
    size_t bad_nan = 0, bad_value = 0;
    for (int i = 0; i < n; ++i) {
      if (i % 7 == 0) {
        bad_nan += a[size_t(i)].bits != 0x7fc0 || b[size_t(i)].bits != 0x7fc0 || std::bit_cast<uint32_t>(c[size_t(i)]) != 0x7fc00000u;
        continue;
      }
      const double v = tt::to_float(x[size_t(i)]);
      const float sq = bf16r(v * v), ea = bf16r(double(bf16r(v + v)) * v), eb = bf16r(double(bf16r(double(sq) * v)) + v);
      const float ec = bf16r(v - double(sq));
      bad_value += tt::to_float(a[size_t(i)]) != ea || tt::to_float(b[size_t(i)]) != eb || c[size_t(i)] != ec;
    }
    BOOST_TEST(bad_nan == 0u);
    BOOST_TEST(bad_value == 0u);
  });
}

#ifdef TRITIUM_HAS_CUDA_BACKEND

template <class T> T* addr(uint64_t i) { return tt::fake_address<T>(i); }

// X, used once (by its cast), was evaluated inside its consumer and so waited for memory every
// row while dY (used three times, so in registers) was issued a trip ahead; both go ahead now.
// Liger's rms_norm backward (bf16 rows of 4096, 8 warps, a program per SM) spent most of a row
// waiting for X: 0.74 of Triton's speed, whose loop issues both loads at its top.
BOOST_AUTO_TEST_CASE(loads_used_once_are_issued_a_trip_ahead) {
  if (!tt::nvrtc_or_skip()) return;
  auto ks = tt::compile_cuda(rms_backward(), tt::CudaCheck().warps(8).routed(), addr<bf16_t>(0), addr<bf16_t>(1), addr<bf16_t>(2),
                             addr<float>(3), addr<float>(4), addr<float>(5), 32768, 4096, 249, 4096);
  const std::string body = tt::kernel_body(ks);
  BOOST_TEST(tt::occurrences(body, "// loads issued ahead: 2, 1 trip(s)") == 1u, body);
  // dY and X before the loop and in it (a loop over 2 chunks of 8 each); W's f32 chunk as two.
  BOOST_TEST(tt::occurrences(body, "tt_ld_pred<16>(") == 6u, body);
}

// The registers of copies a trip ahead are bounded (48 a thread): f32 rows of 4096 on 8 warps are
// 16 registers a thread each; of four loads used once, three go ahead.
BOOST_AUTO_TEST_CASE(loads_issued_ahead_stay_within_a_register_budget) {
  if (!tt::nvrtc_or_skip()) return;
  auto k = tritium::kernel("four_rows", [](tl::ptr<float> A, tl::ptr<float> B, tl::ptr<float> C, tl::ptr<float> D, tl::ptr<float> O,
                                           tl::i32 n_rows, int BLOCK) {
    auto cols = tl::arange(0, BLOCK);
    tl::tensor acc = tl::zeros({BLOCK}, tl::float32);
    for (auto row : tl::range(0, n_rows)) {
      acc += tl::load(A + row * BLOCK + cols) * tl::load(B + row * BLOCK + cols) +
             tl::load(C + row * BLOCK + cols) * tl::load(D + row * BLOCK + cols);
    }
    tl::store(O + cols, acc);
  });
  auto ks = tt::compile_cuda(k, tt::CudaCheck().warps(8).routed(), addr<float>(0), addr<float>(1), addr<float>(2), addr<float>(3),
                             addr<float>(4), 64, 4096);
  BOOST_TEST(tt::occurrences(tt::kernel_body(ks), "// loads issued ahead: 3, 1 trip(s)") == 1u, tt::kernel_body(ks));
}

// Which bf16 roundings keep the NaN fix-up: those whose NaN bits can reach memory (a, b, the
// difference under c's cast); x + x, sq * x and x * x (evaluated in b's and in c's loop), only
// computed with again, skip it.
BOOST_AUTO_TEST_CASE(bf16_roundings_skip_the_nan_fix_up_where_no_one_sees_it) {
  if (!tt::nvrtc_or_skip()) return;
  auto ks = tt::compile_cuda(bf16_nans(), tt::CudaCheck().routed(), addr<bf16_t>(0), addr<bf16_t>(1), addr<bf16_t>(2), addr<float>(3),
                             1000, 256);
  const std::string body = tt::kernel_body(ks);
  BOOST_TEST(tt::occurrences(body, "tt_bf16_from_rn(") == 4u, body);
  BOOST_TEST(tt::occurrences(body, "tt_bf16_from(") == 3u, body);
}

#endif

BOOST_AUTO_TEST_SUITE_END()
