// softmax, log_softmax, their backwards, cross_entropy (+ backward) and dropout (ops/softmax.cpp,
// ops/loss.cpp, ops/dropout.cpp) against float64 host references; label and shape errors;
// dropout statistics and mask reproducibility.
#include <cmath>

#include <fmt/format.h>

#include "ops_test_helpers.h"

namespace tt = tritium::test;
namespace ou = tritium::test::ops_util;
namespace ops = tritium::ops;
using tritium::DType;
using tritium::Tensor;

BOOST_AUTO_TEST_SUITE(test_ops_softmax)

namespace {

// Softmax reference along dim d of a row-major tensor; log = log_softmax.
std::vector<double> softmax_ref(const std::vector<double>& v, const ou::Shape& shape, int d, bool log) {
  int64_t O = 1, R = shape[d], I = 1;
  for (int k = 0; k < d; ++k) O *= shape[k];
  for (size_t k = d + 1; k < shape.size(); ++k) I *= shape[k];
  std::vector<double> out(v.size());
  for (int64_t o = 0; o < O; ++o)
    for (int64_t i = 0; i < I; ++i) {
      double m = -INFINITY, s = 0;
      for (int64_t r = 0; r < R; ++r) m = std::max(m, v[(o * R + r) * I + i]);
      for (int64_t r = 0; r < R; ++r) s += std::exp(v[(o * R + r) * I + i] - m);
      for (int64_t r = 0; r < R; ++r) {
        double x = v[(o * R + r) * I + i];
        out[(o * R + r) * I + i] = log ? x - m - std::log(s) : std::exp(x - m) / s;
      }
    }
  return out;
}

// An op's result lives on the backend's device (the inputs' device).
void check_on(const Tensor& t, const tt::Backend& be, const std::string& what) {
  BOOST_TEST((t.device() == be.device), what << ": result on " << t.device().str() << ", expected " << be.device.str());
}

}  // namespace

BOOST_AUTO_TEST_CASE(softmax_any_dim) {
  tt::for_each_backend([&](const tt::Backend& be) {
    struct C {
      ou::Shape shape;
      int dim;
    };
    for (const C& c : {C{{37, 10}, 1}, C{{37, 10}, -1}, C{{37, 10}, 0}, C{{4, 6, 33}, 1}, C{{5, 5000}, 1},
                       C{{3, 3, 9000}, 2}, C{{5000, 3}, 0}, C{{128}, 0}}) {
      Tensor x = ou::random_tensor<float>(c.shape, 1, -5, 5);
      auto v = ou::values(x);
      int d = c.dim < 0 ? c.dim + static_cast<int>(c.shape.size()) : c.dim;
      std::string what = "shape rank " + std::to_string(c.shape.size()) + " size " +
                         std::to_string(ou::numel(c.shape)) + " dim " + std::to_string(c.dim);
      Tensor y = ops::softmax(x, c.dim);
      BOOST_TEST(y.shape() == c.shape);
      check_on(y, be, "softmax " + what);
      ou::check_values(y, softmax_ref(v, c.shape, d, false), 1e-6, "softmax " + what);
      ou::check_values(ops::log_softmax(x, c.dim), softmax_ref(v, c.shape, d, true), 1e-6, "log_softmax " + what);
    }
  });
}

BOOST_AUTO_TEST_CASE(softmax_stable_and_strided) {
  tt::for_each_backend([&](const tt::Backend& be) {
    // Large logits: exp would overflow without the max subtraction.
    Tensor x = ou::random_tensor<float>({16, 50}, 2, 500, 1000);
    auto v = ou::values(x);
    ou::check_values(ops::softmax(x, 1), softmax_ref(v, {16, 50}, 1, false), 1e-5, "softmax of large logits");
    ou::check_values(ops::log_softmax(x, 1), softmax_ref(v, {16, 50}, 1, true), 1e-6, "log_softmax of large logits");
    // Transposed input.
    Tensor base = ou::random_tensor<float>({30, 20}, 3);
    auto vb = ou::values(base);
    Tensor t = base.as_strided({20, 30}, {1, 20}, 0);
    std::vector<double> vt(600);
    for (int i = 0; i < 20; ++i)
      for (int j = 0; j < 30; ++j) vt[i * 30 + j] = vb[j * 20 + i];
    ou::check_values(ops::softmax(t, 1), softmax_ref(vt, {20, 30}, 1, false), 1e-6, "softmax transposed");
    // f64 and f16.
    Tensor xd = ou::random_tensor<double>({9, 70}, 4, -3, 3);
    Tensor yd = ops::softmax(xd, 1);
    BOOST_TEST((yd.dtype() == DType::f64));
    ou::check_values(yd, softmax_ref(ou::values(xd), {9, 70}, 1, false), 1e-13, "softmax f64");
    Tensor xh = ops::to_dtype(ou::random_tensor<float>({9, 70}, 5, -3, 3), DType::f16);
    Tensor yh = ops::softmax(xh, 1);
    BOOST_TEST((yh.dtype() == DType::f16));
    check_on(yh, be, "softmax f16");
    check_on(ops::log_softmax(x, 1), be, "log_softmax");
    ou::check_values(yh, softmax_ref(ou::values(xh), {9, 70}, 1, false), 2e-3, "softmax f16");
  });
}

