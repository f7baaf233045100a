// tl::dot: every operand type (f32, f16, bf16 -> f32; i8 -> i32; f64), with and without an
// accumulator, transposed operands, and a tiled matmul (Triton's tutorial 03 without autotuning)
// whose sizes are not multiples of the blocks. References are float64 (exact int64 for i8).
#include "test_support.h"

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <unistd.h>

namespace tl = tritium::tl;
namespace tt = tritium::test;
using tritium::bf16_t;
using tritium::f16_t;
using tritium::f8e4m3_t;
using tritium::f8e5m2_t;

namespace {

template <class T> using acc_t = std::conditional_t<std::is_integral_v<T>, int32_t, std::conditional_t<std::is_same_v<T, double>, double, float>>;

// a [M, K] (or [K, M] when TRANS_A, used through .T()), b [K, N] (or [N, K] when TRANS_B, used
// through tl::trans); out = a @ b (+ c). Program p works on the p-th set of matrices.
template <class T>
tritium::Kernel& dot_kernel() {
  using A = acc_t<T>;
  static tritium::Kernel k = tritium::kernel(
      "dot_block", [](tl::ptr<T> a, tl::ptr<T> b, tl::ptr<A> c, tl::ptr<A> out, int M, int N, int K, bool HAS_ACC,
                      bool TRANS_A, bool TRANS_B) {
        auto pid = tl::program_id(0);
        auto rm = tl::arange(0, M), rn = tl::arange(0, N), rk = tl::arange(0, K);
        a = a + pid * (M * K);
        b = b + pid * (K * N);
        tl::tensor av, bv;
        if (TRANS_A) av = tl::load(a + rk(tl::_, tl::None) * M + rm(tl::None, tl::_)).T();
        else av = tl::load(a + rm(tl::_, tl::None) * K + rk(tl::None, tl::_));
        if (TRANS_B) bv = tl::trans(tl::load(b + rn(tl::_, tl::None) * K + rk(tl::None, tl::_)));
        else bv = tl::load(b + rk(tl::_, tl::None) * N + rn(tl::None, tl::_));
        auto offs_c = pid * (M * N) + rm(tl::_, tl::None) * N + rn(tl::None, tl::_);
        tl::tensor r = HAS_ACC ? tl::dot(av, bv, tl::load(c + offs_c)) : tl::dot(av, bv);
        tl::static_assert_(r.dtype() == tritium::dtype_of<A>(), std::string("dot result dtype is ") + tritium::dtype_name(r.dtype()));
        tl::store(out + offs_c, r);
      });
  return k;
}

template <class T> double dot_tol(const tt::Backend& be) {
  if constexpr (std::is_same_v<T, double>) return 1e-12;
  else if constexpr (std::is_same_v<T, float>) return be.name == "cpu" ? 1e-5 : 1e-3;  // tf32 on GPUs
  else if constexpr (std::is_same_v<T, f16_t>) return 1e-3;
  // fp8: the products are exact in f32; Hopper's fp8 tensor cores add with fewer mantissa bits.
  else if constexpr (tt::is_fp8_v<T>) return be.name == "cpu" ? 1e-5 : 1e-3;
  // bf16: the products are exact in f32 too, and the CPU adds them in f32 (VDPBF16PS or FMAs).
  else return be.name == "cpu" ? 1e-5 : 1e-2;
}

struct DotShape { int m, n, k; };

template <class T>
void dot_cases(const tt::Backend& be, uint32_t seed,
               std::vector<DotShape> shapes = {{16, 16, 16}, {32, 64, 16}, {64, 32, 128}}, bool all_transposes = false) {
  using A = acc_t<T>;
  const int P = 2;
  for (DotShape s : shapes)
    for (bool has_acc : {false, true})
      for (int trans : {0, 1, 2}) {  // 0: none, 1: a transposed, 2: b transposed
        if (trans && !all_transposes && !(s.m == 32 && s.n == 64) && !(s.m == 16)) continue;  // transposes on two shapes
        double lo = std::is_integral_v<T> ? -128 : -1, hi = std::is_integral_v<T> ? 127 : 1;
        auto a = tt::random_vector<T>(size_t(P) * s.m * s.k, ++seed, lo, hi);
        auto b = tt::random_vector<T>(size_t(P) * s.k * s.n, ++seed, lo, hi);
        auto c = tt::random_vector<A>(size_t(P) * s.m * s.n, ++seed, std::is_integral_v<T> ? -100000 : -1,
                                      std::is_integral_v<T> ? 100000 : 1);
        std::vector<double> ref(size_t(P) * s.m * s.n), mag(ref.size());
        for (int p = 0; p < P; ++p)
          for (int i = 0; i < s.m; ++i)
            for (int j = 0; j < s.n; ++j) {
              double acc = has_acc ? tt::to_double(c[(size_t(p) * s.m + i) * s.n + j]) : 0.0;
              double m = std::abs(acc);
              for (int kk = 0; kk < s.k; ++kk) {
                // a is [m, k] row-major per program; b is [k, n]. Transposed layouts are
                // generated from the same logical matrices below.
                double prod = tt::to_double(a[(size_t(p) * s.m + i) * s.k + kk]) * tt::to_double(b[(size_t(p) * s.k + kk) * s.n + j]);
                acc += prod;
                m += std::abs(prod);
              }
              ref[(size_t(p) * s.m + i) * s.n + j] = acc;
              mag[(size_t(p) * s.m + i) * s.n + j] = m;
            }
        // Physical layouts for the transposed variants.
        tt::host_vector<T> a_mem = a, b_mem = b;
        if (trans == 1)
          for (int p = 0; p < P; ++p)
            for (int i = 0; i < s.m; ++i)
              for (int kk = 0; kk < s.k; ++kk)
                a_mem[(size_t(p) * s.k + kk) * s.m + i] = a[(size_t(p) * s.m + i) * s.k + kk];
        if (trans == 2)
          for (int p = 0; p < P; ++p)
            for (int kk = 0; kk < s.k; ++kk)
              for (int j = 0; j < s.n; ++j)
                b_mem[(size_t(p) * s.n + j) * s.k + kk] = b[(size_t(p) * s.k + kk) * s.n + j];
        std::string what = std::string(tritium::dtype_name(tritium::dtype_of<T>())) + " " + std::to_string(s.m) + "x" +
                           std::to_string(s.n) + "x" + std::to_string(s.k) + (has_acc ? " +acc" : "") +
                           (trans == 1 ? " a.T()" : trans == 2 ? " trans(b)" : "");
        BOOST_TEST_CONTEXT(what) {
          auto da = be.template upload<T>(a_mem), db = be.template upload<T>(b_mem);
          auto dc = be.template upload<A>(c);
          auto dout = be.template alloc_poisoned<A>(ref.size());
          dot_kernel<T>()[{P}](da.ptr(), db.ptr(), dc.ptr(), dout.ptr(), s.m, s.n, s.k, has_acc, trans == 1, trans == 2,
                               be.options());
          auto out = dout.download();
          if constexpr (std::is_integral_v<T>) {
            tt::host_vector<A> r(ref.size());
            for (size_t i = 0; i < ref.size(); ++i) r[i] = static_cast<A>(ref[i]);
            tt::check_equal<A>(out, r, what);
          } else {
            tt::check_dot<A>(out, ref, mag, dot_tol<T>(be), what);
          }
        }
      }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_dot)

// The checks themselves: a dozen elements of a bf16 dot (K = 64) that missed their last K block
// of 16, among 100,000, pass the norm-wise bound of 1e-2 but not check_dot's bound per element.
BOOST_AUTO_TEST_CASE(check_dot_catches_a_few_wrong_elements) {
  const size_t n = 100000;
  const int K = 64;
  auto a = tt::random_vector<bf16_t>(n * K, 500), b = tt::random_vector<bf16_t>(n * K, 501);
  std::vector<double> ref(n), mag(n);
  tt::host_vector<float> out(n);
  for (size_t i = 0; i < n; ++i) {
    for (int k = 0; k < K; ++k) {
      double p = tt::to_double(a[i * K + k]) * tt::to_double(b[i * K + k]);
      ref[i] += p;
      mag[i] += std::abs(p);
    }
    out[i] = static_cast<float>(ref[i]);  // a right f32 result
  }
  BOOST_TEST(tt::dot_outliers<float>(out, ref, mag, 1e-2) == 0u);
  for (size_t i = 0; i < 12; ++i) {  // a dozen elements that skipped the K block [48, 64)
    double partial = 0;
    for (int k = 0; k < 48; ++k) partial += tt::to_double(a[i * 8191 * K + k]) * tt::to_double(b[i * 8191 * K + k]);
    out[i * 8191] = static_cast<float>(partial);
  }
  BOOST_TEST(tt::rel_error<float>(out, ref) <= 1e-2);     // norm-wise: passes
  BOOST_TEST(tt::dot_outliers<float>(out, ref, mag, 1e-2) >= 10u);  // per element: caught
}

BOOST_AUTO_TEST_CASE(dot_f32) { tt::for_each_backend([](const tt::Backend& be) { dot_cases<float>(be, 100); }); }
BOOST_AUTO_TEST_CASE(dot_f16) { tt::for_each_backend([](const tt::Backend& be) { dot_cases<f16_t>(be, 200); }); }
BOOST_AUTO_TEST_CASE(dot_bf16) { tt::for_each_backend([](const tt::Backend& be) { dot_cases<bf16_t>(be, 300); }); }
BOOST_AUTO_TEST_CASE(dot_fp8) {
  tt::for_each_backend([](const tt::Backend& be) {
    dot_cases<f8e4m3_t>(be, 350);
    dot_cases<f8e5m2_t>(be, 370);
  });
}
BOOST_AUTO_TEST_CASE(dot_i8) { tt::for_each_backend([](const tt::Backend& be) { dot_cases<int8_t>(be, 400); }); }
BOOST_AUTO_TEST_CASE(dot_f64) { tt::for_each_backend([](const tt::Backend& be) { dot_cases<double>(be, 500); }); }

// Shapes around the CPU micro-kernel's register tile (6 rows x 4 vectors of 16 lanes for f32 on
// AVX-512, 6 x 2 for f64): M never a multiple of 6 (edge tiles of 4 and 2 rows), N from one
// vector to 16, the smallest blocks, long K, in every dtype.
BOOST_AUTO_TEST_CASE(dot_micro_tile_edges) {
  const std::vector<DotShape> shapes = {{16, 256, 16}, {128, 16, 32}, {32, 32, 256}, {64, 128, 16}, {128, 128, 32}};
  tt::for_each_backend([&](const tt::Backend& be) {
    dot_cases<float>(be, 600, shapes, true);
    dot_cases<f16_t>(be, 700, shapes);
    dot_cases<bf16_t>(be, 800, shapes);
    dot_cases<int8_t>(be, 900, shapes);
    dot_cases<double>(be, 1000, shapes, true);
  });
}

// On a host with AVX512_BF16 the CPU dot of bf16 operands takes two k-steps an instruction
// (VDPBF16PS, jit/cpu/dot.cpp); f16 never does; the values are dot_bf16's, checked above at the
// CPU's f32 bound.
BOOST_AUTO_TEST_CASE(bf16_dot_takes_two_k_a_vector_instruction_where_the_host_has_it, *tt::needs_cpu_backend()) {
  std::ifstream cpuinfo("/proc/cpuinfo");
  const std::string info((std::istreambuf_iterator<char>(cpuinfo)), std::istreambuf_iterator<char>());
  const bool host_has = info.find(" avx512_bf16") != std::string::npos && info.find(" avx512f") != std::string::npos;
  auto code = [&](auto tag, const std::string& what) {
    using T = decltype(tag);
    const auto dir = std::filesystem::temp_directory_path() / ("tritium-bf16dot-" + what + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    tt::FreshCacheDir cache("bf16dot" + what);
    tt::host_vector<T> a(64 * 64), b(64 * 64);
    tt::host_vector<float> out(64 * 64);
    {
      tt::ScopedEnv dump("TRITIUM_DUMP", dir.c_str());
      dot_kernel<T>()[{1}](a.data(), b.data(), out.data(), out.data(), 64, 64, 64, false, false, false,
                           tritium::Options{.device = tritium::Device::cpu()});
    }
    std::ifstream in(dir / "dot_block.opt.ll");
    std::string ll((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::filesystem::remove_all(dir);
    BOOST_TEST(ll.find("define ") != std::string::npos, "no LLVM IR dumped for " << what);
    return ll;
  };
  const std::string bf16 = code(bf16_t{}, "bf16"), f16 = code(f16_t{}, "f16");
  const bool uses = bf16.find("dpbf16ps") != std::string::npos;
  BOOST_TEST(uses == host_has, "host has AVX512_BF16: " << host_has << "; the bf16 dot uses VDPBF16PS: " << uses);
  BOOST_TEST(f16.find("dpbf16ps") == std::string::npos);
}

// The CPU dot may write its result over its accumulator's buffer when that accumulator is dead.
// These kernels keep it alive: read again after the dot, used by a dot inside a loop that runs
// it several times, carried by a loop beside the dot's result, and the dot's own operand.
BOOST_AUTO_TEST_CASE(dot_accumulator_stays_intact_while_used) {
  auto k = tritium::kernel("dot_acc_reuse", [](tl::ptr<float> a, tl::ptr<float> b, tl::ptr<float> c, tl::ptr<float> out,
                                               int M, int N, int K) {
    auto rm = tl::arange(0, M), rn = tl::arange(0, N), rk = tl::arange(0, K);
    auto av = tl::load(a + rm(tl::_, tl::None) * K + rk(tl::None, tl::_));
    auto bv = tl::load(b + rk(tl::_, tl::None) * N + rn(tl::None, tl::_));
    auto offs = rm(tl::_, tl::None) * N + rn(tl::None, tl::_);
    auto cv = tl::load(c + offs) * 1.0f;
    // 0: c + ab, then c again.
    auto r = tl::dot(av, bv, cv);
    tl::store(out + offs, r);
    tl::store(out + M * N + offs, cv);
    // 1, 2: c + ab from a dot run twice in a loop, c defined outside it.
    for (auto i : tl::range(0, 2)) tl::store(out + (2 + i) * M * N + offs, tl::dot(av, bv, cv));
    // 3, 4: acc = c + 3ab after three trips, prev = c + 2ab (the value acc had before the last).
    auto acc = cv + 0.0f;
    auto prev = cv + 0.0f;
    for (auto i : tl::range(0, 3)) {
      auto next = tl::dot(av, bv, acc);
      prev = acc;
      acc = next;
    }
    tl::store(out + 4 * M * N + offs, acc);
    tl::store(out + 5 * M * N + offs, prev);
    // 6: x @ x + x, the accumulator also both operands (M = N).
    auto x = tl::load(c + offs) * 1.0f;
    tl::store(out + 6 * M * N + offs, tl::dot(x, x, x));
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int M = 32, N = 32, K = 16;
    auto a = tt::random_vector<float>(M * K, 21), b = tt::random_vector<float>(K * N, 22), c = tt::random_vector<float>(M * N, 23);
    std::vector<double> ref(7 * M * N);
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        double ab = 0;
        for (int kk = 0; kk < K; ++kk) ab += double(a[i * K + kk]) * b[kk * N + j];
        double cv = c[i * N + j];
        const double expect[6] = {cv + ab, cv, cv + ab, cv + ab, cv + 3 * ab, cv + 2 * ab};
        for (int o = 0; o < 6; ++o) ref[o * M * N + i * N + j] = expect[o];
        double cc = cv;
        for (int kk = 0; kk < N; ++kk) cc += double(c[i * N + kk]) * c[kk * N + j];
        ref[6 * M * N + i * N + j] = cc;
      }
    auto da = be.upload<float>(a), db = be.upload<float>(b), dc = be.upload<float>(c);
    auto dout = be.alloc_poisoned<float>(ref.size());
    k[{1}](da.ptr(), db.ptr(), dc.ptr(), dout.ptr(), M, N, K, be.options());
    tt::check_close<float>(dout.download(), ref, dot_tol<float>(be), "accumulator reused after the dot");
  });
}

// Elementwise work on dot operands and results: (2a) @ b + c, relu, in one kernel.
BOOST_AUTO_TEST_CASE(dot_fused_with_elementwise) {
  auto k = tritium::kernel("dot_epilogue", [](tl::ptr<float> a, tl::ptr<float> b, tl::ptr<float> bias, tl::ptr<float> out,
                                              int M, int N, int K) {
    auto rm = tl::arange(0, M), rn = tl::arange(0, N), rk = tl::arange(0, K);
    auto av = tl::load(a + rm(tl::_, tl::None) * K + rk(tl::None, tl::_)) * 2.0f;
    auto bv = tl::load(b + rk(tl::_, tl::None) * N + rn(tl::None, tl::_));
    auto r = tl::dot(av, bv) + tl::load(bias + rn)(tl::None, tl::_);
    tl::store(out + rm(tl::_, tl::None) * N + rn(tl::None, tl::_), tl::maximum(r, 0.0f));
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int M = 32, N = 16, K = 64;
    auto a = tt::random_vector<float>(M * K, 1), b = tt::random_vector<float>(K * N, 2), bias = tt::random_vector<float>(N, 3);
    std::vector<double> ref(M * N);
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        double s = bias[j];
        for (int kk = 0; kk < K; ++kk) s += 2.0 * a[i * K + kk] * b[kk * N + j];
        ref[i * N + j] = std::max(s, 0.0);
      }
    auto da = be.upload<float>(a), db = be.upload<float>(b), dbias = be.upload<float>(bias);
    auto dout = be.alloc_poisoned<float>(M * N);
    k[{1}](da.ptr(), db.ptr(), dbias.ptr(), dout.ptr(), M, N, K, be.options());
    tt::check_close<float>(dout.download(), ref, dot_tol<float>(be), "relu(2a @ b + bias)");
  });
}

// Chained dots (the attention pattern): o = softmax_rows(q @ k^T) @ v, the first result feeding the second.
BOOST_AUTO_TEST_CASE(chained_dots) {
  auto kern = tritium::kernel("attention_block", [](tl::ptr<float> q, tl::ptr<float> k, tl::ptr<float> v, tl::ptr<float> o,
                                                   int M, int N, int D) {
    auto rm = tl::arange(0, M), rn = tl::arange(0, N), rd = tl::arange(0, D);
    auto qv = tl::load(q + rm(tl::_, tl::None) * D + rd(tl::None, tl::_));
    auto kv = tl::load(k + rn(tl::_, tl::None) * D + rd(tl::None, tl::_));
    auto vv = tl::load(v + rn(tl::_, tl::None) * D + rd(tl::None, tl::_));
    auto s = tl::dot(qv, tl::trans(kv)) * 0.125f;
    auto p = tl::exp(s - tl::max(s, 1, true));
    p = p / tl::sum(p, 1, true);
    tl::store(o + rm(tl::_, tl::None) * D + rd(tl::None, tl::_), tl::dot(p, vv));
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int M = 32, N = 64, D = 16;
    auto q = tt::random_vector<float>(M * D, 11), k = tt::random_vector<float>(N * D, 12), v = tt::random_vector<float>(N * D, 13);
    std::vector<double> ref(M * D, 0.0);
    for (int i = 0; i < M; ++i) {
      std::vector<double> s(N);
      double m = -INFINITY, sum = 0;
      for (int j = 0; j < N; ++j) {
        s[j] = 0;
        for (int d = 0; d < D; ++d) s[j] += double(q[i * D + d]) * k[j * D + d];
        s[j] *= 0.125;
        m = std::max(m, s[j]);
      }
      for (int j = 0; j < N; ++j) sum += s[j] = std::exp(s[j] - m);
      for (int j = 0; j < N; ++j)
        for (int d = 0; d < D; ++d) ref[i * D + d] += s[j] / sum * v[j * D + d];
    }
    auto dq = be.upload<float>(q), dk = be.upload<float>(k), dv = be.upload<float>(v);
    auto dout = be.alloc_poisoned<float>(M * D);
    kern[{1}](dq.ptr(), dk.ptr(), dv.ptr(), dout.ptr(), M, N, D, be.options());
    tt::check_close<float>(dout.download(), ref, dot_tol<float>(be), "softmax(q k^T / 8) v");
  });
}

// An f32 block cast to bf16 for nothing but a dot's A operand (attention's P): the CUDA layout
// generator rounds it without the NaN fix-up (tt_bf16_from_rn, lowering/values.cpp) since the
// tensor cores make any NaN the same NaN. Rows holding a NaN or an infinity come out NaN / inf as
// on the CPU; the others are the float64 product of the rounded values. The cast's other use (the
// store of pb) keeps the fix-up: NaN stays 0x7fc0 in memory.
BOOST_AUTO_TEST_CASE(dot_of_an_f32_block_cast_to_bf16) {
  auto kern = tritium::kernel("dot_bf16_cast", [](tl::ptr<float> a, tl::ptr<bf16_t> b, tl::ptr<float> c, tl::ptr<bf16_t> pb,
                                                   int M, int N, int K) {
    auto rm = tl::arange(0, M), rn = tl::arange(0, N), rk = tl::arange(0, K);
    auto av = tl::load(a + rm(tl::_, tl::None) * K + rk(tl::None, tl::_));
    auto bv = tl::load(b + rk(tl::_, tl::None) * N + rn(tl::None, tl::_));
    tl::store(c + rm(tl::_, tl::None) * N + rn(tl::None, tl::_), tl::dot(av.to(tl::bfloat16), bv));
    tl::store(pb + rm(tl::_, tl::None) * K + rk(tl::None, tl::_), (av * 2.0f).to(tl::bfloat16));
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int M = 64, N = 64, K = 32;
    auto a = tt::random_vector<float>(M * K, 21);
    auto b = tt::random_vector<bf16_t>(K * N, 22);
    a[size_t(3) * K + 5] = NAN;
    a[size_t(9) * K + 0] = INFINITY;
    std::vector<double> ref(size_t(M) * N, 0.0);
    for (int i = 0; i < M; ++i)
      for (int kk = 0; kk < K; ++kk) {
        const double x = tt::to_double(tt::to_bf16(a[size_t(i) * K + kk]));
        for (int j = 0; j < N; ++j) ref[size_t(i) * N + j] += x * tt::to_double(b[size_t(kk) * N + j]);
      }
    auto da = be.upload<float>(a);
    auto db = be.upload<bf16_t>(b);
    auto dc = be.alloc_poisoned<float>(ref.size());
    auto dp = be.alloc_poisoned<bf16_t>(a.size());
    kern[{1}](da.ptr(), db.ptr(), dc.ptr(), dp.ptr(), M, N, K, be.options());
    auto c = dc.download();
    auto pbits = dp.download();
    int bad = 0;
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        const double got = c[size_t(i) * N + j], want = ref[size_t(i) * N + j];
        const bool ok = std::isnan(want) ? std::isnan(got)
                        : std::isinf(want) ? got == want
                                           : std::abs(got - want) <= 1e-2 * (1 + std::abs(want));
        bad += !ok;
      }
    BOOST_TEST(bad == 0);
    BOOST_TEST(std::isnan(c[size_t(3) * N + 7]));
    BOOST_TEST(pbits[size_t(3) * K + 5].bits == 0x7fc0);  // the stored NaN: the fix-up's
  });
}

// ---- tiled matmul: Triton's tutorial 03 (grouped program ids, masks, a run-time K loop) --------

// tl::dot's input_precision by index ("": the default, tf32).
const char* const kPrecisions[] = {"", "tf32", "tf32x3", "ieee"};

template <class T, class C = T>
tritium::Kernel& matmul_kernel() {
  static tritium::Kernel k = tritium::kernel(
      "matmul_kernel",
      [](tl::ptr<T> a_ptr, tl::ptr<T> b_ptr, tl::ptr<C> c_ptr, tl::i32 M, tl::i32 N, tl::i32 K, tl::i32 stride_am,
         tl::i32 stride_ak, tl::i32 stride_bk, tl::i32 stride_bn, tl::i32 stride_cm, tl::i32 stride_cn, int BLOCK_SIZE_M,
         int BLOCK_SIZE_N, int BLOCK_SIZE_K, int GROUP_SIZE_M, int PRECISION) {
        auto pid = tl::program_id(0);
        auto num_pid_m = tl::cdiv(M, BLOCK_SIZE_M);
        auto num_pid_n = tl::cdiv(N, BLOCK_SIZE_N);
        auto num_pid_in_group = GROUP_SIZE_M * num_pid_n;
        auto group_id = pid / num_pid_in_group;
        auto first_pid_m = group_id * GROUP_SIZE_M;
        auto group_size_m = tl::minimum(num_pid_m - first_pid_m, GROUP_SIZE_M);
        auto pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m);
        auto pid_n = (pid % num_pid_in_group) / group_size_m;

        auto offs_am = (pid_m * BLOCK_SIZE_M + tl::arange(0, BLOCK_SIZE_M)) % M;
        auto offs_bn = (pid_n * BLOCK_SIZE_N + tl::arange(0, BLOCK_SIZE_N)) % N;
        auto offs_k = tl::arange(0, BLOCK_SIZE_K);
        auto a_ptrs = a_ptr + (offs_am(tl::_, tl::None) * stride_am + offs_k(tl::None, tl::_) * stride_ak);
        auto b_ptrs = b_ptr + (offs_k(tl::_, tl::None) * stride_bk + offs_bn(tl::None, tl::_) * stride_bn);

        auto accumulator = tl::zeros({BLOCK_SIZE_M, BLOCK_SIZE_N}, std::is_integral_v<T> ? tl::int32 : tl::float32);
        for (auto k : tl::range(0, tl::cdiv(K, BLOCK_SIZE_K))) {
          auto a = tl::load(a_ptrs, offs_k(tl::None, tl::_) < K - k * BLOCK_SIZE_K, 0);
          auto b = tl::load(b_ptrs, offs_k(tl::_, tl::None) < K - k * BLOCK_SIZE_K, 0);
          accumulator = tl::dot(a, b, accumulator, std::nullopt, kPrecisions[PRECISION]);
          a_ptrs += BLOCK_SIZE_K * stride_ak;
          b_ptrs += BLOCK_SIZE_K * stride_bk;
        }
        auto c = accumulator.to(tritium::dtype_of<C>());

        auto offs_cm = pid_m * BLOCK_SIZE_M + tl::arange(0, BLOCK_SIZE_M);
        auto offs_cn = pid_n * BLOCK_SIZE_N + tl::arange(0, BLOCK_SIZE_N);
        auto c_ptrs = c_ptr + stride_cm * offs_cm(tl::_, tl::None) + stride_cn * offs_cn(tl::None, tl::_);
        auto c_mask = (offs_cm(tl::_, tl::None) < M) & (offs_cn(tl::None, tl::_) < N);
        tl::store(c_ptrs, c, c_mask);
      });
  return k;
}

