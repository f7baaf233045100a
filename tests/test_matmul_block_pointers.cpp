// ops::matmul's block-pointer forms (ops::matmul_block_pointers, BLOCK_POINTERS): which form the op
// launches for each operand layout, and the values of every form through the kernel itself on
// every backend - each operand described as stored ([M, K] or [K, M] rows for A, [K, N] or [N, K]
// rows for B) and its tile transposed where needed - against a float64 host reference, with M, N
// and K not multiples of the blocks (the block pointers' zero padding) and a poisoned C. What the
// CUDA backend makes of them (TMA for each form) is test_layout_tma.cpp.
#include "test_support.h"
#include "matmul_reference.h"

#include "ops/matmul_add.h"
#include "ops/matmul_block_pointers.h"
#include "ops/ops.h"
#include "runtime/views.h"

namespace tt = tritium::test;
namespace ops = tritium::ops;
namespace BP = tritium::ops::BlockPointers;
using tritium::bf16_t;
using tritium::DType;
using tritium::Meta;
using tritium::Tensor;
using namespace tritium::runtime;
using namespace tritium::test::matmul_reference;

BOOST_AUTO_TEST_SUITE(test_matmul_block_pointers)

// A Linear layer's products (x [M, K], W [N, K], g [M, N] row-major) on Hopper: 16-bit operands
// take block pointers in every layout, tf32 ones only K-major (the forward); nothing before sm_90,
// for batches, exact fp32, or rows TMA cannot take (a row stride that is not 16 bytes, no
// contiguous dim).
BOOST_AUTO_TEST_CASE(forms_by_layout) {
  const int64_t M = 16384, K = 384, N = 1536;
  auto form = [](DType d, bool tf32, int64_t sam, int64_t sak, int64_t sbk, int64_t sbn, int cc = 90,
                 int64_t nbatch = 1) { return ops::matmul_block_pointers(d, tf32, sam, sak, sbk, sbn, cc, nbatch); };
  for (DType d : {DType::bf16, DType::f16}) {
    BOOST_TEST(form(d, false, K, 1, 1, K) == BP::a_k_b_k);    // fwd: x @ W^T
    BOOST_TEST(form(d, false, N, 1, K, 1) == BP::a_k_b_mn);   // dgrad: g @ W
    BOOST_TEST(form(d, false, 1, N, K, 1) == BP::a_mn_b_mn);  // wgrad: g^T @ x
    BOOST_TEST(form(d, false, 1, M, 1, K) == BP::a_mn_b_k);   // x^T @ W^T
    BOOST_TEST(form(d, false, K, 1, 1, K, 80) == BP::none);
    BOOST_TEST(form(d, false, K, 1, 1, K, 90, 2) == BP::none);
    BOOST_TEST(form(d, false, 100, 1, 1, K) == BP::none);  // 200-byte rows
    BOOST_TEST(form(d, false, 2, 2 * M, 1, K) == BP::none);  // no contiguous dim
  }
  BOOST_TEST(form(DType::f32, true, K, 1, 1, K) == BP::a_k_b_k);
  BOOST_TEST(form(DType::f32, true, N, 1, K, 1) == BP::none);  // N-major B: 4-byte cp.async transposes it
  BOOST_TEST(form(DType::f32, true, 1, N, K, 1) == BP::none);
  BOOST_TEST(form(DType::f32, false, K, 1, 1, K) == BP::none);  // exact fp32: no tensor cores
  BOOST_TEST(form(DType::f64, false, K, 1, 1, K) == BP::none);
}

