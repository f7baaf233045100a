// The op library's elementwise ops and copies (ops/elementwise.cpp, ops/copy.cpp): values against
// float64 host references on random inputs, broadcasting, strided/transposed/expanded inputs,
// PyTorch's type promotion, and the errors.
#include <cmath>

#include "ops_test_helpers.h"

namespace tt = tritium::test;
namespace ou = tritium::test::ops_util;
namespace ops = tritium::ops;
using tritium::DType;
using tritium::Tensor;

BOOST_AUTO_TEST_SUITE(test_ops_elementwise)

namespace {

void check_exact(const Tensor& out, const std::vector<double>& ref, const std::string& what) {
  auto v = ou::values(out);
  BOOST_TEST_REQUIRE(v.size() == ref.size(), what);
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] != ref[i] && !(std::isnan(v[i]) && std::isnan(ref[i]))) {
      if (!bad) first = i;
      ++bad;
    }
  BOOST_TEST(bad == 0u, what << ": " << bad << " elements differ; first [" << first << "] = " << (bad ? v[first] : 0)
                              << ", reference " << (bad ? ref[first] : 0));
}

// An op's result lives on the backend's device (the inputs' device).
void check_on(const Tensor& t, const tt::Backend& be, const std::string& what) {
  BOOST_TEST((t.device() == be.device), what << ": result on " << t.device().str() << ", expected " << be.device.str());
}

double gelu_ref(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }

}  // namespace

BOOST_AUTO_TEST_CASE(binary_same_shape_f32) {
  tt::for_each_backend([&](const tt::Backend& be) {
    const ou::Shape s{1000003};  // not a multiple of any block
    Tensor a = ou::random_tensor<float>(s, 1), b = ou::random_tensor<float>(s, 2);
    Tensor bz = ou::random_tensor<float>(s, 3);
    Tensor bnz = Tensor::from_vector<float>(
        [&] { auto v = tt::random_nonzero<float>(s[0], 4, -2, 2, 0.1); return std::vector<float>(v.begin(), v.end()); }(), s);
    auto va = ou::values(a), vb = ou::values(b), vn = ou::values(bnz);
    auto ref = [&](auto f, const std::vector<double>& y) {
      std::vector<double> r(va.size());
      for (size_t i = 0; i < r.size(); ++i) r[i] = static_cast<float>(f(va[i], y[i]));
      return r;
    };
    ou::check_values(ops::add(a, b), ref(std::plus<>(), vb), 1e-7, "add");
    ou::check_values(ops::sub(a, b), ref(std::minus<>(), vb), 1e-7, "sub");
    ou::check_values(ops::mul(a, b), ref(std::multiplies<>(), vb), 1e-7, "mul");
    ou::check_values(ops::div(a, bnz), ref(std::divides<>(), vn), 1e-7, "div");
    BOOST_TEST((ops::add(a, b).dtype() == DType::f32));
    BOOST_TEST(ops::add(a, b).is_contiguous());
    check_on(ops::add(a, b), be, "add");
  });
}

BOOST_AUTO_TEST_CASE(scalar_variants) {
  tt::for_each_backend([&](const tt::Backend& be) {
    Tensor a = ou::random_tensor<float>({37, 41}, 5);
    auto va = ou::values(a);
    auto ref = [&](auto f) {
      std::vector<double> r(va.size());
      for (size_t i = 0; i < r.size(); ++i) r[i] = f(va[i]);
      return r;
    };
    ou::check_values(ops::add(a, 2.5), ref([](double x) { return x + 2.5; }), 1e-7, "add scalar");
    ou::check_values(ops::sub(a, 3), ref([](double x) { return x - 3; }), 1e-7, "sub scalar");
    ou::check_values(ops::rsub(a, 1.0), ref([](double x) { return 1 - x; }), 1e-7, "rsub");
    ou::check_values(ops::mul(a, -4), ref([](double x) { return x * -4; }), 1e-7, "mul scalar");
    ou::check_values(ops::div(a, 3.0), ref([](double x) { return x / 3; }), 1e-7, "div scalar");
    Tensor i = ou::random_tensor<int32_t>({100}, 6, -50, 50);
    auto vi = ou::values(i);
    std::vector<double> r(vi.size());
    for (size_t k = 0; k < r.size(); ++k) r[k] = vi[k] * 7;
    Tensor m = ops::mul(i, 7);
    BOOST_TEST((m.dtype() == DType::i32));
    check_exact(m, r, "i32 * 7");
    check_on(m, be, "i32 * 7");
    check_on(ops::add(a, 2.5), be, "add scalar");
  });
}

