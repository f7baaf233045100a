// None for optional pointer arguments (Triton's `bias_ptr=None` with `if bias_ptr is not None:`):
// nullptr, a null pointer or an undefined Tensor make the parameter None, part of the
// specialisation key; the body tests it with is_none() while tracing; any use of it is a trace
// error at the user's line. Also ptr.element_ty(), Triton's `ptr.dtype.element_ty`.
#include "test_support.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tl = tritium::tl;
namespace tt = tritium::test;
using tritium::f16_t;

namespace {

constexpr int kN = 300, kBlock = 128;

template <class T> T* fake(uint64_t i) { return reinterpret_cast<T*>(uint64_t{0x7f0000000000} + i * 0x100000); }

// out = x * 2 (+ bias when given); the output is in the element type of `out` (element_ty).
tritium::Kernel bias_kernel() {
  return tritium::kernel(
      "optional_bias", [](tl::ptr<float> x, tl::ptr<float> bias, tl::ptr<tl::any> out, tl::i32 n, int B) {
        auto offs = tl::program_id(0) * B + tl::arange(0, B);
        auto m = offs < n;
        auto v = tl::load(x + offs, m) * 2.0f;
        if (!bias.is_none()) v += tl::load(bias + offs, m);
        tl::store(out + offs, v.to(out.element_ty()), m);
      },
      {"x", "bias", "out", "n", "B"});
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_optional_pointers)

BOOST_AUTO_TEST_CASE(none_pointers_select_a_specialisation) {
  auto x = tt::random_vector<float>(kN, 1), bias = tt::random_vector<float>(kN, 2);
  tt::for_each_backend([&](const tt::Backend& be) {
    auto k = bias_kernel();
    auto dx = be.upload<float>(x), dbias = be.upload<float>(bias);
    const int grid = tritium::cdiv(kN, kBlock);
    auto check = [&](const tt::host_vector<float>& out, bool with_bias, const char* what) {
      int wrong = 0;
      for (int i = 0; i < kN; ++i) wrong += out[i] != x[i] * 2.0f + (with_bias ? bias[i] : 0.0f);
      BOOST_TEST(wrong == 0, what);
    };
    auto d1 = be.alloc_poisoned<float>(kN);
    k[{grid}](dx.ptr(), nullptr, d1.ptr(), kN, kBlock, be.options());
    check(d1.download(), false, "nullptr");
    auto d2 = be.alloc_poisoned<float>(kN);
    k[{grid}](dx.ptr(), dbias.ptr(), d2.ptr(), kN, kBlock, be.options());
    check(d2.download(), true, "a bias");
    auto d4 = be.alloc_poisoned<float>(kN);
    k[{grid}](dx.ptr(), tritium::Tensor(), d4.ptr(), kN, kBlock, be.options());
    check(d4.download(), false, "an undefined Tensor");
    BOOST_TEST(k.num_specializations() == 2u);  // None and not None
  });
}

BOOST_AUTO_TEST_CASE(element_ty_is_the_pointee) {
  auto x = tt::random_vector<float>(kN, 3);
  tt::for_each_backend([&](const tt::Backend& be) {
    auto k = bias_kernel();
    auto dx = be.upload<float>(x);
    auto d = be.alloc_poisoned<f16_t>(kN);
    k[{tritium::cdiv(kN, kBlock)}](dx.ptr(), nullptr, d.ptr(), kN, kBlock, be.options());
    auto out = d.download();
    int wrong = 0;
    for (int i = 0; i < kN; ++i) wrong += out[i].bits != tt::to_f16(x[i] * 2.0f).bits;
    BOOST_TEST(wrong == 0);
  });
}

BOOST_AUTO_TEST_CASE(a_null_typed_pointer_is_not_none) {
  // Only nullptr and an undefined Tensor are None: a typed pointer is traced as a pointer.
  auto k = bias_kernel();
  std::string ir = k.ir(static_cast<float*>(nullptr), static_cast<float*>(nullptr), static_cast<float*>(nullptr), kN, kBlock);
  BOOST_TEST(std::count(ir.begin(), ir.end(), '\n') > 0);
  size_t loads = 0;
  for (size_t at = ir.find("load"); at != std::string::npos; at = ir.find("load", at + 1)) ++loads;
  BOOST_TEST(loads == 2u);  // x and bias
}

BOOST_AUTO_TEST_CASE(using_a_none_pointer_is_a_trace_error) {
  unsigned line = 0;
  auto k = tritium::kernel(
      "none_used", [&](tl::ptr<float> x, tl::ptr<float> bias, tl::ptr<float> out) {
        auto offs = tl::arange(0, 16);
        line = __LINE__; auto b = tl::load(bias + offs);
        tl::store(out + offs, tl::load(x + offs) + b);
      },
      {"x", "bias", "out"});
  tt::check_throws_at([&] { (void)k.ir(fake<float>(0), nullptr, fake<float>(1)); }, __FILE__, line,
                      {"bias", "None", "is_none()"}, "a None pointer in an op");
  auto elem = tritium::kernel(
      "none_element_ty", [&](tl::ptr<float> bias, tl::ptr<float> out) {
        line = __LINE__; tl::store(out, tl::zeros({16}, bias.element_ty()).to(tl::float32));
      },
      {"bias", "out"});
  tt::check_throws_at([&] { (void)elem.ir(nullptr, fake<float>(1)); }, __FILE__, line, {"bias", "None", "element type"},
                      "element_ty of None");
  auto not_ptr = tritium::kernel("element_ty_of_a_number", [&](tl::ptr<float> out, tl::i32 n) {
    line = __LINE__; tl::store(out, tl::zeros({16}, n.element_ty()).to(tl::float32));
  });
  tt::check_throws_at([&] { (void)not_ptr.ir(fake<float>(1), 3); }, __FILE__, line, {"element_ty", "i32", "not a pointer"},
                      "element_ty of a number");
  // A None argument is a pointer argument only: a scalar parameter refuses nullptr.
  auto scalar = tritium::kernel("none_for_a_scalar", [](tl::ptr<float> out, tl::i32 n) { tl::store(out, n.to(tl::float32)); });
  tt::check_throws([&] { (void)scalar.ir(fake<float>(0), nullptr); }, {"none_for_a_scalar", "i32", "pointer"},
                   "nullptr for a scalar");
}

BOOST_AUTO_TEST_SUITE_END()