BOOST_AUTO_TEST_CASE(softmax_backwards) {
  tt::for_each_backend([&](const tt::Backend& be) {
    for (auto [shape, dim] : std::vector<std::pair<ou::Shape, int>>{{{37, 10}, 1}, {{4, 6, 33}, 1}, {{3, 6000}, 1}, {{50, 7}, 0}}) {
      Tensor x = ou::random_tensor<float>(shape, 6, -3, 3), g = ou::random_tensor<float>(shape, 7);
      auto vx = ou::values(x), vg = ou::values(g);
      int64_t O = 1, R = shape[dim], I = 1;
      for (int k = 0; k < dim; ++k) O *= shape[k];
      for (size_t k = dim + 1; k < shape.size(); ++k) I *= shape[k];
      for (bool log : {false, true}) {
        Tensor y = log ? ops::log_softmax(x, dim) : ops::softmax(x, dim);
        auto vy = ou::values(y);
        std::vector<double> ref(vx.size());
        for (int64_t o = 0; o < O; ++o)
          for (int64_t i = 0; i < I; ++i) {
            double dsum = 0;
            for (int64_t r = 0; r < R; ++r) {
              int64_t k = (o * R + r) * I + i;
              dsum += log ? vg[k] : vg[k] * vy[k];
            }
            for (int64_t r = 0; r < R; ++r) {
              int64_t k = (o * R + r) * I + i;
              ref[k] = log ? vg[k] - std::exp(vy[k]) * dsum : vy[k] * (vg[k] - dsum);
            }
          }
        Tensor dx = log ? ops::log_softmax_backward(g, y, dim) : ops::softmax_backward(g, y, dim);
        ou::check_values(dx, ref, 1e-5, std::string(log ? "log_softmax" : "softmax") + "_backward");
        check_on(dx, be, std::string(log ? "log_softmax" : "softmax") + "_backward");
      }
    }
  });
}

// Rows longer than a warp's 16-byte lanes (128 f32, 256 bf16 / f16) go one a program, with warps
// for 32 bytes a thread (1 to 16 on CUDA); shorter rows several a program. Forward and backward
// of both ops, row counts and lengths off the blocks, at and around those limits.
BOOST_AUTO_TEST_CASE(softmax_rows_one_a_program) {
  tt::for_each_backend([&](const tt::Backend&) {
    auto run = [&](auto tag, ou::Shape shape, double tol, uint32_t seed) {
      using T = decltype(tag);
      const std::string what = fmt::format("{} [{}, {}]", tritium::dtype_name(tritium::dtype_of<T>()), shape[0], shape[1]);
      Tensor x = ou::random_tensor<T>(shape, seed, -5, 5), g = ou::random_tensor<T>(shape, seed + 1);
      const auto xv = ou::values(x), gv = ou::values(g);
      for (bool log : {false, true}) {
        Tensor y = log ? ops::log_softmax(x, -1) : ops::softmax(x, -1);
        ou::check_values(y, softmax_ref(xv, shape, 1, log), tol, (log ? "log_softmax " : "softmax ") + what);
        // Backward from y as stored (rounded to T): softmax y (g - sum g y), log_softmax g - exp(y) sum g.
        const auto yv = ou::values(y);
        std::vector<double> ref(yv.size());
        for (int64_t o = 0; o < shape[0]; ++o) {
          double s = 0;
          for (int64_t r = 0; r < shape[1]; ++r) s += log ? gv[o * shape[1] + r] : gv[o * shape[1] + r] * yv[o * shape[1] + r];
          for (int64_t r = 0; r < shape[1]; ++r) {
            const size_t k = static_cast<size_t>(o * shape[1] + r);
            ref[k] = log ? gv[k] - std::exp(yv[k]) * s : yv[k] * (gv[k] - s);
          }
        }
        Tensor dx = log ? ops::log_softmax_backward(g, y, -1) : ops::softmax_backward(g, y, -1);
        ou::check_values(dx, ref, tol, (log ? "log_softmax_backward " : "softmax_backward ") + what);
      }
    };
    run(float{}, {7, 1000}, 1e-6, 11);     // [1, 1024] a program, 4 warps
    run(float{}, {33, 129}, 1e-6, 12);     // 256 > 128: one a program, one warp
    run(float{}, {19, 128}, 1e-6, 13);     // 32 lanes: several rows a program
    run(float{}, {3, 4096}, 1e-6, 14);     // the largest block in registers, 16 warps
    run(tritium::bf16_t{}, {9, 300}, 1e-2, 15);
    run(tritium::bf16_t{}, {21, 256}, 1e-2, 16);
    run(tritium::f16_t{}, {5, 2049}, 2e-3, 17);
    run(double{}, {6, 65}, 1e-12, 18);
    run(float{}, {2, 4100}, 1e-6, 19);     // past one block: the three-pass loop
  });
}