BOOST_AUTO_TEST_CASE(broadcasting) {
  tt::for_each_backend([&](const tt::Backend& be) {
    struct Case {
      ou::Shape a, b, out;
    };
    for (const Case& c : {Case{{3, 1, 5}, {4, 1}, {3, 4, 5}}, Case{{128, 512}, {512}, {128, 512}},
                          Case{{1}, {7, 9}, {7, 9}}, Case{{}, {5, 3}, {5, 3}}, Case{{6, 1}, {1, 300}, {6, 300}},
                          Case{{2, 3, 4, 5, 6}, {3, 1, 5, 1}, {2, 3, 4, 5, 6}}}) {
      Tensor a = ou::random_tensor<float>(c.a, 7), b = ou::random_tensor<float>(c.b, 8);
      auto ref = ou::broadcast_ref(ou::values(a), c.a, ou::values(b), c.b, c.out,
                                   [](double x, double y) { return static_cast<float>(x * y); });
      Tensor o = ops::mul(a, b);
      BOOST_TEST(o.shape() == c.out);
      check_on(o, be, "mul broadcast");
      ou::check_values(o, ref, 1e-7, "mul broadcast");
      Tensor o2 = ops::sub(b, a);  // the other order
      auto ref2 = ou::broadcast_ref(ou::values(b), c.b, ou::values(a), c.a, c.out,
                                    [](double x, double y) { return static_cast<float>(x - y); });
      ou::check_values(o2, ref2, 1e-7, "sub broadcast");
    }
  });
}

BOOST_AUTO_TEST_CASE(strided_inputs) {
  tt::for_each_backend([&](const tt::Backend& be) {
    // Transposed: a [N, M] viewed as [M, N]; a slice with a step and an offset; an expanded row.
    Tensor base = ou::random_tensor<float>({300, 200}, 9);
    auto vb = ou::values(base);
    Tensor t = base.as_strided({200, 300}, {1, 200}, 0);
    std::vector<double> vt(200 * 300);
    for (int i = 0; i < 200; ++i)
      for (int j = 0; j < 300; ++j) vt[i * 300 + j] = vb[j * 200 + i];
    Tensor y = ou::random_tensor<float>({200, 300}, 10);
    auto vy = ou::values(y);
    std::vector<double> ref(vt.size());
    for (size_t k = 0; k < ref.size(); ++k) ref[k] = static_cast<float>(vt[k] + vy[k]);
    ou::check_values(ops::add(t, y), ref, 1e-7, "transposed + contiguous");
    ou::check_values(ops::add(y, t), ref, 1e-7, "contiguous + transposed");
    ou::check_values(ops::contiguous(t), vt, 0, "contiguous of transposed");
    check_on(ops::add(t, y), be, "transposed + contiguous");
    check_on(ops::contiguous(t), be, "contiguous of transposed");

    // Every other column, rows 5..104: offset 5*200+1, strides (200, 2).
    Tensor s = base.as_strided({100, 99}, {200, 2}, 5 * 200 + 1);
    std::vector<double> vs(100 * 99), r2(100 * 99);
    for (int i = 0; i < 100; ++i)
      for (int j = 0; j < 99; ++j) vs[i * 99 + j] = vb[(i + 5) * 200 + 1 + 2 * j];
    for (size_t k = 0; k < vs.size(); ++k) r2[k] = std::exp(vs[k]);
    ou::check_values(ops::exp(s), r2, 1e-6, "exp of a stepped slice");

    // Expanded (stride 0): a [1, 200] row broadcast to [300, 200] as a view.
    Tensor row = ou::random_tensor<float>({200}, 11);
    Tensor e = row.as_strided({300, 200}, {0, 1}, 0);
    auto vr = ou::values(row);
    std::vector<double> r3(300 * 200);
    for (int i = 0; i < 300; ++i)
      for (int j = 0; j < 200; ++j) r3[i * 200 + j] = static_cast<float>(vr[j] - vb[i * 200 + j]);
    ou::check_values(ops::sub(e, base), r3, 1e-7, "expanded - contiguous");

    // A column expanded along the rows, times a transposed tensor: no dims merge.
    Tensor col = ou::random_tensor<float>({200}, 12);
    Tensor ec = col.as_strided({200, 300}, {1, 0}, 0);
    auto vc = ou::values(col);
    std::vector<double> r4(200 * 300);
    for (int i = 0; i < 200; ++i)
      for (int j = 0; j < 300; ++j) r4[i * 300 + j] = static_cast<float>(vc[i] * vt[i * 300 + j]);
    ou::check_values(ops::mul(ec, t), r4, 1e-7, "expanded column * transposed");
  });
}