template <class T, class C = T>
void matmul_case(const tt::Backend& be, int M, int N, int K, int bm, int bn, int bk, int group, bool b_transposed,
                 uint32_t seed, int warps = 4, int stages = 3, int pad = 3, int precision = 0) {
  const double lo = std::is_integral_v<T> ? -128 : -1, hi = std::is_integral_v<T> ? 127 : 1;
  auto a = tt::random_vector<T>(size_t(M) * K, seed, lo, hi);
  auto b_logical = tt::random_vector<T>(size_t(K) * N, seed + 1, lo, hi);
  // B is either K x N row-major, or stored as N x K (B^T row-major) and read through strides.
  tt::host_vector<T> b_mem = b_logical;
  int stride_bk = N, stride_bn = 1;
  if (b_transposed) {
    for (int kk = 0; kk < K; ++kk)
      for (int j = 0; j < N; ++j) b_mem[size_t(j) * K + kk] = b_logical[size_t(kk) * N + j];
    stride_bk = 1, stride_bn = K;
  }
  const int ldc = N + pad;  // C's padding columns must stay untouched (pad 0: aligned rows, 16-byte stores)
  std::vector<double> ref(size_t(M) * N), mag(ref.size()), bd(size_t(K) * N);  // row by row over K: streams B
  for (size_t i = 0; i < bd.size(); ++i) bd[i] = tt::to_double(b_logical[i]);
  for (int i = 0; i < M; ++i)
    for (int kk = 0; kk < K; ++kk) {
      const double x = tt::to_double(a[size_t(i) * K + kk]);
      for (int j = 0; j < N; ++j) {
        ref[size_t(i) * N + j] += x * bd[size_t(kk) * N + j];
        mag[size_t(i) * N + j] += std::abs(x * bd[size_t(kk) * N + j]);
      }
    }
  std::string what = std::string(tritium::dtype_name(tritium::dtype_of<T>())) + " -> " +
                     tritium::dtype_name(tritium::dtype_of<C>()) + " " + std::to_string(M) + "x" +
                     std::to_string(N) + "x" + std::to_string(K) + " blocks " + std::to_string(bm) + "x" +
                     std::to_string(bn) + "x" + std::to_string(bk) + " group " + std::to_string(group) + " warps " +
                     std::to_string(warps) + " stages " + std::to_string(stages) + (b_transposed ? " B^T strides" : "") +
                     (precision ? std::string(" input_precision ") + kPrecisions[precision] : "");
  BOOST_TEST_CONTEXT(what) {
    auto da = be.template upload<T>(a), db = be.template upload<T>(b_mem);
    auto dc = be.template alloc_poisoned<C>(size_t(M) * ldc);
    int64_t grid = tritium::cdiv(M, bm) * tritium::cdiv(N, bn);
    auto opts = be.options();
    opts.num_warps = warps;
    opts.num_stages = stages;
    matmul_kernel<T, C>()[{grid}](da.ptr(), db.ptr(), dc.ptr(), M, N, K, K, 1, stride_bk, stride_bn, ldc, 1, bm, bn, bk, group,
                               precision, opts);
    auto c = dc.download();
    tt::host_vector<C> got(size_t(M) * N);
    size_t padding_written = 0;
    for (int i = 0; i < M; ++i) {
      for (int j = 0; j < N; ++j) got[size_t(i) * N + j] = c[size_t(i) * ldc + j];
      for (int j = N; j < ldc; ++j) padding_written += !tt::is_poison<C>(c[size_t(i) * ldc + j]);
    }
    // f16/bf16: the output is rounded to the input type. fp32: tf32 on a GPU unless the precision
    // is tf32x3 or ieee (DESIGN.md's bounds: tf32 1e-3, fp32 1e-5).
    double tol = std::is_same_v<T, float> ? (precision >= 2 ? 1e-5 : dot_tol<float>(be))
                 : std::is_same_v<C, f16_t> ? 2e-3 : tt::is_fp8_v<T> ? dot_tol<T>(be) : std::is_integral_v<T> ? 0.0 : 1e-2;
    if constexpr (std::is_integral_v<T>) tt::check_close<C>(got, ref, tol, what);
    else tt::check_dot<C>(got, ref, mag, tol, what);
    BOOST_TEST(padding_written == 0u, what << ": the store mask let " << padding_written << " padding elements be written");
  }
}