BOOST_AUTO_TEST_CASE(cross_entropy_values) {
  tt::for_each_backend([&](const tt::Backend& be) {
    for (auto [N, C] : std::vector<std::pair<int64_t, int64_t>>{{128, 10}, {7, 3}, {33, 5000}, {1000, 10}}) {
      Tensor x = ou::random_tensor<float>({N, C}, 8, -4, 4);
      Tensor t = ou::random_tensor<int64_t>({N}, 9, 0, static_cast<double>(C - 1));
      auto vx = ou::values(x), vt = ou::values(t);
      auto ls = softmax_ref(vx, {N, C}, 1, true);
      double loss = 0;
      for (int64_t i = 0; i < N; ++i) loss -= ls[i * C + static_cast<int64_t>(vt[i])];
      loss /= static_cast<double>(N);
      Tensor l = ops::cross_entropy(x, t);
      BOOST_TEST(l.dim() == 0);
      BOOST_TEST((l.dtype() == DType::f32));
      check_on(l, be, "cross_entropy");
      ou::check_values(l, {loss}, 1e-6, "cross_entropy N=" + std::to_string(N) + " C=" + std::to_string(C));
      // i32 targets give the same loss.
      ou::check_values(ops::cross_entropy(x, ops::to_dtype(t, DType::i32)), {loss}, 1e-6, "cross_entropy i32 targets");
      // Backward: g / N * (softmax - onehot).
      Tensor g = Tensor::from_vector<float>({1.5f}, {});
      auto sm = softmax_ref(vx, {N, C}, 1, false);
      std::vector<double> ref(vx.size());
      for (int64_t i = 0; i < N; ++i)
        for (int64_t j = 0; j < C; ++j)
          ref[i * C + j] = 1.5 / static_cast<double>(N) * (sm[i * C + j] - (j == static_cast<int64_t>(vt[i]) ? 1 : 0));
      Tensor dx = ops::cross_entropy_backward(g, x, t);
      ou::check_values(dx, ref, 1e-5, "cross_entropy_backward");
      check_on(dx, be, "cross_entropy_backward");
    }
  });
}

BOOST_AUTO_TEST_CASE(cross_entropy_errors) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor x = ou::random_tensor<float>({6, 10}, 10);
    std::vector<int64_t> labels{1, 2, 9, 12, 0, 15};
    tt::check_throws([&] { ou::values(ops::cross_entropy(x, Tensor::from_vector(labels))); }, {"cross_entropy", "target 12", "index 3", "10 classes"},
                     "label too large");
    labels = {1, 2, 3, 4, 5, -1};
    tt::check_throws([&] { ou::values(ops::cross_entropy(x, Tensor::from_vector(labels))); }, {"target -1", "index 5"}, "negative label");
    std::vector<int32_t> l32{10, 0, 0, 0, 0, 0};
    tt::check_throws([&] { ou::values(ops::cross_entropy(x, Tensor::from_vector(l32))); }, {"target 10", "index 0"}, "i32 label");
    tt::check_throws([&] { ops::cross_entropy(x, Tensor::zeros({5}, DType::i64)); }, {"cross_entropy", "[6, 10]", "[5]"},
                     "batch size mismatch");
    tt::check_throws([&] { ops::cross_entropy(x, Tensor::zeros({6}, DType::f32)); }, {"cross_entropy", "f32"},
                     "float targets");
    tt::check_throws([&] { ops::cross_entropy(Tensor::zeros({6}, DType::f32), Tensor::zeros({6}, DType::i64)); },
                     {"cross_entropy", "2-D"}, "1-D logits");
    tt::check_throws([&] { ops::softmax(x, 2); }, {"softmax", "dimension 2"}, "softmax bad dim");
    tt::check_throws([&] { ops::softmax(Tensor::zeros({3}, DType::i32), 0); }, {"softmax", "floating"}, "softmax of ints");
    tt::check_throws([&] { ops::softmax_backward(x, Tensor::zeros({3}, DType::f32), 1); }, {"softmax_backward", "[6, 10]"},
                     "softmax_backward shapes");
  });
}