BOOST_AUTO_TEST_CASE(high_rank_strided) {
  tt::for_each_backend([&](const tt::Backend& be) {
    // 8 dims, every other one reversed in memory order: nothing merges, more dims than the
    // strided kernel takes (the host loops over the outermost).
    ou::Shape shape{2, 3, 2, 3, 2, 3, 2, 5};
    Tensor base = ou::random_tensor<float>(shape, 13);
    // Permute: reverse the dims.
    ou::Shape pshape(shape.rbegin(), shape.rend()), pstr;
    ou::Shape str(8);
    int64_t s = 1;
    for (int d = 7; d >= 0; --d) str[d] = s, s *= shape[d];
    pstr.assign(str.rbegin(), str.rend());
    Tensor p = base.as_strided(pshape, pstr, 0);
    auto vb = ou::values(base);
    std::vector<double> ref(vb.size());
    for (int64_t i = 0; i < ou::numel(pshape); ++i) {
      auto idx = ou::unravel(i, pshape);
      int64_t off = 0;
      for (int d = 0; d < 8; ++d) off += idx[d] * pstr[d];
      ref[i] = -vb[off];
    }
    ou::check_values(ops::neg(p), ref, 0, "neg of an 8-d permuted view");
    check_on(ops::neg(p), be, "neg of an 8-d permuted view");
  });
}

BOOST_AUTO_TEST_CASE(type_promotion) {
  tt::for_each_backend([&](const tt::Backend& be) {
    auto T = [](DType d, ou::Shape s = {3}) { return Tensor::zeros(s, d); };
    struct C {
      DType a, b, r;
    };
    for (const C& c : {C{DType::i32, DType::f32, DType::f32}, C{DType::i64, DType::i32, DType::i64},
                       C{DType::u8, DType::i8, DType::i16}, C{DType::f16, DType::bf16, DType::f32},
                       C{DType::f16, DType::i64, DType::f16}, C{DType::i1, DType::i1, DType::i1},
                       C{DType::i1, DType::u8, DType::u8}, C{DType::f32, DType::f64, DType::f64},
                       C{DType::u16, DType::i32, DType::i32}, C{DType::u32, DType::i32, DType::i64}}) {
      BOOST_TEST((ops::result_type(T(c.a), T(c.b)) == c.r), dtype_name(c.a) << " + " << dtype_name(c.b));
      BOOST_TEST((ops::add(T(c.a), T(c.b)).dtype() == c.r), "add " << dtype_name(c.a) << " + " << dtype_name(c.b));
    }
    // Scalars only raise the category.
    BOOST_TEST((ops::result_type(T(DType::i32), ops::Scalar(2.5)) == DType::f32));
    BOOST_TEST((ops::result_type(T(DType::f16), ops::Scalar(2.5)) == DType::f16));
    BOOST_TEST((ops::result_type(T(DType::i8), ops::Scalar(1000)) == DType::i8));
    BOOST_TEST((ops::result_type(T(DType::i1), ops::Scalar(1)) == DType::i64));
    BOOST_TEST((ops::result_type(T(DType::i1), ops::Scalar(true)) == DType::i1));
    BOOST_TEST((ops::result_type(T(DType::f64), ops::Scalar(1)) == DType::f64));
    // Zero-dim tensors count below dimensioned ones unless their category is higher.
    BOOST_TEST((ops::result_type(T(DType::f32), T(DType::f64, {})) == DType::f32));
    BOOST_TEST((ops::result_type(T(DType::i32), T(DType::f64, {})) == DType::f64));
    BOOST_TEST((ops::result_type(T(DType::f64, {}), T(DType::f16, {})) == DType::f64));
    // Integer true division gives f32, with the right values.
    Tensor i = Tensor::from_vector<int32_t>({7, -7, 1, 0});
    Tensor j = Tensor::from_vector<int64_t>({2, 2, 3, 5});
    Tensor q = ops::div(i, j);
    BOOST_TEST((q.dtype() == DType::f32));
    check_on(q, be, "int / int");
    check_exact(q, {3.5, -3.5, static_cast<float>(1.0 / 3), 0}, "int / int");
    check_exact(ops::div(i, 2), {3.5, -3.5, 0.5, 0}, "int / int scalar");
    // Mixed: i32 * 0.5 -> f32; u8 + i8 values in i16; bool + bool is logical or.
    Tensor u = Tensor::from_vector<uint8_t>({200, 255});
    Tensor s = Tensor::from_vector<int8_t>({100, -128});
    check_exact(ops::add(u, s), {300, 127}, "u8 + i8 in i16");
    Tensor b1 = Tensor::from_vector<bool>({true, true, false, false}), b2 = Tensor::from_vector<bool>({true, false, true, false});
    check_exact(ops::add(b1, b2), {1, 1, 1, 0}, "bool + bool");
    check_exact(ops::mul(b1, b2), {1, 0, 0, 0}, "bool * bool");
    check_exact(ops::add(b1, 2), {3, 3, 2, 2}, "bool + int scalar");
    Tensor h = Tensor::from_vector<float>({1.5f, -2.25f});
    Tensor hh = ops::to_dtype(h, DType::f16);
    BOOST_TEST((ops::mul(hh, 2.0).dtype() == DType::f16));
    check_exact(ops::mul(hh, 2.0), {3.0, -4.5}, "f16 * 2.0");
  });
}