BOOST_AUTO_TEST_CASE(tiled_matmul) {
  tt::for_each_backend([](const tt::Backend& be) {
    matmul_case<float>(be, 100, 77, 130, 32, 32, 32, 4, false, 1);
    matmul_case<float>(be, 100, 77, 130, 32, 32, 32, 4, true, 2);
    matmul_case<float>(be, 128, 128, 128, 64, 32, 32, 2, false, 3);
    matmul_case<float>(be, 17, 16, 16, 16, 16, 16, 8, false, 4);   // one K step, masked M
    matmul_case<float>(be, 33, 40, 5, 16, 32, 16, 1, false, 5);    // K smaller than one block
    matmul_case<f16_t>(be, 100, 77, 130, 32, 32, 32, 4, false, 6);
    matmul_case<bf16_t>(be, 64, 48, 96, 32, 16, 32, 2, false, 7);
  });
}

// Triton's tutorial-03 autotune configs (BM, BN, BK, stages, warps): on a GPU they pick the
// tensor-core paths - wgmma warpgroup tiles on Hopper, mma.sync warp tiles elsewhere and for 2
// warps, stage counts cut to what fits in shared memory, the store of C through shared memory
// when rows are aligned, TMA-filled stages on Hopper for BK >= 64 - with aligned sizes (full
// 16-byte chunks, constant masks) and odd ones (chunks across the K edge, element loads, wrapped
// rows, masked stores). 200 x 144 x 208: aligned rows, but the last programs' rows and columns
// wrap (`% M`, `% N`), so in one launch some programs take TMA and the others cp.async.
BOOST_AUTO_TEST_CASE(tiled_matmul_tutorial_configs) {
  struct Cfg { int bm, bn, bk, stages, warps; };
  const std::vector<Cfg> configs = {
      {128, 256, 64, 3, 8}, {64, 256, 32, 4, 4},  {128, 128, 32, 4, 4}, {128, 64, 32, 4, 4},
      {64, 128, 32, 4, 4},  {128, 32, 32, 4, 4},  {64, 32, 32, 5, 2},   {32, 64, 32, 5, 2},
      {128, 256, 128, 3, 8}, {256, 128, 128, 3, 8}, {256, 64, 128, 4, 4}, {64, 256, 128, 4, 4},
      {128, 128, 128, 4, 4}, {128, 64, 64, 4, 4},  {64, 128, 64, 4, 4},  {128, 32, 64, 4, 4}};
  tt::for_each_backend([&](const tt::Backend& be) {
    // The CPU compiles every config through LLVM: a quarter of them keeps the suite quick there.
    for (size_t i = 0; i < configs.size(); i += be.name == "cpu" ? 4 : 1) {
      const Cfg& c = configs[i];
      uint32_t seed = 100 + uint32_t(i) * 5;
      matmul_case<f16_t>(be, 256, 256, 320, c.bm, c.bn, c.bk, 8, false, seed, c.warps, c.stages, 0);
      matmul_case<bf16_t>(be, 256, 512, 192, c.bm, c.bn, c.bk, 8, false, seed + 1, c.warps, c.stages, 0);
      matmul_case<f16_t>(be, 130, 200, 100, c.bm, c.bn, c.bk, 8, false, seed + 2, c.warps, c.stages);
      matmul_case<bf16_t>(be, 77, 300, 150, c.bm, c.bn, c.bk, 4, true, seed + 3, c.warps, c.stages);
      matmul_case<f16_t>(be, 200, 144, 208, c.bm, c.bn, c.bk, 4, false, seed + 4, c.warps, c.stages, 0);
    }
  });
}

