// Loads of transposed views materialised into a block (the CPU backend reads them as vectors down
// the columns and transposes in registers: jit/cpu/transpose.cpp): every element where it belongs,
// the masked-off ones `other`, for dtypes of 1 to 8 bytes, tiles whose sizes are not multiples of
// the block, a 3-D block, a transpose of a loaded tile (permute) and a dot of two transposed
// views; and the op library's permuted copies over several row dims (NCHW -> NHWC and others),
// whose tiles on the CPU stay inside the innermost row dim (ops/elementwise.cpp, ROW_RUNS).
// Also stores the other way round: a [pixels, channels] tile written to an NCHW tensor, whose
// columns the CPU stores as vectors down the rows where they are adjacent in memory (checked per
// column: jit/cpu/transpose.cpp store_transposed). References are the host's own copies (exact).
#include "test_support.h"
#include "ops_test_helpers.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace tl = tritium::tl;
namespace tt = tritium::test;
using tritium::f16_t;

namespace {

template <class T> std::string tname() { return tritium::dtype_name(tritium::dtype_of<T>()); }

// x holds a [C, R] matrix row-major (per sample b of B); the program loads the [BR, BC] tile of its
// transpose at (pid0, pid1) masked to R x C (`other` -7 outside), uses it twice (so it is
// materialised) and stores: the tile where it belongs in out [B, R, C], and 2v + 1 unmasked into
// its own slot of `tiles` (where the masked-off elements show as 2 * -7 + 1).
template <class T> tritium::Kernel& transposed_tile_kernel() {
  static tritium::Kernel k = tritium::kernel(
      "transposed_tile_" + tname<T>(),
      [](tl::ptr<T> x, tl::ptr<T> out, tl::ptr<T> tiles, tl::i32 R, tl::i32 C, int B, int BR, int BC) {
        auto r = tl::program_id(0) * BR + tl::arange(0, BR);
        auto c = tl::program_id(1) * BC + tl::arange(0, BC);
        auto b = tl::arange(0, B);
        auto b3 = b(tl::_, tl::None, tl::None), r3 = r(tl::None, tl::_, tl::None), c3 = c(tl::None, tl::None, tl::_);
        auto m = (r3 < R) & (c3 < C);
        auto v = tl::load(x + b3 * (R * C) + c3 * R + r3, m, -7);
        tl::store(out + b3 * (R * C) + r3 * C + c3, v, m);
        auto slot = (tl::program_id(1) * tl::num_programs(0) + tl::program_id(0)) * (B * BR * BC);
        auto t = b3 * (BR * BC) + tl::arange(0, BR)(tl::None, tl::_, tl::None) * BC + tl::arange(0, BC)(tl::None, tl::None, tl::_);
        tl::store(tiles + slot + t, v * 2 + 1);
      });
  return k;
}

template <class T> void check_transposed_tiles(const tt::Backend& be, int B, int R, int C, int BR, int BC) {
  BOOST_TEST_CONTEXT(tname<T>() << " B " << B << " R " << R << " C " << C << " tile " << BR << "x" << BC) {
    auto x = tt::random_vector<T>(size_t(B) * R * C, 7 + R + C, -50, 50);
    const int gr = tritium::cdiv(R, BR), gc = tritium::cdiv(C, BC);
    auto dx = be.upload<T>(x);
    auto out = be.alloc_poisoned<T>(size_t(B) * R * C);
    auto tiles = be.alloc_poisoned<T>(size_t(gr) * gc * B * BR * BC);
    transposed_tile_kernel<T>()[{gr, gc}](dx.ptr(), out.ptr(), tiles.ptr(), R, C, B, BR, BC, be.options());
    tt::host_vector<T> want(out.size()), want_tiles(tiles.size());
    for (int b = 0; b < B; ++b)
      for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) want[(size_t(b) * R + r) * C + c] = x[(size_t(b) * C + c) * R + r];
    for (int pc = 0; pc < gc; ++pc)
      for (int pr = 0; pr < gr; ++pr)
        for (int b = 0; b < B; ++b)
          for (int i = 0; i < BR; ++i)
            for (int j = 0; j < BC; ++j) {
              const int r = pr * BR + i, c = pc * BC + j;
              const double v = r < R && c < C ? tt::to_double(x[(size_t(b) * C + c) * R + r]) : -7.0;
              want_tiles[(((size_t(pc) * gr + pr) * B + b) * BR + i) * BC + j] = tt::from_double<T>(2 * v + 1);
            }
    tt::check_equal<T>(out.download(), want, "the tile where it belongs");
    tt::check_equal<T>(tiles.download(), want_tiles, "the whole tile, other where masked off");
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_transposed_loads)

BOOST_AUTO_TEST_CASE(transposed_tiles_every_dtype) {
  tt::for_each_backend([](const tt::Backend& be) {
    // Sizes that are not multiples of the tile, a tile wider than tall and the other way round.
    check_transposed_tiles<float>(be, 1, 37, 45, 32, 16);
    check_transposed_tiles<float>(be, 1, 64, 64, 16, 64);
    check_transposed_tiles<float>(be, 2, 19, 23, 8, 16);  // 3-D: an outer dim around the squares
    check_transposed_tiles<double>(be, 1, 21, 33, 16, 16);
    check_transposed_tiles<f16_t>(be, 1, 40, 50, 32, 32);
    check_transposed_tiles<int32_t>(be, 1, 30, 17, 16, 32);
    check_transposed_tiles<int8_t>(be, 1, 33, 31, 32, 32);
  });
}

// Permuted copies whose rows span several dims (rows = N x HW for NCHW -> NHWC): on the CPU a
// tile's rows are consecutive rows of the innermost row dim, never crossing it and masked at its
// end, so its transposed reads stay contiguous down the rows. Sizes whose innermost row dim is
// divisible by 64, 16, 4 and by nothing (63, 49, 15), below 4 (3), 4-D and 5-D permutes, f32 /
// bf16 / i8 / f64, a binary op with one permuted operand, and more than 2^16 rows.
BOOST_AUTO_TEST_CASE(permuted_copies_over_several_row_dims) {
  namespace ou = tritium::test::ops_util;
  using Shape = std::vector<int64_t>;
  using tritium::DType;
  using tritium::Tensor;
  tt::for_each_backend([](const tt::Backend&) {
    // out[i] = x at the permuted index: the reference walks out's indices row-major.
    auto reference = [](const std::vector<double>& xv, const Shape& xs, const std::vector<int>& perm) {
      Shape os(perm.size());
      for (size_t k = 0; k < perm.size(); ++k) os[k] = xs[static_cast<size_t>(perm[k])];
      std::vector<double> out;
      for (int64_t i = 0; i < ou::numel(os); ++i) {
        auto oi = ou::unravel(i, os);
        Shape xi(xs.size());
        for (size_t k = 0; k < perm.size(); ++k) xi[static_cast<size_t>(perm[k])] = oi[k];
        int64_t f = 0;
        for (size_t d = 0; d < xs.size(); ++d) f = f * xs[d] + xi[d];
        out.push_back(xv[static_cast<size_t>(f)]);
      }
      return out;
    };
    struct Case { Shape shape; std::vector<int> perm; DType dtype; };
    const std::vector<Case> cases = {
        {{2, 32, 8, 8}, {0, 2, 3, 1}, DType::f32},      // HW 64
        {{3, 32, 28, 28}, {0, 2, 3, 1}, DType::f32},    // HW 784 = 16 x 49
        {{2, 48, 14, 14}, {0, 2, 3, 1}, DType::bf16},   // HW 196 = 4 x 49
        {{2, 40, 7, 9}, {0, 2, 3, 1}, DType::f32},      // HW 63: no power of two divides it
        {{3, 20, 7, 7}, {0, 2, 3, 1}, DType::f32},      // HW 49: tiles of 16 rows, the last masked
        {{2, 18, 3, 5}, {0, 2, 3, 1}, DType::bf16},     // HW 15: tiles of 8
        {{4, 33, 1, 3}, {0, 2, 3, 1}, DType::f32},      // HW 3: below any tile, ordinary tiles
        {{2, 24, 16, 20}, {0, 2, 3, 1}, DType::i8},
        {{3, 20, 32, 32}, {0, 2, 3, 1}, DType::f64},
        {{2, 3, 17, 32, 16}, {0, 1, 3, 4, 2}, DType::f32},  // 5-D, the innermost row dim 16
        {{70, 17, 1024}, {0, 2, 1}, DType::f32},        // 71,680 rows of 17
    };
    for (const Case& c : cases) {
      Tensor x = tritium::ops::to_dtype(ou::random_tensor<float>(c.shape, 150, -100, 100), c.dtype);
      if (c.dtype == DType::i8) x = ou::random_tensor<int8_t>(c.shape, 150, -100, 100);
      const std::vector<double> xv = ou::values(x), want = reference(xv, c.shape, c.perm);
      std::ostringstream name;
      name << tritium::dtype_name(c.dtype);
      for (int64_t d : c.shape) name << ' ' << d;
      const std::string what = name.str();
      BOOST_TEST_CONTEXT(what) {
        Tensor y = tritium::ops::contiguous(x.permute(c.perm));
        BOOST_TEST(ou::values(y) == want, boost::test_tools::per_element());
        // A binary op reading the permuted view beside a contiguous operand.
        if (c.dtype == DType::f32) {
          Tensor z = ou::random_tensor<float>(y.shape(), 151, -1, 1);
          const std::vector<double> zv = ou::values(z);
          const std::vector<double> sum = ou::values(tritium::ops::add(x.permute(c.perm), z));
          size_t bad = 0;
          for (size_t i = 0; i < sum.size(); ++i)
            if (static_cast<float>(sum[i]) != static_cast<float>(static_cast<float>(want[i]) + static_cast<float>(zv[i]))) ++bad;
          BOOST_TEST(bad == 0u, what << ": permuted + contiguous, " << bad << " elements differ");
        }
      }
    }
  });
}

// The CPU code of a transposed tile has no gather (what it is for) and still reads it exactly.
BOOST_AUTO_TEST_CASE(transposed_tile_is_read_without_gathers_on_the_cpu, *tt::needs_cpu_backend()) {
  const auto dir = std::filesystem::temp_directory_path() / ("tritium-transposed-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  tt::FreshCacheDir cache("transposed");
  // The dot of a transposed view with another: [BR, K] @ [K, BC] where both come transposed.
  static tritium::Kernel dot_k = tritium::kernel(
      "transposed_dot", [](tl::ptr<float> a_t, tl::ptr<float> b_t, tl::ptr<float> o, tl::i32 M, tl::i32 N, tl::i32 K,
                           int BM, int BN, int BK) {
        auto rm = tl::arange(0, BM), rn = tl::arange(0, BN), rk = tl::arange(0, BK);
        // a_t is A^T [K, M] row-major, b_t is B^T [N, K]: both tiles are transposed views.
        auto a = tl::load(a_t + rk(tl::None, tl::_) * M + rm(tl::_, tl::None), (rm < M)(tl::_, tl::None) & (rk < K)(tl::None, tl::_), 0.0);
        auto b = tl::load(b_t + rn(tl::None, tl::_) * K + rk(tl::_, tl::None), (rk < K)(tl::_, tl::None) & (rn < N)(tl::None, tl::_), 0.0);
        tl::store(o + rm(tl::_, tl::None) * N + rn(tl::None, tl::_), tl::dot(a, b), (rm < M)(tl::_, tl::None) & (rn < N)(tl::None, tl::_));
      });
  const int M = 29, N = 35, K = 27;
  auto at = tt::random_vector<float>(size_t(K) * M, 91), bt = tt::random_vector<float>(size_t(N) * K, 92);
  tt::host_vector<float> out = tt::poisoned<float>(size_t(M) * N);
  {
    tt::ScopedEnv dump("TRITIUM_DUMP", dir.c_str());
    dot_k[{1}](at.data(), bt.data(), out.data(), M, N, K, 32, 64, 32, tritium::Options{.device = tritium::Device::cpu()});
  }
  std::vector<double> ref(size_t(M) * N), mag(ref.size());
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j)
      for (int kk = 0; kk < K; ++kk) {
        double p = double(at[size_t(kk) * M + i]) * double(bt[size_t(j) * K + kk]);
        ref[size_t(i) * N + j] += p, mag[size_t(i) * N + j] += std::abs(p);
      }
  tt::check_dot<float>(out, ref, mag, 1e-5, "dot of two transposed views");
  std::ifstream in(dir / "transposed_dot.opt.ll");
  const std::string ll((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  BOOST_TEST(ll.find("define ") != std::string::npos, "no LLVM IR dumped in " << dir);
  BOOST_TEST(ll.find("gather") == std::string::npos, "the transposed tiles were gathered");
  std::filesystem::remove_all(dir);
}

// The CNN's NCHW -> NHWC copy of a [128, 32, 14, 14] activation (196 rows an image, which no
// power of two above 4 divides): exact values and no gather on the CPU. This does not tell the
// masked 16-row runs from the 4-row tiles before them (those were not gathered either; they were
// slow for their 64 elements a program - 0.248 against 0.199 ms on two threads, not asserted here).
BOOST_AUTO_TEST_CASE(nchw_to_nhwc_of_14_by_14_images_is_not_gathered_on_the_cpu, *tt::needs_cpu_backend()) {
  namespace ou = tritium::test::ops_util;
  const auto dir = std::filesystem::temp_directory_path() / ("tritium-nhwc-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  tt::FreshCacheDir cache("nhwc");
  tritium::Tensor x = ou::random_tensor<float>({3, 32, 14, 14}, 160, -1, 1), y;
  {
    tt::ScopedEnv dump("TRITIUM_DUMP", dir.c_str());
    y = tritium::ops::contiguous(x.permute({0, 2, 3, 1}));
  }
  const std::vector<double> xv = ou::values(x), yv = ou::values(y);
  size_t bad = 0;
  for (int n = 0; n < 3; ++n)
    for (int c = 0; c < 32; ++c)
      for (int q = 0; q < 196; ++q)
        bad += yv[size_t((n * 196 + q) * 32 + c)] != xv[size_t((n * 32 + c) * 196 + q)];
  BOOST_TEST(bad == 0u);
  std::ifstream in(dir / "ew_strided.opt.ll");
  const std::string ll((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  BOOST_TEST(ll.find("define ") != std::string::npos, "no LLVM IR dumped in " << dir);
  BOOST_TEST(ll.find("gather") == std::string::npos, "the permuted copy was gathered");
  std::filesystem::remove_all(dir);
}

// out is NCHW [B, C, H * W] (plane = H * W elements a channel); the program's tile is [BP pixels,
// BC channels] of x, read row-major as x[p * C + c] (pixels p = b * plane + q), and stored at
// out[b * C * plane + c * plane + q]: neighbours down a column are adjacent until the tile crosses
// an image (then that column is scattered). Masked to P pixels and C channels; value 2 x (exact).
template <class T> tritium::Kernel& nchw_store_kernel() {
  static tritium::Kernel k = tritium::kernel(
      "nchw_store_" + tname<T>(), [](tl::ptr<T> x, tl::ptr<T> out, tl::i32 P, tl::i32 C, tl::i32 plane, int BP, int BC) {
        auto p = tl::program_id(0) * BP + tl::arange(0, BP);
        auto c = tl::program_id(1) * BC + tl::arange(0, BC);
        auto m = (p < P)(tl::_, tl::None) & (c < C)(tl::None, tl::_);
        auto v = tl::load(x + (p * C)(tl::_, tl::None) + c(tl::None, tl::_), m, 0);
        auto b = p / plane, q = p % plane;
        tl::store(out + (b * C * plane + q)(tl::_, tl::None) + (c * plane)(tl::None, tl::_), v * 2, m);
      });
  return k;
}

template <class T> void check_nchw_store(const tt::Backend& be, int B, int C, int plane, int BP, int BC) {
  BOOST_TEST_CONTEXT(tname<T>() << " B " << B << " C " << C << " plane " << plane << " tile " << BP << "x" << BC) {
    const int P = B * plane;
    auto x = tt::random_vector<T>(size_t(P) * C, 3 + C + plane, -40, 40);
    auto dx = be.upload<T>(x);
    auto out = be.alloc_poisoned<T>(size_t(P) * C);
    nchw_store_kernel<T>()[{tritium::cdiv(P, BP), tritium::cdiv(C, BC)}](dx.ptr(), out.ptr(), P, C, plane, BP, BC,
                                                                        be.options());
    tt::host_vector<T> want(out.size());
    for (int p = 0; p < P; ++p)
      for (int c = 0; c < C; ++c)
        want[(size_t(p / plane) * C + c) * plane + p % plane] = tt::from_double<T>(2 * tt::to_double(x[size_t(p) * C + c]));
    tt::check_equal<T>(out.download(), want, "NCHW from [pixels, channels] tiles");
  }
}

BOOST_AUTO_TEST_CASE(tiles_stored_down_their_columns) {
  tt::for_each_backend([](const tt::Backend& be) {
    // Planes that the tile divides (every column one vector), planes it does not (columns that
    // cross an image scatter), channels off the tile, one image.
    check_nchw_store<float>(be, 3, 32, 64, 32, 16);
    check_nchw_store<float>(be, 4, 20, 49, 32, 16);
    check_nchw_store<float>(be, 1, 7, 100, 16, 16);
    check_nchw_store<tritium::bf16_t>(be, 2, 40, 28, 64, 32);
    check_nchw_store<double>(be, 3, 9, 30, 16, 8);
    check_nchw_store<int32_t>(be, 5, 16, 17, 32, 16);
  });
}

// On the CPU such a store takes the column path.
BOOST_AUTO_TEST_CASE(nchw_tiles_store_columns_on_the_cpu, *tt::needs_cpu_backend()) {
  const auto dir = std::filesystem::temp_directory_path() / ("tritium-tstore-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  tt::FreshCacheDir cache("tstore");
  auto x = tt::random_vector<float>(64 * 32, 5);
  tt::host_vector<float> out(64 * 32);
  {
    tt::ScopedEnv dump("TRITIUM_DUMP", dir.c_str());
    // A tile (64 x 32) no other case launches: compiled here, so dumped.
    nchw_store_kernel<float>()[{1, 1}](x.data(), out.data(), 64, 32, 32, 64, 32,
                                       tritium::Options{.device = tritium::Device::cpu()});
  }
  std::ifstream in(dir / "nchw_store_f32.ll");
  const std::string ll((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove_all(dir);
  BOOST_TEST(ll.find("define ") != std::string::npos, "no LLVM IR dumped");
  BOOST_TEST(ll.find("tstore.vector") != std::string::npos, "the columns are not stored as vectors");
  for (int p = 0; p < 64; ++p)
    for (int c = 0; c < 32; ++c) BOOST_TEST(out[size_t(p / 32) * 1024 + size_t(c) * 32 + p % 32] == 2 * x[size_t(p) * 32 + c]);
}

BOOST_AUTO_TEST_SUITE_END()