BOOST_AUTO_TEST_CASE(unary_ops) {
  tt::for_each_backend([&](const tt::Backend& be) {
    Tensor x = ou::random_tensor<float>({5003}, 14, -3, 3);
    Tensor pos = ou::random_tensor<float>({5003}, 15, 0.01, 5);
    auto vx = ou::values(x), vp = ou::values(pos);
    auto ref = [](const std::vector<double>& v, auto f) {
      std::vector<double> r(v.size());
      for (size_t i = 0; i < v.size(); ++i) r[i] = f(v[i]);
      return r;
    };
    ou::check_values(ops::neg(x), ref(vx, [](double v) { return -v; }), 0, "neg");
    ou::check_values(ops::exp(x), ref(vx, [](double v) { return std::exp(v); }), 1e-6, "exp");
    ou::check_values(ops::log(pos), ref(vp, [](double v) { return std::log(v); }), 1e-6, "log");
    ou::check_values(ops::sqrt(pos), ref(vp, [](double v) { return std::sqrt(v); }), 1e-6, "sqrt");
    ou::check_values(ops::tanh(x), ref(vx, [](double v) { return std::tanh(v); }), 1e-6, "tanh");
    ou::check_values(ops::sigmoid(x), ref(vx, [](double v) { return 1 / (1 + std::exp(-v)); }), 1e-6, "sigmoid");
    ou::check_values(ops::relu(x), ref(vx, [](double v) { return v > 0 ? v : 0; }), 0, "relu");
    ou::check_values(ops::gelu(x), ref(vx, gelu_ref), 1e-6, "gelu");
    // f64 stays f64 and is accurate to f64 precision.
    Tensor xd = ou::random_tensor<double>({1000}, 16, -3, 3);
    auto vd = ou::values(xd);
    Tensor ed = ops::exp(xd);
    BOOST_TEST((ed.dtype() == DType::f64));
    check_on(ed, be, "exp f64");
    ou::check_values(ed, ref(vd, [](double v) { return std::exp(v); }), 1e-14, "exp f64");
    // Integers go to f32.
    Tensor xi = ou::random_tensor<int32_t>({100}, 17, 1, 20);
    Tensor li = ops::log(xi);
    BOOST_TEST((li.dtype() == DType::f32));
    ou::check_values(li, ref(ou::values(xi), [](double v) { return std::log(v); }), 1e-6, "log of int");
    Tensor ri = ops::relu(ou::random_tensor<int64_t>({100}, 18, -9, 9));
    BOOST_TEST((ri.dtype() == DType::i64));
    // f16: computed in f32, rounded once.
    Tensor xh = ops::to_dtype(x, DType::f16);
    auto vh = ou::values(xh);
    Tensor eh = ops::exp(xh);
    BOOST_TEST((eh.dtype() == DType::f16));
    check_on(eh, be, "exp f16");
    ou::check_values(eh, ref(vh, [](double v) { return tt::round_to<tritium::f16_t>(std::exp(v)); }), 1e-3, "exp f16");
  });
}

