// Loops over rows in the element-loop CUDA generator (issue 28: Liger's RMSNorm-type backwards,
// one program per SM walking rows_per_program rows and accumulating dW in registers), and the
// bf16 rounding of values whose NaN bits nothing can see. Code checks compile with NVRTC for
// sm_90a without a GPU; the value checks run on every backend (the CPU here, CUDA on a GPU
// machine) against float64 references.
#include <boost/test/unit_test.hpp>
#include <tritium/tritium.h>

#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "test_support.h"

#ifdef TRITIUM_HAS_CUDA_BACKEND
#include "cuda_codegen_check.h"
#include "jit/cuda/cubin_stats.h"
#include "jit/cuda/ptx_codegen.h"
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

// bf16 + - * whose results only feed more arithmetic (so the CUDA generator computes them in bf16,
// tt_badd_rn ...), each then multiplied by 1 to reach memory exactly as it was (a 1 from memory:
// a constant one would be folded away, and the ops stored as they are). [ROWS, 32] blocks: the
// direct PTX generator (1-D blocks only, bf16 through f32) declines it, so a GPU runs this code.
tritium::Kernel& bf16_ops() {
  static auto k = tritium::kernel("bf16_add_sub_mul", [](P A, P B, P ONE, P S, P D, P M, tl::i32 n, int ROWS) {
    auto offs = tl::program_id(0) * (ROWS * 32) + tl::arange(0, ROWS)(tl::_, tl::None) * 32 + tl::arange(0, 32)(tl::None, tl::_);
    auto mask = offs < n;
    auto a = tl::load(A + offs, mask), b = tl::load(B + offs, mask);
    auto one = tl::load(ONE);
    tl::store(S + offs, (a + b) * one, mask);
    tl::store(D + offs, (a - b) * one, mask);
    tl::store(M + offs, (a * b) * one, mask);
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

// Every backend: bf16 a + b, a - b and a * b over random bit patterns (all exponents: subnormals,
// overflow to infinity, cancellation, infinities, NaNs) are the exact results correctly rounded,
// bit for bit; NaN as 0x7fc0. On CUDA the three ops run as add/sub/mul.rn.bf16 (fma.rn.bf16 before
// sm_90), where they went through f32 and a cvt.
BOOST_AUTO_TEST_CASE(bf16_add_sub_mul_are_correctly_rounded) {
  tt::for_each_backend([&](const tt::Backend& be) {
    const int n = 20000 + 37, ROWS = 8;
    std::mt19937 rng(7);
    std::vector<bf16_t> a(n), b(n);
    for (int i = 0; i < n; ++i) {
      a[size_t(i)] = bf16_t{uint16_t(rng())};
      // Half the pairs with nearby exponents (cancellation, ties), half anywhere.
      b[size_t(i)] = i % 2 ? bf16_t{uint16_t(rng())} : bf16_t{uint16_t(int(a[size_t(i)].bits ^ (rng() & 0x80ff)) + (int(rng() % 3) - 1) * 0x80)};
    }
    auto da = be.upload<bf16_t>(a), db = be.upload<bf16_t>(b), done = be.upload<bf16_t>({tt::to_bf16(1.0f)});
    auto ds = be.alloc_poisoned<bf16_t>(n), dd = be.alloc_poisoned<bf16_t>(n), dm = be.alloc_poisoned<bf16_t>(n);
    bf16_ops()[{(n + ROWS * 32 - 1) / (ROWS * 32)}](da.ptr(), db.ptr(), done.ptr(), ds.ptr(), dd.ptr(), dm.ptr(), n, ROWS,
                                                     be.options());
    const std::vector<bf16_t> got[3] = {ds.download(), dd.download(), dm.download()};
    int bad[3] = {0, 0, 0};
    for (int i = 0; i < n; ++i) {
      const long double x = tt::to_float(a[size_t(i)]), y = tt::to_float(b[size_t(i)]);
      const long double exact[3] = {x + y, x - y, x * y};
      for (int o = 0; o < 3; ++o) {
        const uint16_t want = std::isnan(exact[o]) ? uint16_t(0x7fc0) : tt::to_bf16_exact(exact[o]).bits;
        if (got[o][size_t(i)].bits != want && bad[o]++ < 3)
          BOOST_TEST_MESSAGE("op " << o << ": " << std::hex << a[size_t(i)].bits << ", " << b[size_t(i)].bits << " -> "
                                   << got[o][size_t(i)].bits << ", want " << want);
      }
    }
    BOOST_TEST(bad[0] == 0, "a + b: " << bad[0] << " of " << n << " wrong");
    BOOST_TEST(bad[1] == 0, "a - b: " << bad[1] << " of " << n << " wrong");
    BOOST_TEST(bad[2] == 0, "a * b: " << bad[2] << " of " << n << " wrong");
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
// difference under c's cast); x + x, sq * x and x * x (once: the three stores are one loop nest,
// a store group), only computed with again, skip it.
BOOST_AUTO_TEST_CASE(bf16_roundings_skip_the_nan_fix_up_where_no_one_sees_it) {
  if (!tt::nvrtc_or_skip()) return;
  auto ks = tt::compile_cuda(bf16_nans(), tt::CudaCheck().routed(), addr<bf16_t>(0), addr<bf16_t>(1), addr<bf16_t>(2), addr<float>(3),
                             1000, 256);
  const std::string body = tt::kernel_body(ks);
  // ... and, + - * as they are, compute in bf16 (one HADD2 / HMUL2, no cvt: the test below).
  BOOST_TEST(tt::occurrences(body, "tt_badd_rn(") + tt::occurrences(body, "tt_bmul_rn(") == 3u, body);
  BOOST_TEST(tt::occurrences(body, "tt_bf16_from_rn(") == 0u, body);
  BOOST_TEST(tt::occurrences(body, "tt_bf16_from(") == 3u, body);
}

// The kernel of bf16_add_sub_mul_are_correctly_rounded computes its three ops in bf16 on CUDA (the
// value test above is only a test of them where the multiplications by one stay, and where the
// backend takes this generator's code, not the direct PTX generator's).
BOOST_AUTO_TEST_CASE(bf16_add_sub_mul_compute_in_bf16) {
  if (!tt::nvrtc_or_skip()) return;
  auto f = bf16_ops().optimized_function(addr<bf16_t>(0), addr<bf16_t>(1), addr<bf16_t>(2), addr<bf16_t>(3), addr<bf16_t>(4),
                                         addr<bf16_t>(5), 1000, 8);
  BOOST_TEST(!tritium::jit::cuda::generate_ptx(*f, tritium::jit::analyze_axis_info(*f), tritium::jit::CompileOptions{}, "sm_90a"));
  auto ks = tt::compile_cuda(bf16_ops(), tt::CudaCheck().routed().also_for("sm_80"), addr<bf16_t>(0), addr<bf16_t>(1),
                             addr<bf16_t>(2), addr<bf16_t>(3), addr<bf16_t>(4), addr<bf16_t>(5), 1000, 8);
  const std::string body = tt::kernel_body(ks);
  for (const char* op : {"tt_badd_rn(", "tt_bsub_rn(", "tt_bmul_rn("}) BOOST_TEST(tt::occurrences(body, op) == 1u, op << body);
  BOOST_TEST(tt::occurrences(body, "tt_bf16_from(") == 3u, body);  // the stored products by one: NaN fix-up
}

// Liger's poly_norm forward at its benchmark settings (bf16 rows of 4096, 8 warps): its bf16
// products and sums (x^3, x^2, x^6, x^4, the three bf16 row sums: 175 roundings a thread) went
// through f32, each rounded back by cvt.rn.bf16.f32 - an F2F, which issues at 16 a clock an SM.
// 175 F2F x 256 threads a row is 2800 clocks a row an SM: at ~1.9 GHz on 132 SMs that caps the
// kernel near 1.5 TB/s, and the H200 measured a plateau at 1.15-1.29 TB/s where Triton, on
// HMUL2 / HFMA2.BF16, reaches 2.9. Computed in bf16 (tt_bmul_rn / tt_badd_rn) there is no F2F left
// (the stored y's f32 -> bf16 roundings pair up as F2FP.PACK_AB): 904 -> 568 SASS instructions,
// 64 -> 59 registers (Triton: 488, 64). Before s45's NaN fix-up pruning the kernel had 1440.
BOOST_AUTO_TEST_CASE(poly_norm_bf16_arithmetic_stays_off_the_conversion_unit) {
  if (!tt::nvrtc_or_skip()) return;
  namespace cuda = tritium::jit::cuda;
  auto poly_norm = tritium::kernel(
      "liger_poly_norm_fwd", [](P Y, tl::i32 y_stride, P X, tl::i32 x_stride, P W, P Bias, P RSTD, tl::i32 rstd_stride,
                                tl::i32 n_cols, tl::f32 eps, int BLOCK) {
        auto row = tl::program_id(0).to(tl::int64);
        auto cols = tl::arange(0, BLOCK);
        auto mask = cols < n_cols;
        Y += row * y_stride, X += row * x_stride, RSTD += row * rstd_stride;
        auto x = tl::load(X + cols, mask, 0.0);
        auto x3 = x * x * x, x2 = x * x;
        auto r3 = tl::rsqrt(tl::sum(x3 * x3, 0) / n_cols + eps);
        auto r2 = tl::rsqrt(tl::sum(x2 * x2, 0) / n_cols + eps);
        auto r1 = tl::rsqrt(tl::sum(x * x, 0) / n_cols + eps);
        tl::store(RSTD + 0, r3), tl::store(RSTD + 1, r2), tl::store(RSTD + 2, r1);
        auto y = tl::load(W + 0) * (x3 * r3) + tl::load(W + 1) * (x2 * r2) + tl::load(W + 2) * (x * r1) + tl::load(Bias);
        tl::store(Y + cols, y, mask);
      });
  // sm_90a (add/mul.rn.bf16) and sm_80 (fma.rn.bf16).
  for (auto [cc, arch] : {std::pair{90, "sm_90a"}, std::pair{80, "sm_80"}}) {
    auto ks = tt::compile_cuda(poly_norm, tt::CudaCheck().warps(8).routed().target(cc, arch), addr<bf16_t>(0), 4096, addr<bf16_t>(1),
                               4096, addr<float>(2), addr<float>(3), addr<float>(4), 3, 4096, 1e-6f, 4096);
    BOOST_TEST(tt::occurrences(tt::kernel_body(ks), "tt_ld_pred<16>(") == 1u);  // X: 2 x 16 bytes a thread
    const std::vector<char> cubin = cuda::compile_to_cubin(ks.source, ks.entry, arch);
    BOOST_TEST(cuda::cubin_opcode_count(cubin, cuda::kSassF2F) == 0, arch << ": F2F conversions in the SASS");
    const int64_t instructions = cuda::cubin_instructions(cubin);
    BOOST_TEST(instructions > 300);
    BOOST_TEST(instructions <= 640, arch << ": SASS instructions: " << instructions);
    BOOST_TEST(cuda::cubin_registers(cubin) <= 64, arch);  // 4 blocks of 256 threads an SM, as Triton's
  }
}

#endif

BOOST_AUTO_TEST_SUITE_END()