// More programs than CTAs fit at once (Hopper: a kernel whose C leaves through the bulk tensor
// copy engine is persistent - as many CTAs as are resident walk over the programs; 143 programs of
// 128 x 256 against the H100's 132 SMs of one such CTA each, 273 of 64 x 256): edge tiles the copy
// clips in both dims, a last K trip half masked (72 = 64 + 8), and C with an aligned row stride
// wider than N (N + 8) whose padding columns must stay poisoned - the copy's box ends at N.
BOOST_AUTO_TEST_CASE(tiled_matmul_more_programs_than_ctas) {
  tt::for_each_backend([](const tt::Backend& be) {
    if (be.name == "cpu") {  // the same kernel, at a size the CPU's LLVM compile keeps quick
      matmul_case<f16_t>(be, 130, 264, 72, 64, 64, 32, 8, false, 900, 4, 3, 8);
      return;
    }
    matmul_case<f16_t>(be, 1300, 3080, 72, 128, 256, 64, 8, false, 901, 8, 3, 8);
    matmul_case<bf16_t>(be, 1300, 3080, 72, 64, 256, 32, 8, false, 902, 4, 4, 8);
    matmul_case<f16_t>(be, 1300, 3080, 72, 128, 256, 64, 8, true, 903, 8, 3, 0);
  });
}

