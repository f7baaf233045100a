// The matmul family by PyTorch's names (ops/matmul_family.h, nn/matmul_family.h): mm, bmm, mv,
// dot, vdot, the add* forms, inner, outer, tensordot, kron and linalg_multi_dot against the host
// float64 einsum (tests/einsum_reference.h), with odd sizes (1, 3, 17, 33), transposed and
// strided operands, zero-size dims, each float dtype, beta = 0 over NaN, gradients of the
// composed ops (the declared ones are gradchecked by test_op_registry from their samples), and
// an error naming the problem for each bad input.
#include "test_support.h"
#include "einsum_reference.h"
#include "gradcheck_support.h"
#include "ops_test_helpers.h"

#include <cmath>
#include <limits>
#include <optional>

#include "nn/functional.h"
#include "nn/autograd.h"
#include "ops/decl/op_decl.h"
#include "ops/reduce_plan.h"
#include "runtime/views.h"

namespace tt = tritium::test;
namespace ou = tritium::test::ops_util;
namespace T = tritium;
using tritium::bf16_t;
using tritium::DType;
using tritium::f16_t;
using tritium::Tensor;
using Shape = std::vector<int64_t>;

namespace {

template <class E> Tensor rnd(const Shape& s, uint32_t seed) { return ou::random_tensor<E>(s, seed); }

// [rows, cols] stored transposed (a t() view of a [cols, rows] tensor).
template <class E> Tensor transposed(const Shape& s, uint32_t seed) {
  return tritium::runtime::t_of(rnd<E>({s[1], s[0]}, seed));
}

// Every other column of a [rows, 2 cols] tensor: a stride-2 view.
template <class E> Tensor every_other(const Shape& s, uint32_t seed) {
  return tritium::runtime::slice_of(rnd<E>({s[0], 2 * s[1]}, seed), 1, 0, 2 * s[1], 2);
}

tt::HostTensor host(const Tensor& t) { return {t.shape(), ou::values(t)}; }

template <class E> double tol() {
  if constexpr (std::is_same_v<E, double>) return 1e-12;
  else if constexpr (std::is_same_v<E, float>) return 2e-6;
  else if constexpr (std::is_same_v<E, f16_t>) return 2e-3;
  else return 1.6e-2;
}

// out against the reference: the shape, and each element within tol * sum |products| (the dot's
// rounding scale; a product of exact zeros must be exactly zero; NaN fails).
void check(const Tensor& out, const tt::EinsumReference& ref, double tol, const std::string& what) {
  BOOST_TEST_CONTEXT(what) {
    BOOST_TEST_REQUIRE((out.shape() == ref.shape), "rank " << out.dim() << ", expected " << ref.shape.size());
    auto v = ou::values(out);
    size_t bad = 0;
    for (size_t i = 0; i < v.size(); ++i)
      if (!(std::abs(v[i] - ref.values[i]) <= tol * ref.magnitudes[i] + 1e-300)) {
        if (bad++ < 3) BOOST_ERROR("element " << i << ": " << v[i] << " vs " << ref.values[i]);
      }
    BOOST_TEST(bad == 0u);
  }
}

// beta * self + alpha * product on the host (self broadcast to the product's shape).
tt::EinsumReference add_scaled(const tt::EinsumReference& p, const Tensor& self, double beta, double alpha) {
  tt::EinsumReference r = p;
  auto s = ou::values(self);
  for (size_t i = 0; i < r.values.size(); ++i) {
    double si = s[ou::broadcast_index(ou::unravel(static_cast<int64_t>(i), p.shape), self.shape())];
    r.values[i] = (beta == 0 ? 0 : beta * si) + alpha * p.values[i];
    r.magnitudes[i] = (beta == 0 ? 0 : std::abs(beta * si)) + std::abs(alpha) * p.magnitudes[i];
  }
  return r;
}

template <class E> void products_of_one_dtype() {
  const double t = tol<E>();
  const std::string dt = tritium::dtype_name(tritium::dtype_of<E>());
  struct Mkn {
    int64_t m, k, n;
  };
  for (Mkn s : {Mkn{1, 1, 1}, Mkn{3, 17, 33}, Mkn{33, 3, 17}, Mkn{17, 33, 1}}) {
    const std::string sz = dt + " " + std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n);
    for (int layout = 0; layout < 3; ++layout) {
      Tensor a = layout == 0 ? rnd<E>({s.m, s.k}, 1) : layout == 1 ? transposed<E>({s.m, s.k}, 2) : every_other<E>({s.m, s.k}, 3);
      Tensor b = layout == 2 ? transposed<E>({s.k, s.n}, 4) : rnd<E>({s.k, s.n}, 5);
      const std::string what = sz + " layout " + std::to_string(layout);
      check(T::mm(a, b), tt::host_einsum("ij,jk->ik", {host(a), host(b)}), t, "mm " + what);
      Tensor v = rnd<E>({s.k}, 6);
      check(T::mv(a, v), tt::host_einsum("ij,j->i", {host(a), host(v)}), t, "mv " + what);
      Tensor self = rnd<E>({s.n}, 7);  // broadcast over the rows
      check(T::addmm(self, a, b, 0.5, -2), add_scaled(tt::host_einsum("ij,jk->ik", {host(a), host(b)}), self, 0.5, -2), t,
            "addmm " + what);
      Tensor sv = rnd<E>({s.m}, 8);
      check(T::addmv(sv, a, v, 2, 0.25), add_scaled(tt::host_einsum("ij,j->i", {host(a), host(v)}), sv, 2, 0.25), t,
            "addmv " + what);
    }
    // Batched: batch2 transposed in its last two dims; baddbmm broadcasts self over the batch.
    Tensor a3 = rnd<E>({3, s.m, s.k}, 9);
    Tensor b3 = tritium::runtime::transpose_of(rnd<E>({3, s.n, s.k}, 10), 1, 2);
    auto bref = tt::host_einsum("bij,bjk->bik", {host(a3), host(b3)});
    check(T::bmm(a3, b3), bref, t, "bmm " + sz);
    Tensor self = rnd<E>({s.m, 1}, 11);
    check(T::baddbmm(self, a3, b3, 1, 1), add_scaled(bref, self, 1, 1), t, "baddbmm " + sz);
    Tensor self2 = rnd<E>({s.m, s.n}, 12);
    check(T::addbmm(self2, a3, b3, 0.5, 1.5),
          add_scaled(tt::host_einsum("bij,bjk->ik", {host(a3), host(b3)}), self2, 0.5, 1.5), t, "addbmm " + sz);
    Tensor x = rnd<E>({s.k}, 13), y = tritium::runtime::slice_of(rnd<E>({2 * s.k}, 14), 0, 0, 2 * s.k, 2);
    auto dref = tt::host_einsum("i,i->", {host(x), host(y)});
    check(T::dot(x, y), dref, t, "dot " + sz);
    check(T::vdot(x, y), dref, t, "vdot " + sz);
    Tensor u = rnd<E>({s.m}, 15);
    Tensor r2 = rnd<E>({s.m, s.k}, 16);
    check(T::addr(r2, u, x, -1, 2), add_scaled(tt::host_einsum("i,j->ij", {host(u), host(x)}), r2, -1, 2), t,
          "addr " + sz);
    check(T::outer(u, x), tt::host_einsum("i,j->ij", {host(u), host(x)}), t, "outer " + sz);
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_matmul_family)

BOOST_AUTO_TEST_CASE(products_against_float64_for_each_dtype) {
  tt::for_each_backend([](const tt::Backend&) {
    products_of_one_dtype<double>();
    products_of_one_dtype<float>();
    products_of_one_dtype<f16_t>();
    products_of_one_dtype<bf16_t>();
  });
}

// Long dot products: the reduction's split (partials, then a second launch) on this device.
BOOST_AUTO_TEST_CASE(long_dot_products) {
  tt::for_each_backend([](const tt::Backend&) {
    for (int64_t k : {32767, 40001}) {
      Tensor x = rnd<float>({k}, 131), y = tritium::runtime::slice_of(rnd<float>({2 * k}, 132), 0, 1, 2 * k, 2);
      check(T::dot(x, y), tt::host_einsum("i,i->", {host(x), host(y)}), 2e-6, "f32 dot of " + std::to_string(k));
      Tensor h = rnd<f16_t>({k}, 133), g = rnd<f16_t>({k}, 134);
      check(T::vdot(h, g), tt::host_einsum("i,i->", {host(h), host(g)}), 2e-3, "f16 vdot of " + std::to_string(k));
    }
  });
}

// mv, addmv and dot run as reductions (ops/reduce.cpp's MUL and EPI): the plans of this device and
// of an H100 (forced: its 528-program fill splits K into chunks, so the epilogue runs in the
// second launch), rows (row-major matrices) and columns (transposed ones), a strided vector,
// self broadcast from [1], f32 and bf16 against float64.
BOOST_AUTO_TEST_CASE(matrix_vector_products_as_reductions) {
  namespace od = tritium::ops::detail;
  tt::for_each_backend([](const tt::Backend&) {
    for (bool h100 : {false, true}) {
      std::optional<od::ScopedReduceDevice> scope;
      if (h100) scope.emplace(od::ReduceDevice::cuda(132));
      const std::string dev = h100 ? " (H100 plan)" : "";
      struct Case {
        int64_t m, k;
        bool trans;
      };
      for (Case c : {Case{5, 70001}, Case{1, 4099}, Case{3001, 37}, Case{40, 20011}, Case{2, 3}}) {
        const std::string sz = std::to_string(c.m) + "x" + std::to_string(c.k) + (c.trans ? " transposed" : "") + dev;
        Tensor a = c.trans ? transposed<float>({c.m, c.k}, 141) : rnd<float>({c.m, c.k}, 142);
        Tensor v = tritium::runtime::slice_of(rnd<float>({2 * c.k}, 143), 0, 1, 2 * c.k, 2);
        auto ref = tt::host_einsum("ij,j->i", {host(a), host(v)});
        check(T::mv(a, v), ref, 2e-6, "mv f32 " + sz);
        Tensor self1 = rnd<float>({1}, 144);
        check(T::addmv(self1, a, v, 0.5, -1.5), add_scaled(ref, self1, 0.5, -1.5), 2e-6, "addmv f32 " + sz);
        Tensor ab = tritium::ops::to_dtype(a, DType::bf16), vb = tritium::ops::to_dtype(v, DType::bf16), sb = rnd<bf16_t>({c.m}, 145);
        check(T::addmv(sb, ab, vb, 2, 0.25),
              add_scaled(tt::host_einsum("ij,j->i", {host(ab), host(vb)}), sb, 2, 0.25), 1.6e-2, "addmv bf16 " + sz);
      }
      for (int64_t k : {100003, 5}) {
        Tensor x = rnd<float>({k}, 146), y = rnd<float>({k}, 147);
        check(T::dot(x, y), tt::host_einsum("i,i->", {host(x), host(y)}), 2e-6, "dot " + std::to_string(k) + dev);
      }
    }
    // A 0-dim self broadcasts to every output.
    Tensor a0 = rnd<float>({6, 5}, 150), v0 = rnd<float>({5}, 151), s0 = rnd<float>({}, 152);
    check(T::addmv(s0, a0, v0, -1, 3), add_scaled(tt::host_einsum("ij,j->i", {host(a0), host(v0)}), s0, -1, 3), 2e-6,
          "addmv of a 0-dim self");
    // The transposed case reads columns; a matrix with both strides > 1 reads rows at stride 2.
    Tensor a = every_other<float>({7, 9}, 148), v = rnd<float>({9}, 149);
    check(T::mv(a, v), tt::host_einsum("ij,j->i", {host(a), host(v)}), 2e-6, "mv of a stride-2 matrix");
  });
}

// The declarations: PyTorch's names, autograd node names and autocast class.
BOOST_AUTO_TEST_CASE(declared_in_the_registry) {
  const auto& r = tritium::ops::op_registry();
  for (const char* n : {"mm", "bmm", "mv", "dot", "vdot", "addmm", "addmv", "addr", "baddbmm", "addbmm"}) {
    const tritium::ops::OpDecl* op = r.find(n);
    BOOST_TEST_REQUIRE(op != nullptr, n << " is not declared");
    BOOST_TEST(op->torch_name == std::string("torch.") + n);
    const bool lower = std::string(n) != "dot" && std::string(n) != "vdot";  // dot, vdot: PyTorch's promote list
    BOOST_TEST((op->autocast == (lower ? tritium::ops::AutocastClass::lower_precision_fp : tritium::ops::AutocastClass::promote)));
    BOOST_TEST(op->twice_differentiable);
  }
  BOOST_TEST(r.at("addmm").node_name() == "AddmmBackward");
  BOOST_TEST(r.at("baddbmm").derivatives.at(0).text == "maybe_multiply(grad, beta)");
  tt::for_each_backend([](const tt::Backend&) {
    Tensor a = tt::input({2, 3}, 135), b = tt::input({3, 2}, 136);
    BOOST_TEST(T::mm(a, b).autograd()->grad_fn->name() == "MmBackward");
    BOOST_TEST(T::einsum("ij,jk", {a, b}).autograd()->grad_fn != nullptr);
  });
}

BOOST_AUTO_TEST_CASE(beta_zero_ignores_nan_in_the_input) {
  tt::for_each_backend([](const tt::Backend&) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    Tensor a = rnd<double>({3, 4}, 21), b = rnd<double>({4, 5}, 22);
    Tensor self = T::full({3, 5}, nan, DType::f64);
    check(T::addmm(self, a, b, 0, 1), tt::host_einsum("ij,jk->ik", {host(a), host(b)}), 1e-12, "addmm beta 0");
    Tensor v = rnd<double>({4}, 23), sv = T::full({3}, nan, DType::f64);
    check(T::addmv(sv, a, v, 0, 2), add_scaled(tt::host_einsum("ij,j->i", {host(a), host(v)}), sv, 0, 2), 1e-12,
          "addmv beta 0");
    Tensor a3 = rnd<double>({2, 3, 4}, 24), b3 = rnd<double>({2, 4, 5}, 25);
    check(T::baddbmm(T::full({5}, nan, DType::f64), a3, b3, 0, 1), tt::host_einsum("bij,bjk->bik", {host(a3), host(b3)}),
          1e-12, "baddbmm beta 0");
    // beta != 0 propagates it, as PyTorch.
    BOOST_TEST(std::isnan(ou::values(T::addmm(self, a, b, 1, 1))[0]));
  });
}