BOOST_AUTO_TEST_CASE(pow_op) {
  tt::for_each_backend([&](const tt::Backend& be) {
    Tensor x = ou::random_tensor<float>({1000}, 19, -2, 2);
    Tensor pos = ou::random_tensor<float>({1000}, 20, 0.1, 3);
    auto vx = ou::values(x), vp = ou::values(pos);
    auto ref = [](const std::vector<double>& v, double e) {
      std::vector<double> r(v.size());
      for (size_t i = 0; i < v.size(); ++i) r[i] = std::pow(v[i], e);
      return r;
    };
    ou::check_values(ops::pow(x, 2), ref(vx, 2), 1e-7, "x^2");
    ou::check_values(ops::pow(x, 3.0), ref(vx, 3), 1e-6, "x^3.0");
    ou::check_values(ops::pow(x, 0), ref(vx, 0), 0, "x^0");
    ou::check_values(ops::pow(pos, -2), ref(vp, -2), 1e-6, "x^-2");
    ou::check_values(ops::pow(pos, 0.5), ref(vp, 0.5), 1e-7, "x^0.5");
    ou::check_values(ops::pow(pos, -1.7), ref(vp, -1.7), 1e-7, "x^-1.7");
    Tensor xi = Tensor::from_vector<int32_t>({-3, 2, 5});
    Tensor pi = ops::pow(xi, 3);
    BOOST_TEST((pi.dtype() == DType::i32));
    check_on(pi, be, "int^3");
    check_exact(pi, {-27, 8, 125}, "int^3");
    BOOST_TEST((ops::pow(xi, 0.5).dtype() == DType::f32));
    tt::check_throws([&] { ops::pow(xi, -1); }, {"pow", "negative"}, "int ** -1");
  });
}

BOOST_AUTO_TEST_CASE(comparisons_and_where) {
  tt::for_each_backend([&](const tt::Backend& be) {
    Tensor a = ou::random_tensor<int32_t>({40, 30}, 21, -5, 5);
    Tensor b = ou::random_tensor<float>({30}, 22, -5, 5);
    auto va = ou::values(a), vb = ou::values(b);
    ou::Shape sa{40, 30}, sb{30};
    auto cmp = [&](auto f) { return ou::broadcast_ref(va, sa, vb, sb, sa, [&](double x, double y) { return f(x, y) ? 1.0 : 0.0; }); };
    Tensor lt = ops::lt(a, b);
    BOOST_TEST((lt.dtype() == DType::i1));
    check_on(lt, be, "lt");
    check_exact(lt, cmp(std::less<>()), "lt");
    check_exact(ops::le(a, b), cmp(std::less_equal<>()), "le");
    check_exact(ops::gt(a, b), cmp(std::greater<>()), "gt");
    check_exact(ops::ge(a, b), cmp(std::greater_equal<>()), "ge");
    check_exact(ops::eq(a, a), std::vector<double>(va.size(), 1.0), "eq self");
    check_exact(ops::ne(a, a), std::vector<double>(va.size(), 0.0), "ne self");
    std::vector<double> r(va.size());
    for (size_t i = 0; i < va.size(); ++i) r[i] = va[i] == 2 ? 1 : 0;
    check_exact(ops::eq(a, 2), r, "eq scalar");
    for (size_t i = 0; i < va.size(); ++i) r[i] = va[i] > 0.5 ? 1 : 0;
    check_exact(ops::gt(a, 0.5), r, "gt 0.5 (int tensor, float scalar)");
    for (size_t i = 0; i < va.size(); ++i) r[i] = va[i] < -1 ? 1 : 0;
    check_exact(ops::lt(a, -1), r, "lt scalar");

    // where with broadcasting: cond [40, 30], a [30] f32, b [40, 1] f64 -> f64.
    Tensor cond = ops::gt(a, 0);
    Tensor x = ou::random_tensor<float>({30}, 23);
    Tensor y = ou::random_tensor<double>({40, 1}, 24);
    Tensor w = ops::where(cond, x, y);
    BOOST_TEST((w.dtype() == DType::f64));
    check_on(w, be, "where");
    auto vc = ou::values(cond), vx = ou::values(x), vy = ou::values(y);
    for (int i = 0; i < 40; ++i)
      for (int j = 0; j < 30; ++j) r[i * 30 + j] = vc[i * 30 + j] ? vx[j] : vy[i];
    check_exact(w, r, "where");
  });
}