// A 2-D grid of programs (program_id(1) and num_programs(1) for the columns): a persistent CTA
// splits its linear program index into both ids, x fastest. 9 x 12 programs of 128 x 64 on
// wrapped rows and columns (some programs take the cp.async loop), C clipped at both edges.
BOOST_AUTO_TEST_CASE(matmul_on_a_2d_grid) {
  static tritium::Kernel k = tritium::kernel(
      "mm_2d", [](tl::ptr<f16_t> a, tl::ptr<f16_t> b, tl::ptr<f16_t> c, tl::ptr<int32_t> seen, tl::i32 M, tl::i32 N,
                  tl::i32 K, int BM, int BN, int BK) {
        auto pm = tl::program_id(0), pn = tl::program_id(1);
        auto rm = pm * BM + tl::arange(0, BM), rn = pn * BN + tl::arange(0, BN);
        auto acc = tt::tutorial_matmul_tile(a, b, rm, rn, M, N, K, BK);
        tl::store(seen + pm * tl::num_programs(1) + pn, pm * 1000 + pn);
        tl::store(c + rm(tl::_, tl::None) * N + rn(tl::None, tl::_), acc.to(tl::float16),
                  (rm(tl::_, tl::None) < M) & (rn(tl::None, tl::_) < N));
      });
  tt::for_each_backend([](const tt::Backend& be) {
    const int M = 1100, N = 760, K = 136, BM = 128, BN = 64, BK = 64;
    const int gm = tritium::cdiv(M, BM), gn = tritium::cdiv(N, BN);
    auto a = tt::random_vector<f16_t>(size_t(M) * K, 910), b = tt::random_vector<f16_t>(size_t(K) * N, 911);
    std::vector<double> ref(size_t(M) * N), mag(ref.size());
    for (int i = 0; i < M; ++i)
      for (int kk = 0; kk < K; ++kk)
        for (int j = 0; j < N; ++j) {
          double prod = tt::to_double(a[size_t(i) * K + kk]) * tt::to_double(b[size_t(kk) * N + j]);
          ref[size_t(i) * N + j] += prod;
          mag[size_t(i) * N + j] += std::abs(prod);
        }
    auto da = be.upload<f16_t>(a), db = be.upload<f16_t>(b);
    auto dc = be.alloc_poisoned<f16_t>(size_t(M) * N);
    auto dseen = be.alloc_poisoned<int32_t>(size_t(gm) * gn);
    auto opts = be.options();
    opts.num_warps = 4;
    k[{gm, gn}](da.ptr(), db.ptr(), dc.ptr(), dseen.ptr(), M, N, K, BM, BN, BK, opts);
    tt::check_dot<f16_t>(dc.download(), ref, mag, 2e-3, "mm_2d 1100 x 760 x 136");
    auto seen = dseen.download();
    for (int pm = 0; pm < gm; ++pm)
      for (int pn = 0; pn < gn; ++pn)
        BOOST_TEST(seen[size_t(pm) * gn + pn] == pm * 1000 + pn, "program (" << pm << ", " << pn << ")");
  });
}