BOOST_AUTO_TEST_CASE(zero_size_dims) {
  tt::for_each_backend([](const tt::Backend&) {
    // K = 0: zeros (PyTorch's result); M or N = 0: empty.
    Tensor a = rnd<float>({3, 0}, 31), b = rnd<float>({0, 4}, 32);
    check(T::mm(a, b), tt::host_einsum("ij,jk->ik", {host(a), host(b)}), 0, "mm K 0");
    check(T::dot(rnd<float>({0}, 33), rnd<float>({0}, 34)), {{}, {0.0}, {0.0}}, 0, "dot of empty vectors");
    Tensor self = rnd<float>({3, 4}, 35);
    check(T::addmm(self, a, b, 2, 1), add_scaled(tt::host_einsum("ij,jk->ik", {host(a), host(b)}), self, 2, 1), 1e-6,
          "addmm K 0");
    BOOST_TEST((T::mm(rnd<float>({0, 3}, 36), rnd<float>({3, 4}, 37)).shape() == Shape{0, 4}));
    Tensor a3 = rnd<float>({2, 3, 0}, 38), b3 = rnd<float>({2, 0, 5}, 39);
    check(T::bmm(a3, b3), tt::host_einsum("bij,bjk->bik", {host(a3), host(b3)}), 0, "bmm K 0");
    BOOST_TEST((T::bmm(rnd<float>({0, 3, 2}, 40), rnd<float>({0, 2, 5}, 41)).shape() == Shape{0, 3, 5}));
    Tensor x3 = rnd<float>({3, 2, 4}, 42), y3 = rnd<float>({3, 4, 0}, 43);
    check(T::addbmm(rnd<float>({2, 1}, 44), x3, y3), {{2, 0}, {}, {}}, 0, "addbmm N 0");
  });
}