BOOST_AUTO_TEST_CASE(backward_helpers) {
  tt::for_each_backend([&](const tt::Backend& be) {
    Tensor g = ou::random_tensor<float>({3001}, 25), x = ou::random_tensor<float>({3001}, 26, -3, 3);
    Tensor y = ou::random_tensor<float>({3001}, 27, -0.99, 0.99);
    auto vg = ou::values(g), vx = ou::values(x), vy = ou::values(y);
    std::vector<double> r(vg.size());
    for (size_t i = 0; i < r.size(); ++i) r[i] = vx[i] > 0 ? vg[i] : 0;
    ou::check_values(ops::relu_backward(g, x), r, 0, "relu_backward");
    check_on(ops::relu_backward(g, x), be, "relu_backward");
    for (size_t i = 0; i < r.size(); ++i) {
      double cdf = 0.5 * (1 + std::erf(vx[i] / std::sqrt(2.0)));
      double pdf = std::exp(-0.5 * vx[i] * vx[i]) / std::sqrt(2 * M_PI);
      r[i] = vg[i] * (cdf + vx[i] * pdf);
    }
    ou::check_values(ops::gelu_backward(g, x), r, 1e-6, "gelu_backward");
    for (size_t i = 0; i < r.size(); ++i) r[i] = vg[i] * (1 - vy[i] * vy[i]);
    ou::check_values(ops::tanh_backward(g, y), r, 1e-6, "tanh_backward");
    for (size_t i = 0; i < r.size(); ++i) r[i] = vg[i] * vy[i] * (1 - vy[i]);
    ou::check_values(ops::sigmoid_backward(g, y), r, 1e-6, "sigmoid_backward");
    // gelu_backward is the derivative of gelu (central differences in f64).
    Tensor xd = ou::random_tensor<double>({200}, 28, -3, 3);
    Tensor ones = ops::add(ops::mul(xd, 0), 1);
    auto gb = ou::values(ops::gelu_backward(ones, xd));
    auto vd = ou::values(xd);
    for (size_t i = 0; i < vd.size(); ++i) r[i] = (gelu_ref(vd[i] + 1e-6) - gelu_ref(vd[i] - 1e-6)) / 2e-6;
    r.resize(vd.size());
    tt::check_close<double>(ou::as_host(gb), r, 1e-8, "gelu_backward vs finite differences");
  });
}