// fp32 matmuls in every input_precision at odd sizes (1000 x 1037 x 999: masked edges in M, N
// and K, unaligned rows, element loads), with B as stored and transposed, on several tilings:
// tf32 (the default) within 1e-3 of float64, tf32x3 and ieee within 1e-5. On the CPU all three
// compute in fp32.
BOOST_AUTO_TEST_CASE(tiled_matmul_f32_precisions) {
  struct Cfg { int bm, bn, bk, stages, warps; };
  const std::vector<Cfg> configs = {{128, 128, 32, 3, 4}, {64, 128, 32, 4, 4}, {128, 256, 32, 3, 8}, {32, 64, 16, 2, 2}};
  tt::for_each_backend([&](const tt::Backend& be) {
    for (size_t i = 0; i < configs.size(); ++i) {
      const Cfg& c = configs[i];
      for (int precision : {0, 2, 3}) {
        if (be.name == "cpu" && (i > 0 || precision)) continue;  // one LLVM compile of the 1e9-MAC case
        matmul_case<float>(be, 1000, 1037, 999, c.bm, c.bn, c.bk, 8, i % 2 == 1, 50 + uint32_t(i), c.warps, c.stages, 3,
                           precision);
      }
      // tf32 named explicitly, aligned sizes (full 16-byte chunks, C through shared memory).
      if (be.name != "cpu" || i == 0)
        matmul_case<float>(be, 256, 384, 320, c.bm, c.bn, c.bk, 8, false, 60 + uint32_t(i), c.warps, c.stages, 0, 1);
      // Aligned rows through raw stages on Hopper (3+ stages; strides K and N multiples of 16, so
      // the specialisation proves 16-byte rows - test_cuda_codegen checks the path): B as stored
      // (transposed in 4 x 4 blocks) and as its transpose (K-contiguous chunks), a last trip of K
      // half masked (336 = 10 x 32 + 16: zero-filled chunks), rows and columns that wrap, and 2
      // trips (K = 48) against 2 or 3 raw stages.
      if (be.name != "cpu") {
        matmul_case<float>(be, 200, 144, 336, c.bm, c.bn, c.bk, 8, false, 70 + uint32_t(i), c.warps, c.stages, 0, 1);
        matmul_case<float>(be, 200, 144, 336, c.bm, c.bn, c.bk, 8, true, 80 + uint32_t(i), c.warps, c.stages, 0, 1);
        matmul_case<float>(be, 96, 160, 48, c.bm, c.bn, c.bk, 8, true, 90 + uint32_t(i), c.warps, c.stages, 0, 1);
      }
    }
  });
}