BOOST_AUTO_TEST_CASE(inner_tensordot_kron_multi_dot) {
  tt::for_each_backend([](const tt::Backend&) {
    const double t = 1e-12;
    Tensor a = rnd<double>({3, 17}, 51), b = rnd<double>({2, 4, 17}, 52);
    check(T::inner(a, b), tt::host_einsum("ik,abk->iab", {host(a), host(b)}), t, "inner");
    Tensor s = T::full({}, 2.5, DType::f64);
    check(T::inner(s, a), tt::host_einsum(",ij->ij", {host(s), host(a)}), t, "inner with a 0-dim operand");
    Tensor x = rnd<double>({3, 4, 5}, 53), y = rnd<double>({4, 5, 2}, 54);
    check(T::tensordot(x, y, 2), tt::host_einsum("ijk,jkl->il", {host(x), host(y)}), t, "tensordot dims=2");
    check(T::tensordot(x, y, 0), tt::host_einsum("ijk,lmn->ijklmn", {host(x), host(y)}), t, "tensordot dims=0");
    Tensor z = tritium::runtime::permute_of(rnd<double>({5, 2, 3}, 55), {2, 0, 1});  // [3, 5, 2], strided
    check(T::tensordot(x, z, {0, -1}, {0, 1}), tt::host_einsum("ijk,ikl->jl", {host(x), host(z)}), t,
          "tensordot dim lists, strided");
    Tensor one = rnd<double>({3, 1}, 56);  // a contracted size 1 broadcasts (PyTorch's tensordot)
    check(T::tensordot(one, rnd<double>({3, 2}, 57), {1}, {0}).reshape({3, 2}),
          tt::host_einsum("ij,kl->il", {host(one), host(rnd<double>({3, 2}, 57))}), t, "tensordot broadcast size 1");
    Tensor k1 = rnd<double>({2, 3}, 58), k2 = rnd<double>({3, 1, 2}, 59);
    auto kref = tt::host_einsum("bj,ikl->ibkjl", {host(k1), host(k2)});  // [3, 2, 1, 3, 2] -> [3, 2 * 1, 3 * 2]
    kref.shape = {3, 2, 6};
    check(T::kron(k1, k2), kref, t, "kron");
    Tensor m0 = rnd<double>({17}, 60), m1 = rnd<double>({17, 3}, 61), m2 = transposed<double>({3, 33}, 62),
           m3 = rnd<double>({33, 1}, 63);
    check(T::linalg_multi_dot({m0, m1, m2, m3}),
          tt::host_einsum("a,ab,bc,cd->d", {host(m0), host(m1), host(m2), host(m3)}), t, "multi_dot, 1-D first");
    check(T::linalg_multi_dot({m1.t(), m0}), tt::host_einsum("ab,b->a", {host(m1.t()), host(m0)}), t,
          "multi_dot of two, 1-D last");
    check(T::linalg_multi_dot({m0, m1, m2, m3.reshape({33})}),
          tt::host_einsum("a,ab,bc,c->", {host(m0), host(m1), host(m2), host(m3.reshape({33}))}), t,
          "multi_dot, 1-D both ends");
  });
}