BOOST_AUTO_TEST_CASE(copies_and_conversions) {
  tt::for_each_backend([&](const tt::Backend& be) {
    Tensor x = ou::random_tensor<float>({33, 65}, 29, -100, 100);
    auto vx = ou::values(x);
    Tensor c = ops::clone(x);
    BOOST_TEST(c.storage() != x.storage());
    check_exact(c, vx, "clone");
    check_on(c, be, "clone");
    BOOST_TEST(ops::contiguous(x).storage() == x.storage());  // already contiguous: itself
    // Conversions: f32 -> i32 truncates, -> f16 rounds, -> bool is != 0, bool -> f32 is 0/1.
    std::vector<double> r(vx.size());
    for (size_t i = 0; i < r.size(); ++i) r[i] = std::trunc(vx[i]);
    check_exact(ops::to_dtype(x, DType::i32), r, "f32 -> i32");
    for (size_t i = 0; i < r.size(); ++i) r[i] = tt::round_to<tritium::f16_t>(vx[i]);
    check_exact(ops::to_dtype(x, DType::f16), r, "f32 -> f16");
    check_on(ops::to_dtype(x, DType::f16), be, "f32 -> f16");
    for (size_t i = 0; i < r.size(); ++i) r[i] = tt::round_to<tritium::bf16_t>(vx[i]);
    check_exact(ops::to_dtype(x, DType::bf16), r, "f32 -> bf16");
    Tensor bits = Tensor::from_vector<float>({0.0f, -0.0f, 2.5f, NAN});
    check_exact(ops::to_dtype(bits, DType::i1), {0, 0, 1, 1}, "f32 -> bool");
    check_exact(ops::to_dtype(ops::to_dtype(bits, DType::i1), DType::f32), {0, 0, 1, 1}, "bool -> f32");
    BOOST_TEST(ops::to_dtype(x, DType::f32).storage() == x.storage());

    // copy_ into a transposed destination, broadcasting a row, converting f64 -> f32.
    Tensor dst_base = Tensor::zeros({65, 33}, DType::f32);
    Tensor dst = dst_base.as_strided({33, 65}, {1, 33}, 0);
    Tensor row = ou::random_tensor<double>({65}, 30);
    ops::copy_(dst, row);
    auto vr = ou::values(row), vd = ou::values(dst_base);
    bool ok = true;
    for (int i = 0; i < 33; ++i)
      for (int j = 0; j < 65; ++j) ok = ok && vd[j * 33 + i] == static_cast<float>(vr[j]);
    BOOST_TEST(ok, "copy_ of a broadcast row into a transposed destination");
    // copy_ into a slice leaves the rest alone.
    Tensor whole = ou::random_tensor<int64_t>({10, 10}, 31, -100, 100);
    auto before = ou::values(whole);
    Tensor part = whole.as_strided({4, 3}, {10, 2}, 12);
    ops::copy_(part, Tensor::from_vector<int32_t>({7, 8, 9}));
    auto after = ou::values(whole);
    for (int i = 0; i < 10; ++i)
      for (int j = 0; j < 10; ++j) {
        bool in = i >= 1 && i < 5 && j >= 2 && j <= 6 && (j - 2) % 2 == 0;
        double want = in ? 7 + (j - 2) / 2 : before[i * 10 + j];
        if (after[i * 10 + j] != want) ok = false;
      }
    BOOST_TEST(ok, "copy_ into a stepped slice");
    BOOST_TEST(ops::Scalar(3).to_double() == 3.0);
    BOOST_TEST(ops::Scalar(true).to_double() == 1.0);
    BOOST_TEST(ops::Scalar(-2.5f).to_double() == -2.5);
  });
}

BOOST_AUTO_TEST_CASE(empty_and_scalar_tensors) {
  tt::for_each_backend([&](const tt::Backend& be) {
    Tensor e = Tensor::empty({0, 5}, DType::f32);
    BOOST_TEST(ops::add(e, e).shape() == (ou::Shape{0, 5}));
    Tensor s = Tensor::from_vector<float>({2.0f}, {});
    Tensor r = ops::mul(s, s);
    BOOST_TEST(r.dim() == 0);
    check_on(r, be, "0-dim * 0-dim");
    check_on(ops::add(e, e), be, "empty + empty");
    check_exact(r, {4.0}, "0-dim * 0-dim");
  });
}

BOOST_AUTO_TEST_CASE(errors) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor a = Tensor::zeros({3, 4}, DType::f32), b = Tensor::zeros({5}, DType::f32);
    tt::check_throws([&] { ops::add(a, b); }, {"add", "[3, 4]", "[5]", "broadcast"}, "add shape mismatch");
    tt::check_throws([&] { ops::where(a, a, a); }, {"where", "bool", "f32"}, "where non-bool condition");
    Tensor bb = Tensor::zeros({3}, DType::i1);
    tt::check_throws([&] { ops::neg(bb); }, {"neg", "bool"}, "neg bool");
    tt::check_throws([&] { ops::sub(bb, bb); }, {"sub", "bool"}, "sub bools");
    tt::check_throws([&] { ops::add(a, Tensor()); }, {"add", "undefined"}, "undefined tensor");
    Tensor dst = Tensor::zeros({2, 3}, DType::f32);
    tt::check_throws([&] { ops::copy_(dst, a); }, {"copy_", "[3, 4]", "[2, 3]"}, "copy_ shape mismatch");
    Tensor overl = Tensor::zeros({3}, DType::f32).as_strided({3, 3}, {0, 1}, 0);
    tt::check_throws([&] { ops::copy_(overl, a.as_strided({3, 3}, {4, 1}, 0)); }, {"copy_", "overlapping"},
                     "copy_ into an expanded destination");
    tt::check_throws([&] { ops::relu_backward(a, b); }, {"relu_backward", "[3, 4]", "[5]"}, "backward shape mismatch");
    Tensor u64 = Tensor::zeros({2}, DType::u64), i8 = Tensor::zeros({2}, DType::i8);
    tt::check_throws([&] { ops::add(u64, i8); }, {"add", "u64", "i8"}, "u64 + i8");
  });
}

BOOST_AUTO_TEST_SUITE_END()