// fp8 matmuls (tutorial 03's fp8 form: B handed over as the transpose of an N x K matrix, so
// its tiles are K-contiguous - what Hopper's fp8 wgmma reads - and as stored, K x N), f32 and f16
// results, aligned sizes (16-byte chunks) and odd ones (element loads, masked edges).
BOOST_AUTO_TEST_CASE(tiled_matmul_fp8) {
  struct Cfg { int bm, bn, bk, stages, warps; };
  const std::vector<Cfg> configs = {{128, 256, 128, 3, 8}, {128, 128, 128, 4, 4}, {64, 128, 64, 4, 4}, {64, 32, 64, 4, 2}};
  tt::for_each_backend([&](const tt::Backend& be) {
    for (size_t i = 0; i < configs.size(); ++i) {
      if (be.name == "cpu" && i % 2) continue;  // LLVM compiles: half the configs keep the suite quick
      const Cfg& c = configs[i];
      uint32_t seed = 200 + uint32_t(i) * 4;
      matmul_case<f8e4m3_t, float>(be, 256, 384, 512, c.bm, c.bn, c.bk, 8, true, seed, c.warps, c.stages, 0);
      matmul_case<f8e5m2_t, float>(be, 256, 256, 256, c.bm, c.bn, c.bk, 8, true, seed + 1, c.warps, c.stages, 0);
      matmul_case<f8e4m3_t, f16_t>(be, 300, 200, 208, c.bm, c.bn, c.bk, 4, true, seed + 2, c.warps, c.stages, 0);
      matmul_case<f8e4m3_t, float>(be, 333, 197, 250, c.bm, c.bn, c.bk, 4, true, seed + 3, c.warps, c.stages);
      matmul_case<f8e5m2_t, float>(be, 130, 200, 96, c.bm, c.bn, c.bk, 8, false, seed + 4, c.warps, c.stages);
    }
  });
}