BOOST_AUTO_TEST_CASE(gradients_of_the_composed_ops) {
  tt::for_each_backend([](const tt::Backend&) {
    tt::gradcheck("inner", [](const tt::GradInputs& in) { return T::inner(in[0], in[1]); },
                  {tt::input({3, 4}, 71), tt::input({2, 4}, 72)});
    tt::gradcheck("outer", [](const tt::GradInputs& in) { return T::outer(in[0], in[1]); },
                  {tt::input({3}, 73), tt::input({4}, 74)});
    tt::gradcheck("tensordot", [](const tt::GradInputs& in) { return T::tensordot(in[0], in[1], {1, 0}, {0, 2}); },
                  {tt::input({2, 3, 2}, 75), tt::input({3, 2, 2}, 76)});
    tt::gradcheck("kron", [](const tt::GradInputs& in) { return T::kron(in[0], in[1]); },
                  {tt::input({2, 3}, 77), tt::strided_input({2, 2}, 78)});
    tt::gradcheck("multi_dot", [](const tt::GradInputs& in) { return T::linalg_multi_dot({in[0], in[1], in[2]}); },
                  {tt::input({3}, 79), tt::strided_input({3, 4}, 80), tt::input({4, 2}, 81)});
  });
}

BOOST_AUTO_TEST_CASE(bad_inputs_are_clear_errors) {
  tt::for_each_backend([](const tt::Backend&) {
    Tensor a = rnd<float>({2, 3}, 91), b = rnd<float>({4, 5}, 92), v3 = rnd<float>({3}, 93), v4 = rnd<float>({4}, 94);
    tt::check_throws([&] { T::mm(a, b); }, {"mm: mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"}, "mm shapes");
    tt::check_throws([&] { T::mm(a, v3); }, {"mm: mat2 must be a matrix (2-D), got a 1-D tensor of shape [3]"}, "mm rank");
    tt::check_throws([&] { T::mm(a, rnd<double>({3, 2}, 95)); },
                     {"mm: expected self and mat2 to have the same dtype, but got: f32 != f64"}, "mm dtypes");
    tt::check_throws([&] { T::mm(rnd<int32_t>({2, 3}, 96), rnd<int32_t>({3, 2}, 97)); },
                     {"mm: expects floating-point tensors", "i32"}, "mm of integers");
    tt::check_throws([&] { T::mm(Tensor(), a); }, {"mm: argument 'self' is"}, "mm undefined");
    tt::check_throws([&] { T::bmm(rnd<float>({2, 3, 4}, 98), rnd<float>({3, 4, 5}, 99)); },
                     {"bmm: expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [3, 4]",
                      "[2, 3, 4]", "[3, 4, 5]"},
                     "bmm batch mismatch");
    tt::check_throws([&] { T::bmm(a, rnd<float>({2, 3, 4}, 100)); }, {"bmm: batch1 must be a 3-D tensor"}, "bmm rank");
    tt::check_throws([&] { T::mv(a, v4); }, {"mv: size mismatch, got input (2), mat (2x3), vec (4)"}, "mv shapes");
    tt::check_throws([&] { T::dot(v3, v4); }, {"dot: inconsistent tensor size, expected tensor [3] and src [4]"},
                     "dot sizes");
    tt::check_throws([&] { T::dot(a, v3); }, {"dot: self must be a vector (1-D), got a 2-D tensor"}, "dot rank");
    tt::check_throws([&] { T::vdot(v3, rnd<double>({3}, 101)); }, {"vdot: expected self and other to have the same dtype"},
                     "vdot dtypes");
    tt::check_throws([&] { T::addmm(rnd<float>({3, 5}, 102), a, rnd<float>({3, 5}, 103)); },
                     {"addmm: the input of shape [3, 5] cannot be broadcast to the product's shape [2, 5]"},
                     "addmm input shape");
    tt::check_throws([&] { T::addmm(rnd<double>({2, 5}, 104), a, rnd<float>({3, 5}, 105)); },
                     {"addmm: expected self and mat1 to have the same dtype, but got: f64 != f32"}, "addmm dtypes");
    tt::check_throws([&] { T::addmv(rnd<float>({4}, 106), a, v3); },
                     {"addmv: the input of shape [4] cannot be broadcast to the product's shape [2]"}, "addmv input");
    tt::check_throws([&] { T::addr(rnd<float>({3, 3}, 107), rnd<float>({2}, 108), v3); },
                     {"addr: the input of shape [3, 3] cannot be broadcast to the product's shape [2, 3]"}, "addr input");
    tt::check_throws([&] { T::baddbmm(rnd<float>({5}, 109), rnd<float>({2, 3, 4}, 110), rnd<float>({2, 5, 5}, 111)); },
                     {"baddbmm: expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [2, 5]"},
                     "baddbmm shapes");
    tt::check_throws([&] { T::addbmm(rnd<float>({4, 5}, 112), rnd<float>({2, 3, 4}, 113), rnd<float>({2, 4, 5}, 114)); },
                     {"addbmm: the input of shape [4, 5] cannot be broadcast to the product's shape [3, 5]"},
                     "addbmm input");
    tt::check_throws([&] { T::outer(v3, a); }, {"outer: Expected 1-D argument vec2, but got 2-D"}, "outer rank");
    tt::check_throws([&] { T::inner(a, rnd<float>({4, 4}, 115)); },
                     {"inner() the last dimension must match on both input tensors but got shapes [2, 3] and [4, 4]"},
                     "inner shapes");
    tt::check_throws([&] { T::tensordot(a, b, 1); },
                     {"tensordot: contracted dimensions need to match, but first has size 3 in dim 1 and second has size "
                      "4 in dim 0 (shapes [2, 3] and [4, 5])"},
                     "tensordot sizes");
    tt::check_throws([&] { T::tensordot(a, b, -1); }, {"tensordot expects dims >= 0, but got dims=-1"}, "tensordot dims<0");
    tt::check_throws([&] { T::tensordot(a, b, 3); }, {"tensordot expects dims < ndim_a or ndim_b, but got dims=3"},
                     "tensordot dims too many");
    tt::check_throws([&] { T::tensordot(a, b, {1}, {0, 1}); }, {"both dimension lists should have same length"},
                     "tensordot lists");
    tt::check_throws([&] { T::tensordot(a, rnd<float>({3, 3}, 116), {1, 1}, {0, 1}); },
                     {"dim 1 appears multiple times in the list of dims"}, "tensordot repeated dim");
    tt::check_throws([&] { T::tensordot(a, rnd<float>({3, 3}, 116), {2}, {0}); }, {"tensordot", "out of range"},
                     "tensordot dim out of range");
    tt::check_throws([&] { T::linalg_multi_dot({a}); }, {"multi_dot(): expected at least 2 tensors but got 1"},
                     "multi_dot one");
    tt::check_throws([&] { T::linalg_multi_dot({a, b}); },
                     {"multi_dot(): tensors 0 and 1 with shapes [2, 3] and [4, 5] cannot be multiplied"}, "multi_dot shapes");
    tt::check_throws([&] { T::linalg_multi_dot({a, rnd<float>({3, 5, 1}, 117)}); },
                     {"multi_dot(): the last tensor must be 1D or 2D but got 3D"}, "multi_dot rank");
    tt::check_throws([&] { T::linalg_multi_dot({v3, rnd<float>({3}, 118), v3}); },
                     {"multi_dot(): tensor 1 must be 2D but got 1D"}, "multi_dot middle rank");
    tt::check_throws([&] { T::linalg_multi_dot({a, rnd<double>({3, 5}, 119)}); },
                     {"multi_dot(): all tensors must have be the same dtype but tensor 0 is f32 and tensor 1 f64"},
                     "multi_dot dtypes");
  });
}

// Operands on two backends: an error naming both devices (where a GPU is present).
BOOST_AUTO_TEST_CASE(operands_on_two_devices) {
  if (!tritium::runtime::device_available(tritium::Device::cuda()) ||
      !tritium::runtime::device_available(tritium::Device::cpu())) {
    BOOST_TEST_MESSAGE("skipped: needs both the cpu and the cuda backend");
    return;
  }
  Tensor a = rnd<float>({2, 3}, 121), b = rnd<float>({3, 2}, 122).to(tritium::Device::cuda());
  tt::check_throws([&] { T::mm(a, b); }, {"mm: expected all tensors to be on the same device", "cpu", "cuda"}, "mm");
  tt::check_throws([&] { T::addmm(rnd<float>({2, 2}, 123), a, b); }, {"addmm", "same device"}, "addmm");
  tt::check_throws([&] { T::linalg_multi_dot({a, b}); }, {"multi_dot(): all tensors must be on the same device"},
                   "multi_dot");
}

BOOST_AUTO_TEST_SUITE_END()
