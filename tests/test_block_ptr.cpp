// Block pointers (tl::make_block_ptr, tl::advance, tl::load / tl::store on them) and tensor
// descriptors (tl::make_tensor_descriptor): tiles of 1-, 2- and 3-D tensors with any strides,
// bounds checks along some dims only, negative offsets, zero and NaN padding, and matmuls whose
// tiles move through a run-time loop. References are computed on the host (exact for data
// movement, float64 for the matmul).
#include "stacked_descriptor_matmul.h"
#include "test_support.h"

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

namespace tl = tritium::tl;
namespace tt = tritium::test;
using tritium::f16_t;

namespace {

// Program (pm, pn) reads the BM x BN tile of x (M x N, strides sxm, sxn) at (pm * BM + off_m,
// pn * BN + off_n) with bounds checks on both dims, writes it unchecked to `padded` (a dense
// gm * BM x gn * BN matrix, so the padding shows) and checked to `out` (M x N, row-major).
tritium::Kernel& copy2d_kernel() {
  static tritium::Kernel k = tritium::kernel(
      "bp_copy2d", [](tl::ptr<float> x, tl::ptr<float> out, tl::ptr<float> padded, tl::i32 M, tl::i32 N, tl::i32 sxm,
                      tl::i32 sxn, tl::i32 off_m, tl::i32 off_n, int BM, int BN, bool PAD_NAN) {
        auto pm = tl::program_id(0), pn = tl::program_id(1);
        auto rows = pm * BM + off_m, cols = pn * BN + off_n;
        auto src = tl::make_block_ptr(x, {M, N}, {sxm, sxn}, {rows, cols}, {BM, BN}, {0, 1});
        auto v = tl::load(src, {0, 1}, PAD_NAN ? "nan" : "zero");
        auto width = tl::num_programs(1) * BN;
        auto pad = tl::make_block_ptr(padded, {tl::num_programs(0) * BM, width}, {width, 1}, {pm * BM, pn * BN},
                                      {BM, BN}, {1, 0});
        tl::store(pad, v);
        auto dst = tl::make_block_ptr(out, {M, N}, {N, 1}, {rows, cols}, {BM, BN}, {1, 0});
        tl::store(dst, v, {1, 0});
      });
  return k;
}

// out = 2 * x for n elements: a 1-D block pointer advanced through a run-time loop, one
// BLOCK-wide tile a trip, the last one cut by the bounds check.
tritium::Kernel& scale1d_kernel() {
  static tritium::Kernel k = tritium::kernel("bp_scale1d", [](tl::ptr<float> x, tl::ptr<float> out, tl::i32 n, int BLOCK) {
    auto src = tl::make_block_ptr(x, {n}, {1}, {0}, {BLOCK}, {0});
    auto dst = tl::make_block_ptr(out, {n}, {1}, {0}, {BLOCK}, {0});
    for (auto i : tl::range(0, tl::cdiv(n, BLOCK))) {
      (void)i;
      tl::store(dst, tl::load(src, {0}) * 2.0f, {0});
      src = tl::advance(src, {BLOCK});
      dst = tl::advance(dst, {BLOCK});
    }
  });
  return k;
}

// A [D0, D1, D2] tensor copied in [2, 4, 8] tiles; D1 is a multiple of 4, so only dims 0 and 2
// are checked. The source is stored with its dims reversed (strides 1, D0, D0 * D1).
tritium::Kernel& copy3d_kernel() {
  static tritium::Kernel k = tritium::kernel(
      "bp_copy3d", [](tl::ptr<int32_t> x, tl::ptr<int32_t> out, tl::i32 D0, tl::i32 D1, tl::i32 D2) {
        auto o0 = tl::program_id(0) * 2, o1 = tl::program_id(1) * 4, o2 = tl::program_id(2) * 8;
        auto src = tl::make_block_ptr(x, {D0, D1, D2}, {1, D0, D0 * D1}, {o0, o1, o2}, {2, 4, 8}, {0, 1, 2});
        auto dst = tl::make_block_ptr(out, {D0, D1, D2}, {D1 * D2, D2, 1}, {o0, o1, o2}, {2, 4, 8}, {2, 1, 0});
        tl::store(dst, tl::load(src, {2, 0}), {0, 2});
      });
  return k;
}

// C (f32, M x N) = A (f16, M x K) @ B (f16, K x N) with block pointers advanced along K in a
// run-time loop (Triton's block-pointer matmul), or with tensor descriptors loaded at k * BK
// (DESC; B row-major). B stored N-major: strides sbk = 1, sbn = K. On Hopper the 64 x 128 x 64
// tiles with strides that are multiples of 16 (the last two cases) are filled by TMA, the last one
// with partial tiles on every edge (TMA's zero fill); the others by cp.async.
tritium::Kernel& matmul_kernel() {
  static tritium::Kernel k = tritium::kernel(
      "bp_matmul", [](tl::ptr<f16_t> a, tl::ptr<f16_t> b, tl::ptr<float> c, tl::i32 M, tl::i32 N, tl::i32 K,
                      tl::i32 sbk, tl::i32 sbn, int BM, int BN, int BK, bool DESC) {
        auto pm = tl::program_id(0), pn = tl::program_id(1);
        auto acc = tl::zeros({BM, BN}, tl::float32);
        if (DESC) {  // tensor descriptors at offsets computed from the loop variable (B row-major)
          auto a_d = tl::make_tensor_descriptor(a, {M, K}, {K, 1}, {BM, BK});
          auto b_d = tl::make_tensor_descriptor(b, {K, N}, {sbk, sbn}, {BK, BN});
          for (auto kt : tl::range(0, tl::cdiv(K, BK)))
            acc = tl::dot(a_d.load({pm * BM, kt * BK}), b_d.load({kt * BK, pn * BN}), acc);
          tl::make_tensor_descriptor(c, {M, N}, {N, 1}, {BM, BN}).store({pm * BM, pn * BN}, acc);
          return;
        }
        auto a_bp = tl::make_block_ptr(a, {M, K}, {K, 1}, {pm * BM, 0}, {BM, BK}, {1, 0});
        auto b_bp = tl::make_block_ptr(b, {K, N}, {sbk, sbn}, {0, pn * BN}, {BK, BN}, {1, 0});
        for (auto kt : tl::range(0, tl::cdiv(K, BK))) {
          (void)kt;
          acc = tl::dot(tl::load(a_bp, {0, 1}), tl::load(b_bp, {0, 1}), acc);
          a_bp = tl::advance(a_bp, {0, BK});
          b_bp = tl::advance(b_bp, {BK, 0});
        }
        tl::store(tl::make_block_ptr(c, {M, N}, {N, 1}, {pm * BM, pn * BN}, {BM, BN}, {1, 0}), acc, {0, 1});
      });
  return k;
}

using tritium::test::stacked_descriptor_matmul;  // tests/stacked_descriptor_matmul.h

// out = 2 * x through tensor descriptors (M x N, row-major) in BM x BN tiles, and each tile's sum
// (out-of-bounds elements read as zero) into sums[program].
tritium::Kernel& descriptor_kernel() {
  static tritium::Kernel k = tritium::kernel(
      "td_scale", [](tl::ptr<float> x, tl::ptr<float> out, tl::ptr<float> sums, tl::i32 M, tl::i32 N, int BM, int BN) {
        auto in = tl::make_tensor_descriptor(x, {M, N}, {N, 1}, {BM, BN});
        auto dst = tl::make_tensor_descriptor(out, {M, N}, {N, 1}, {BM, BN});
        auto pm = tl::program_id(0), pn = tl::program_id(1);
        auto v = in.load({pm * BM, pn * BN});
        dst.store({pm * BM, pn * BN}, v * 2.0f);
        tl::store(sums + pm * tl::num_programs(1) + pn, tl::sum(v));
      });
  return k;
}

// Traces (without compiling) a kernel whose only parameter is a float pointer.
template <class F> void trace(F body) {
  auto k = tritium::kernel("bad_block_ptr", body);
  k.ir(static_cast<float*>(nullptr));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_block_ptr)

BOOST_AUTO_TEST_CASE(copy_2d_bounds_and_padding) {
  tt::for_each_backend([&](const tt::Backend& be) {
    uint32_t seed = 1;
    struct Case { int M, N; bool col_major; int off_m, off_n; bool nan; };
    for (Case cs : {Case{37, 50, false, 0, 0, false}, Case{37, 50, true, -3, -5, false}, Case{16, 64, false, -16, -1, true},
                    Case{5, 3, true, -2, -7, true}}) {
      const int BM = 16, BN = 32;
      // Tiles start at (off_m, off_n) <= 0 (negative indices exercise the lower bound): the grid
      // covers every element of out.
      const int gm = tritium::cdiv(cs.M - cs.off_m, BM), gn = tritium::cdiv(cs.N - cs.off_n, BN);
      const int sxm = cs.col_major ? 1 : cs.N, sxn = cs.col_major ? cs.M : 1;
      auto x = tt::random_vector<float>(size_t(cs.M) * cs.N, ++seed);
      std::string what = std::to_string(cs.M) + "x" + std::to_string(cs.N) + (cs.col_major ? " column-major" : "") +
                         " at (" + std::to_string(cs.off_m) + ", " + std::to_string(cs.off_n) + ")" + (cs.nan ? " nan" : "");
      BOOST_TEST_CONTEXT(what) {
        auto dx = be.upload<float>(x);
        auto dout = be.alloc_poisoned<float>(size_t(cs.M) * cs.N);
        auto dpad = be.alloc_poisoned<float>(size_t(gm) * BM * gn * BN);
        copy2d_kernel()[{gm, gn}](dx.ptr(), dout.ptr(), dpad.ptr(), cs.M, cs.N, sxm, sxn, cs.off_m, cs.off_n, BM, BN,
                                  cs.nan, be.options());
        tt::host_vector<float> ref_out(size_t(cs.M) * cs.N), ref_pad(size_t(gm) * BM * gn * BN);
        for (int i = 0; i < cs.M; ++i)
          for (int j = 0; j < cs.N; ++j) ref_out[size_t(i) * cs.N + j] = x[size_t(i) * sxm + size_t(j) * sxn];
        for (int i = 0; i < gm * BM; ++i)
          for (int j = 0; j < gn * BN; ++j) {
            int r = i + cs.off_m, c = j + cs.off_n;
            bool in = r >= 0 && r < cs.M && c >= 0 && c < cs.N;
            ref_pad[size_t(i) * gn * BN + j] = in ? x[size_t(r) * sxm + size_t(c) * sxn] : cs.nan ? NAN : 0.0f;
          }
        tt::check_equal<float>(dout.download(), ref_out, "out");
        auto pad = dpad.download();
        for (size_t i = 0; i < pad.size(); ++i)  // (NaN bits differ between backends: compare as NaN)
          if (std::isnan(pad[i]) && std::isnan(ref_pad[i])) pad[i] = ref_pad[i];
        tt::check_equal<float>(pad, ref_pad, "padded");
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(advance_1d_in_a_loop) {
  tt::for_each_backend([&](const tt::Backend& be) {
    for (int n : {1, 100, 1000}) {
      auto x = tt::random_vector<float>(size_t(n), 10u + n);
      auto dx = be.upload<float>(x);
      auto dout = be.alloc_poisoned<float>(size_t(n));
      scale1d_kernel()[{1}](dx.ptr(), dout.ptr(), n, 64, be.options());
      tt::host_vector<float> ref(x.size());
      for (size_t i = 0; i < x.size(); ++i) ref[i] = 2.0f * x[i];
      tt::check_equal<float>(dout.download(), ref, "n = " + std::to_string(n));
    }
  });
}

BOOST_AUTO_TEST_CASE(copy_3d_checked_dims_only) {
  tt::for_each_backend([&](const tt::Backend& be) {
    const int D0 = 5, D1 = 8, D2 = 13;
    tt::host_vector<int32_t> x(size_t(D0) * D1 * D2);
    std::mt19937 rng(7);
    for (auto& v : x) v = static_cast<int32_t>(rng());
    auto dx = be.upload<int32_t>(x);
    auto dout = be.alloc_poisoned<int32_t>(x.size());
    copy3d_kernel()[{tritium::cdiv(D0, 2), D1 / 4, tritium::cdiv(D2, 8)}](dx.ptr(), dout.ptr(), D0, D1, D2, be.options());
    tt::host_vector<int32_t> ref(x.size());
    for (int i = 0; i < D0; ++i)
      for (int j = 0; j < D1; ++j)
        for (int l = 0; l < D2; ++l) ref[(size_t(i) * D1 + j) * D2 + l] = x[size_t(i) + size_t(j) * D0 + size_t(l) * D0 * D1];
    tt::check_equal<int32_t>(dout.download(), ref, "5 x 8 x 13");
  });
}

BOOST_AUTO_TEST_CASE(matmul_with_advance) {
  tt::for_each_backend([&](const tt::Backend& be) {
    // b_reversed: B's rows stored last to first, read from its last row with a negative row stride
    // (no tensor map has one: on Hopper the TMA loop's guard fails and the cp.async loop runs).
    struct Case { int M, N, K; bool b_col_major; int BM, BN, BK; bool b_reversed = false; };
    uint32_t seed = 100;
    for (Case cs : {Case{100, 72, 150, false, 64, 64, 32}, Case{130, 200, 97, true, 64, 128, 32},
                    Case{64, 128, 256, false, 64, 128, 64}, Case{100, 144, 208, false, 64, 128, 64},
                    Case{100, 144, 208, false, 64, 128, 64, true}})
    for (bool desc : {false, true}) {
      if (desc && cs.b_col_major) continue;  // (a descriptor's last dim is contiguous)
      auto a = tt::random_vector<f16_t>(size_t(cs.M) * cs.K, ++seed);
      auto b = tt::random_vector<f16_t>(size_t(cs.K) * cs.N, ++seed);  // logical K x N
      tt::host_vector<f16_t> b_mem = b;
      if (cs.b_col_major || cs.b_reversed)
        for (int kk = 0; kk < cs.K; ++kk)
          for (int j = 0; j < cs.N; ++j)
            b_mem[cs.b_reversed ? size_t(cs.K - 1 - kk) * cs.N + j : size_t(j) * cs.K + kk] = b[size_t(kk) * cs.N + j];
      std::vector<double> ref(size_t(cs.M) * cs.N, 0.0);
      for (int i = 0; i < cs.M; ++i)
        for (int kk = 0; kk < cs.K; ++kk) {
          double av = tt::to_double(a[size_t(i) * cs.K + kk]);
          for (int j = 0; j < cs.N; ++j) ref[size_t(i) * cs.N + j] += av * tt::to_double(b[size_t(kk) * cs.N + j]);
        }
      std::string what = std::to_string(cs.M) + "x" + std::to_string(cs.N) + "x" + std::to_string(cs.K) +
                         (cs.b_col_major ? " B column-major" : "") + (cs.b_reversed ? " B rows reversed" : "") +
                         (desc ? " tensor descriptors" : " block pointers");
      BOOST_TEST_CONTEXT(what) {
        auto da = be.upload<f16_t>(a), db = be.upload<f16_t>(b_mem);
        auto dc = be.alloc_poisoned<float>(ref.size());
        int sbk = cs.b_col_major ? 1 : cs.b_reversed ? -cs.N : cs.N, sbn = cs.b_col_major ? cs.K : 1;
        f16_t* b_ptr = cs.b_reversed ? db.ptr() + size_t(cs.K - 1) * cs.N : db.ptr();
        tritium::Options o = be.options();
        o.num_warps = 4;
        matmul_kernel()[{tritium::cdiv(cs.M, cs.BM), tritium::cdiv(cs.N, cs.BN)}](
            da.ptr(), b_ptr, dc.ptr(), cs.M, cs.N, cs.K, sbk, sbn, cs.BM, cs.BN, cs.BK, desc, o);
        tt::check_close<float>(dc.download(), ref, 1e-3, what);
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(tensor_descriptors) {
  tt::for_each_backend([&](const tt::Backend& be) {
    for (auto [M, N] : {std::pair{37, 50}, std::pair{64, 64}, std::pair{3, 100}}) {
      const int BM = 16, BN = 32, gm = tritium::cdiv(M, BM), gn = tritium::cdiv(N, BN);
      auto x = tt::random_vector<float>(size_t(M) * N, 40u + M);
      auto dx = be.upload<float>(x);
      auto dout = be.alloc_poisoned<float>(x.size());
      auto dsums = be.alloc_poisoned<float>(size_t(gm) * gn);
      descriptor_kernel()[{gm, gn}](dx.ptr(), dout.ptr(), dsums.ptr(), M, N, BM, BN, be.options());
      tt::host_vector<float> ref(x.size());
      for (size_t i = 0; i < x.size(); ++i) ref[i] = 2.0f * x[i];
      std::vector<double> ref_sums(size_t(gm) * gn, 0.0);
      for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) ref_sums[size_t(i / BM) * gn + j / BN] += x[size_t(i) * N + j];
      std::string what = std::to_string(M) + "x" + std::to_string(N);
      tt::check_equal<float>(dout.download(), ref, what);
      tt::check_close<float>(dsums.download(), ref_sums, 1e-5, what + " tile sums");
    }
  });
}

// Memory past each tensor (the pad columns of A's rows, rows after A's and B's last ones) holds
// NaN: a copy that read it instead of zeros would show in C.
BOOST_AUTO_TEST_CASE(descriptors_with_computed_shapes) {
  tt::for_each_backend([&](const tt::Backend& be) {
    const int BM = 64, BN = 64, BK = 64, pad = 16;
    for (auto [nb, M, N, K] : {std::tuple{3, 40, 80, 80}, std::tuple{2, 64, 64, 128}, std::tuple{1, 100, 144, 208}}) {
      const int lda = K + pad;
      const f16_t nan = tt::to_f16(NAN);
      tt::host_vector<f16_t> a(size_t(nb * M + BM) * lda, nan), b(size_t(nb * K + BK) * N, nan);
      auto av = tt::random_vector<f16_t>(size_t(nb) * M * K, 300u + M), bv = tt::random_vector<f16_t>(size_t(nb) * K * N, 400u + N);
      for (int i = 0; i < nb * M; ++i)
        for (int kk = 0; kk < K; ++kk) a[size_t(i) * lda + kk] = av[size_t(i) * K + kk];
      std::copy(bv.begin(), bv.end(), b.begin());
      std::vector<double> ref(size_t(nb) * M * N, 0.0);
      for (int t = 0; t < nb; ++t)
        for (int i = 0; i < M; ++i)
          for (int kk = 0; kk < K; ++kk) {
            const double x = tt::to_double(av[size_t(t * M + i) * K + kk]);
            for (int j = 0; j < N; ++j) ref[(size_t(t) * M + i) * N + j] += x * tt::to_double(bv[size_t(t * K + kk) * N + j]);
          }
      const std::string what = std::to_string(nb) + " x " + std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K);
      BOOST_TEST_CONTEXT(what) {
        auto da = be.upload<f16_t>(a), db = be.upload<f16_t>(b);
        auto dc = be.alloc_poisoned<float>(ref.size());
        tritium::Options o = be.options();
        o.num_warps = 4;
        stacked_descriptor_matmul()[{tritium::cdiv(M, BM), tritium::cdiv(N, BN), nb}](da.ptr(), db.ptr(), dc.ptr(), nb, M, N, K,
                                                                                   pad, BM, BN, BK, o);
        tt::check_close<float>(dc.download(), ref, 1e-3, what);
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(bad_tensor_descriptors) {
  unsigned line = 0;
  auto check = [&](auto body, std::initializer_list<std::string_view> words, const std::string& what) {
    tt::check_throws_at([&] { trace(body); }, __FILE__, line, words, what);
  };
  check([&](tl::ptr<float> x) {
    line = __LINE__; tl::make_tensor_descriptor(x, {16, 16}, {1, 16}, {16, 16});
  }, {"make_tensor_descriptor", "last stride", "constant 1"}, "last stride not 1");
  check([&](tl::ptr<float> x) {
    line = __LINE__; tl::make_tensor_descriptor(x, {16, 16}, {16, 1}, {16, 2});
  }, {"make_tensor_descriptor", "16 bytes", "block_shape[1] = 2 of f32 is 8 bytes"}, "tile rows under 16 bytes");
  check([&](tl::ptr<float> x) {
    line = __LINE__; tl::make_tensor_descriptor(x, {16, 16}, {1}, {16, 16});
  }, {"make_tensor_descriptor", "strides has 1 entries", "2 dims"}, "strides of the wrong rank");
  check([&](tl::ptr<float> x) {
    auto d = tl::make_tensor_descriptor(x, {16, 16}, {16, 1}, {16, 16});
    line = __LINE__; d.load({0});
  }, {"tensor_descriptor::load", "offsets has 1 entries", "2 dims"}, "load offsets of the wrong rank");
  check([&](tl::ptr<float> x) {
    auto d = tl::make_tensor_descriptor(x, {16, 16}, {16, 1}, {16, 16});
    line = __LINE__; d.store({0, 0}, tl::load(x + tl::arange(0, 8)));
  }, {"store", "[8]", "block_shape [16, 16]"}, "stored value of another shape");
  // A run-time last stride (not specialised to 1) is refused too: the launch passes 3.
  unsigned stride_line = 0;
  tt::check_throws_at([&] {
    auto k = tritium::kernel("bad_descriptor_stride", [&](tl::ptr<float> x, tl::i32 s) {
      stride_line = __LINE__; tl::make_tensor_descriptor(x, {16, 16}, {16, s}, {16, 16});
    });
    k.ir(static_cast<float*>(nullptr), 3);
  }, __FILE__, stride_line, {"make_tensor_descriptor", "last stride"}, "run-time last stride");
}

BOOST_AUTO_TEST_CASE(bad_block_pointers) {
  unsigned line = 0;
  auto check = [&](auto body, std::initializer_list<std::string_view> words, const std::string& what) {
    tt::check_throws_at([&] { trace(body); }, __FILE__, line, words, what);
  };
  check([&](tl::ptr<float> x) {
    line = __LINE__; tl::make_block_ptr(x, {16}, {1, 1}, {0}, {16}, {0});
  }, {"make_block_ptr", "strides has 2 entries", "1 dims"}, "strides of the wrong rank");
  check([&](tl::ptr<float> x) {
    line = __LINE__; tl::make_block_ptr(x, {16, 16}, {16, 1}, {0, 0}, {16, 16}, {0});
  }, {"make_block_ptr", "order has 1 entries"}, "order of the wrong rank");
  check([&](tl::ptr<float> x) {
    line = __LINE__; tl::make_block_ptr(x, {16, 16}, {16, 1}, {0, 0}, {16, 16}, {1, 1});
  }, {"make_block_ptr", "order {1, 1}", "permutation"}, "order not a permutation");
  check([&](tl::ptr<float> x) {
    line = __LINE__; tl::make_block_ptr(x, {16}, {1}, {0}, {12}, {0});
  }, {"make_block_ptr", "block_shape[0] = 12", "power of two"}, "block not a power of two");
  check([&](tl::ptr<float> x) {
    line = __LINE__; tl::make_block_ptr(x + tl::arange(0, 4), {16}, {1}, {0}, {4}, {0});
  }, {"make_block_ptr", "scalar pointer", "[4]"}, "base a block of pointers");
  check([&](tl::ptr<float> x) {
    line = __LINE__; tl::make_block_ptr(x, {16}, {1}, {tl::load(x)}, {4}, {0});
  }, {"make_block_ptr", "offsets[0]", "integer scalar", "f32"}, "float offset");
  check([&](tl::ptr<float> x) {
    auto p = tl::make_block_ptr(x, {16, 16}, {16, 1}, {0, 0}, {4, 4}, {1, 0});
    line = __LINE__; tl::advance(p, {4});
  }, {"advance", "offsets has 1 entries", "2 dims"}, "advance of the wrong rank");
  check([&](tl::ptr<float> x) {
    auto p = tl::make_block_ptr(x, {16, 16}, {16, 1}, {0, 0}, {4, 4}, {1, 0});
    line = __LINE__; tl::load(p, {2});
  }, {"load", "boundary_check dim 2", "2-D"}, "boundary check out of range");
  check([&](tl::ptr<float> x) {
    auto p = tl::make_block_ptr(x, {16, 16}, {16, 1}, {0, 0}, {4, 4}, {1, 0});
    line = __LINE__; tl::store(p, 1.0f, {1, 1});
  }, {"store", "names dim 1 twice"}, "boundary check repeated");
  check([&](tl::ptr<float> x) {
    auto p = tl::make_block_ptr(x, {16}, {1}, {0}, {4}, {0});
    line = __LINE__; tl::load(p, {0}, "inf");
  }, {"load", "padding_option", "\"inf\""}, "unknown padding");
  check([&](tl::ptr<float> x) {
    auto p = tl::make_block_ptr(x, {16}, {1}, {0}, {4}, {0});
    line = __LINE__; tl::store(p, tl::load(x + tl::arange(0, 8)));
  }, {"store", "[8]", "block_shape [4]"}, "stored value of another shape");
  check([&](tl::ptr<float>) {
    tl::block_ptr p;
    line = __LINE__; tl::load(p);
  }, {"load", "never made"}, "default block pointer");
  // "nan" padding needs floats.
  unsigned nan_line = 0;
  tt::check_throws_at([&] {
    auto k = tritium::kernel("bad_block_ptr_int", [&](tl::ptr<int32_t> x) {
      auto p = tl::make_block_ptr(x, {16}, {1}, {0}, {4}, {0});
      nan_line = __LINE__; tl::load(p, {0}, "nan");
    });
    k.ir(static_cast<int32_t*>(nullptr));
  }, __FILE__, nan_line, {"load", "\"nan\"", "i32"}, "nan padding of integers");
}

BOOST_AUTO_TEST_SUITE_END()