BOOST_AUTO_TEST_CASE(dropout_statistics_and_masks) {
  tt::for_each_backend([&](const tt::Backend& be) {
    const int64_t n = 1 << 20;
    Tensor x = ou::random_tensor<float>({1024, 1024}, 11, 0.5, 2);  // nonzero everywhere
    auto vx = ou::values(x);
    for (double p : {0.1, 0.5, 0.9}) {
      ops::Generator gen(1234);
      ops::DropoutState st;
      Tensor y = ops::dropout(x, p, gen, &st);
      BOOST_TEST(st.p == p);
      BOOST_TEST(st.seed == 1234u);
      check_on(y, be, "dropout");
      auto vy = ou::values(y);
      const float scale = static_cast<float>(1.0 / (1.0 - p));
      int64_t kept = 0, bad_scale = 0;
      for (int64_t i = 0; i < n; ++i) {
        if (vy[i] == 0) continue;
        ++kept;
        if (vy[i] != static_cast<float>(static_cast<float>(vx[i]) * scale)) ++bad_scale;
      }
      double frac = static_cast<double>(kept) / n;
      // Binomial standard deviation of the fraction is sqrt(p(1-p)/n) <= 5e-4: allow 6 of them.
      BOOST_TEST(std::abs(frac - (1 - p)) < 3e-3, "p = " << p << ": kept fraction " << frac);
      BOOST_TEST(bad_scale == 0, "p = " << p << ": kept elements not scaled by exactly 1/(1-p)");
      // The backward regenerates the same mask with the same scale.
      Tensor g = ou::random_tensor<float>({1024, 1024}, 12, 0.5, 2);
      auto vg = ou::values(g), vd = ou::values(ops::dropout_backward(g, st));
      int64_t mismatch = 0;
      for (int64_t i = 0; i < n; ++i) {
        double want = vy[i] == 0 ? 0.0 : static_cast<float>(static_cast<float>(vg[i]) * scale);
        if (vd[i] != want) ++mismatch;
      }
      BOOST_TEST(mismatch == 0, "p = " << p << ": backward mask differs in " << mismatch << " elements");
      // Same seed: same mask; the generator moved on: another mask.
      ops::Generator gen2(1234);
      auto vy2 = ou::values(ops::dropout(x, p, gen2));
      BOOST_TEST((vy2 == vy), "same seed, same mask");
      auto vy3 = ou::values(ops::dropout(x, p, gen2));
      BOOST_TEST((vy3 != vy), "the generator's offset advanced: a new mask");
    }
    ops::Generator gen(1);
    Tensor c = ops::dropout(x, 0.0, gen);
    BOOST_TEST(c.storage() != x.storage());
    check_on(c, be, "dropout p = 0");
    BOOST_TEST((ou::values(c) == vx), "p = 0 is a copy");
    auto z = ou::values(ops::dropout(x, 1.0, gen));
    BOOST_TEST((z == std::vector<double>(n, 0.0)), "p = 1 gives zeros");
    tt::check_throws([&] { ops::dropout(x, 1.5, gen); }, {"dropout", "1.5"}, "p > 1");
    tt::check_throws([&] { ops::dropout(x, -0.1, gen); }, {"dropout", "-0.1"}, "p < 0");
  });
}

// Rows of one element whose buffer is followed by NaNs: the masked-off lanes of the kernel's
// 16-lane block must not be read (LLVM 19 once loaded an all-false half of a masked load unmasked
// on AVX2, so the NaN reached the row's sum: jit/cpu/memory.cpp's eval_load).
BOOST_AUTO_TEST_CASE(one_element_rows_ignore_the_memory_after_them) {
  tt::for_each_backend([&](const tt::Backend&) {
    std::vector<float> nan_after(64, NAN);
    nan_after[0] = 0.5f;
    Tensor y = Tensor::from_vector(nan_after, {64}).slice(0, 0, 1);
    nan_after[0] = 0.7f;
    Tensor g = Tensor::from_vector(nan_after, {64}).slice(0, 0, 1);
    BOOST_TEST_REQUIRE(y.is_contiguous());  // read in place, not copied
    BOOST_TEST(ou::values(ops::softmax_backward(g, y, 0))[0] == static_cast<float>(0.5f * (0.7f - 0.7f * 0.5f)));
    BOOST_TEST(ou::values(ops::log_softmax_backward(g, y, 0))[0] ==
               static_cast<float>(0.7f - std::exp(0.5f) * 0.7f), boost::test_tools::tolerance(1e-6));
    BOOST_TEST(ou::values(ops::softmax(y, 0))[0] == 1.0);
  });
}

BOOST_AUTO_TEST_SUITE_END()