// int8 matmuls with int32 accumulation (exact): Hopper's s8 wgmma reads both tiles K-major, so B
// is staged K-major whether its memory is (B^T strides) or not; aligned and odd sizes.
BOOST_AUTO_TEST_CASE(tiled_matmul_int8) {
  struct Cfg { int bm, bn, bk, stages, warps; };
  const std::vector<Cfg> configs = {{128, 256, 128, 3, 8}, {128, 128, 64, 4, 4}, {64, 128, 128, 4, 4}};
  tt::for_each_backend([&](const tt::Backend& be) {
    for (size_t i = 0; i < configs.size(); ++i) {
      if (be.name == "cpu" && i) continue;  // one LLVM compile per shape kind keeps the suite quick
      const Cfg& c = configs[i];
      uint32_t seed = 300 + uint32_t(i) * 4;
      matmul_case<int8_t, int32_t>(be, 256, 384, 512, c.bm, c.bn, c.bk, 8, true, seed, c.warps, c.stages, 0);
      matmul_case<int8_t, int32_t>(be, 256, 256, 256, c.bm, c.bn, c.bk, 8, false, seed + 1, c.warps, c.stages, 0);
      matmul_case<int8_t, int32_t>(be, 333, 197, 250, c.bm, c.bn, c.bk, 4, true, seed + 2, c.warps, c.stages);
    }
  });
}

BOOST_AUTO_TEST_SUITE_END()