namespace {

// C = A @ B through the kernel in block-pointer form `bp`, A and B made from matrices stored
// row-major in the layout the form names.
template <class T> void check_form(int bp, int64_t M, int64_t N, int64_t K, int bm, int bn, int bk, uint32_t seed) {
  const bool a_mn = bp == BP::a_mn_b_mn || bp == BP::a_mn_b_k, b_k = bp == BP::a_k_b_k || bp == BP::a_mn_b_k;
  Tensor a_stored = random_tensor<T>(a_mn ? Shape{K, M} : Shape{M, K}, seed);
  Tensor b_stored = random_tensor<T>(b_k ? Shape{N, K} : Shape{K, N}, seed + 1);
  Tensor a = a_mn ? t_of(a_stored) : a_stored, b = b_k ? t_of(b_stored) : b_stored;
  auto [shape, ref, mag] = reference<T>(a, b);
  Tensor c = Tensor::empty({M, N}, a.dtype(), a.device());  // poisoned by the test binary
  const tritium::Grid grid(tritium::cdiv(M, bm) * tritium::cdiv(N, bn), 1);
  ops::matmul_kernel(a.dtype())[grid](
      a, b, c, static_cast<int32_t>(M), static_cast<int32_t>(N), static_cast<int32_t>(K), a.stride(0), a.stride(1),
      b.stride(0), b.stride(1), N, int64_t{1}, int64_t{1}, int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0},
      int64_t{0},
      Meta{{"BLOCK_M", bm}, {"BLOCK_N", bn}, {"BLOCK_K", bk}, {"GROUP_M", 8}, {"TF32", 0}, {"CARRY_POINTERS", false},
           {"BLOCK_POINTERS", bp}},
      tritium::Options{.device = a.device()});
  auto out = c.to_vector<T>();
  tt::check_dot<T>(tt::host_vector<T>(out.begin(), out.end()), ref, mag, tol<T>(),
                   "form " + std::to_string(bp) + " " + std::to_string(M) + "x" + std::to_string(N) + "x" +
                       std::to_string(K));
}

}  // namespace

// Every form computes A @ B: ragged M, N, K (the block pointers' zero padding at every edge), in
// f32 (exact) and bf16.
BOOST_AUTO_TEST_CASE(every_form_computes_the_product) {
  tt::for_each_backend([&](const tt::Backend&) {
    for (int bp : {BP::a_k_b_mn, BP::a_k_b_k, BP::a_mn_b_mn, BP::a_mn_b_k}) {
      check_form<float>(bp, 37, 45, 70, 32, 32, 32, 11u + bp);
      check_form<bf16_t>(bp, 50, 33, 90, 32, 32, 32, 23u + bp);
    }
  });
}

// A Linear layer's three products through ops::matmul with tf32 allowed ("high"), on every backend:
// x [M, K] @ W^T, g @ W (on Hopper W is copied K-major first: small beside g) with a bias through
// the epilogue, g^T @ x (split along its long K where the device has idle workers). tf32's error on
// a GPU, exact fp32 on the CPU.
BOOST_AUTO_TEST_CASE(linear_products_with_tf32_allowed) {
  tt::for_each_backend([&](const tt::Backend& be) {
    struct Restore {
      ~Restore() { ops::set_float32_matmul_precision("highest"); }
    } restore;
    ops::set_float32_matmul_precision("high");
    const int64_t M = 1000, K = 132, N = 68;
    Tensor x = random_tensor<float>({M, K}, 201), w = random_tensor<float>({N, K}, 202);
    Tensor g = random_tensor<float>({M, N}, 203), bias = random_tensor<float>({K}, 204);
    const double tol = be.name == "cpu" ? 1e-5 : 1e-3;
    auto check = [&](const Tensor& a, const Tensor& b, const Tensor* add, const std::string& what) {
      auto [shape, ref, mag] = reference<float>(a, b);
      Tensor c = add ? ops::matmul_add(*add, a, b, 1.0, 1.0) : ops::matmul(a, b);
      BOOST_TEST(c.shape() == shape);
      if (add) {
        auto bv = add->to_vector<float>();
        for (size_t i = 0; i < ref.size(); ++i) {
          ref[i] += bv[i % bv.size()];
          mag[i] += std::abs(bv[i % bv.size()]);
        }
      }
      auto out = c.to_vector<float>();
      tt::check_dot<float>(tt::host_vector<float>(out.begin(), out.end()), ref, mag, tol, what);
    };
    check(x, t_of(w), nullptr, "fwd x @ W^T");
    check(g, w, nullptr, "dgrad g @ W");
    check(g, w, &bias, "dgrad g @ W + bias");
    check(t_of(g), x, nullptr, "wgrad g^T @ x");
    BOOST_TEST(w.is_contiguous());  // the copy is the op's own, the operand is left as it was
  });
}

BOOST_AUTO_TEST_SUITE_END()
