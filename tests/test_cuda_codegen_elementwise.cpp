// The CUDA code of the element-wise breadth ops (issue 29 item 3) without a GPU: for each family
// (math, activations, bitwise) and compute dtype, one kernel applies every op of the family
// (detail::apply_family, the body the elementwise kernels run) and sums the results; it is traced,
// turned into CUDA C++ and compiled by NVRTC for sm_90a and sm_80. Ops a dtype does not take
// (sin of an integer) fail at trace time and are skipped. Skips when libnvrtc cannot be opened;
// running the ops on a GPU is the job of test_ops_unary_math / activations / bitwise there.
#include <boost/test/unit_test.hpp>
#include <tritium/tritium.h>

#include <tuple>

#include "cuda_codegen_check.h"
#include "ops/elementwise_kernels.h"
#include "test_support.h"

namespace tl = tritium::tl;
namespace cuda = tritium::jit::cuda;
namespace detail = tritium::ops::detail;
using tritium::DType;

BOOST_AUTO_TEST_SUITE(test_cuda_codegen_elementwise)

namespace {

template <class T> T* addr(uint64_t i) { return tritium::test::fake_address<T>(i); }

// One kernel: out = sum over the family's ops of op(x, y, z, e) converted to the compute type.
tritium::Kernel& family_kernel() {
  static tritium::Kernel k = tritium::kernel(
      "ew_family_probe",
      [](tl::ptr<tl::any> out, tl::ptr<tl::any> a, tl::ptr<tl::any> b, tl::ptr<tl::any> c, tl::f64 e0, tl::f64 e1,
         tl::f64 e2, tl::i32 n, int FIRST, int COUNT, int CDT, int BLOCK) {
        const DType cdt = static_cast<DType>(CDT);
        auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
        auto mask = offs < n;
        auto conv = [&](const tl::tensor& t) { return t.dtype() == cdt ? t : t.to(cdt); };
        detail::EwOperands v;
        v.x = conv(tl::load(a + offs, mask));
        v.y = conv(tl::load(b + offs, mask));
        v.z = conv(tl::load(c + offs, mask));
        v.e = {conv(e0), conv(e1), conv(e2)};
        std::optional<tl::tensor> sum;
        for (int k = 0; k < COUNT; ++k) {
          for (int param : {0, 1, 7}) {  // PARAM variants: round's decimals, lerp's weight, clamp's bounds
            tl::tensor r;
            try {
              r = detail::apply_family(static_cast<detail::Ew>(FIRST + k), cdt, [&] {
                detail::EwOperands w = v;
                w.param = param;
                return w;
              }());
            } catch (const tritium::Error&) {
              continue;  // not for this dtype
            }
            r = conv(r);
            sum = sum ? *sum + r : r;
          }
        }
        tl::store(out + offs, *sum, mask);
      });
  return k;
}

template <class T>
void compile_family(int first, int count, DType cdt) {
  tritium::test::compile_cuda(family_kernel(),
                              tritium::test::CudaCheck()
                                  .also_for("sm_80")
                                  .routed()
                                  .budget(cuda::kSharedMemoryBudget)
                                  .named(fmt::format("family {} ({})", first, tritium::dtype_name(cdt))),
                              addr<T>(0), addr<T>(1), addr<T>(2), addr<T>(3), 0.5, 1.5, -2.0, 1000, first, count,
                              static_cast<int>(cdt), 256);
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_op_compiles_with_nvrtc) {
  if (!tritium::test::nvrtc_or_skip()) return;
  const int math = static_cast<int>(detail::Ew::math_first), act = static_cast<int>(detail::Ew::activation_first),
            bit = static_cast<int>(detail::Ew::bitwise_first);
  compile_family<float>(math, detail::kUnaryMathOps, DType::f32);
  compile_family<double>(math, detail::kUnaryMathOps, DType::f64);
  compile_family<int32_t>(math, detail::kUnaryMathOps, DType::i32);
  compile_family<float>(act, detail::kActivationOps, DType::f32);
  compile_family<double>(act, detail::kActivationOps, DType::f64);
  compile_family<int32_t>(bit, detail::kBitwiseOps, DType::i32);
  compile_family<int8_t>(bit, detail::kBitwiseOps, DType::i8);
  compile_family<int64_t>(bit, detail::kBitwiseOps, DType::i64);
}

// The exp-based f32 functions (issue 29): exp rounds its n with the shifter, builds 2^n from
// bits and takes exp2 (ex2.approx.ftz) of the reduced argument, so their code has no floorf /
// ceilf (FRND, a conversion-pipe instruction at a quarter of the FP32 rate; five of them and two
// F2I per exp made sinh and the activations instruction-bound),
// and sinh, cosh, expm1 and mish no logf or tanhf.
BOOST_AUTO_TEST_CASE(exp_based_functions_stay_off_the_conversion_pipe) {
  if (!tritium::test::nvrtc_or_skip()) return;
  const int math = static_cast<int>(detail::Ew::math_first), act = static_cast<int>(detail::Ew::activation_first);
  // sinh, cosh (M: abs sign square floor ceil trunc round frac sin cos tan asin acos atan sinh cosh ...),
  // expm1, and the activations silu, elu, mish.
  for (auto [op, name, no_log] : {std::tuple{math + 14, "sinh", true}, std::tuple{math + 15, "cosh", true},
                                  std::tuple{math + 20, "expm1", true}, std::tuple{act + 1, "silu", true},
                                  std::tuple{act + 3, "elu", true}, std::tuple{act + 4, "mish", true}}) {
    cuda::KernelSource ks = tritium::test::compile_cuda(
        family_kernel(), tritium::test::CudaCheck().routed().budget(cuda::kSharedMemoryBudget).named(name), addr<float>(0),
        addr<float>(1), addr<float>(2), addr<float>(3), 1.0, 1.0, 1.0, 1000, op, 1, static_cast<int>(DType::f32), 256);
    const std::string body = tritium::test::kernel_body(ks);
    BOOST_TEST(body.find("tt_exp2(") != std::string::npos, name);  // exp(r) after the reduction
    for (const char* slow : {"floorf(", "ceilf(", "truncf(", "rintf("})
      BOOST_TEST(body.find(slow) == std::string::npos, name << " calls " << slow);
    if (no_log)
      for (const char* slow : {"logf(", "tanhf(", "log1pf("})
        BOOST_TEST(body.find(slow) == std::string::npos, name << " calls " << slow);
  }
}

// Stop 48 (issue 29): the f32 inverse-trigonometric and log1p-based functions in CUDA's schemes
// call no logf / log1pf and take no div.full (tt_fdiv): log1p by its exponent-field reduction,
// asin / acos through one rsqrt, atan, asinh, atanh through tl::fast_dividef's reciprocal; erfinv
// no logf; fmod and remainder compute the fast quotient (tt_rcp) and keep fmodf for the programs
// outside its range only.
BOOST_AUTO_TEST_CASE(math_in_cuda_schemes_has_no_logf_or_division) {
  if (!tritium::test::nvrtc_or_skip()) return;
  const int math = static_cast<int>(detail::Ew::math_first), act = static_cast<int>(detail::Ew::activation_first);
  // M: ... tan asin acos atan sinh cosh asinh acosh atanh log1p ... erfinv (28) ... logaddexp (43) fmod remainder
  struct Case {
    int op;
    const char* name;
    bool no_div, rcp, fmodf;
  };
  for (const Case& c : {Case{math + 11, "asin", true, false, false}, Case{math + 12, "acos", true, false, false},
                        Case{math + 13, "atan", true, true, false}, Case{math + 16, "asinh", true, true, false},
                        Case{math + 17, "acosh", true, false, false}, Case{math + 18, "atanh", true, true, false},
                        Case{math + 19, "log1p", true, false, false}, Case{math + 28, "erfinv", true, false, false},
                        Case{math + 43, "logaddexp", false, false, false}, Case{act + 2, "softplus", false, false, false},
                        Case{math + 44, "fmod", true, true, true}, Case{math + 45, "remainder", true, true, true}}) {
    cuda::KernelSource ks = tritium::test::compile_cuda(
        family_kernel(), tritium::test::CudaCheck().routed().also_for("sm_80").budget(cuda::kSharedMemoryBudget).named(c.name),
        addr<float>(0), addr<float>(1), addr<float>(2), addr<float>(3), 1.0, 20.0, 1.0, 1000, c.op, 1,
        static_cast<int>(DType::f32), 256);
    const std::string body = tritium::test::kernel_body(ks);
    for (const char* slow : {"logf(", "log1pf(", "atan2f(", "asinf(", "acosf("})
      BOOST_TEST(body.find(slow) == std::string::npos, c.name << " calls " << slow);
    if (c.no_div) BOOST_TEST(body.find("tt_fdiv(") == std::string::npos, c.name << " divides with div.full");
    if (c.rcp) BOOST_TEST(body.find("tt_rcp(") != std::string::npos, c.name << " has no fast reciprocal");
    BOOST_TEST((body.find("fmodf(") != std::string::npos) == c.fmodf, c.name << ": fmodf " << c.fmodf);
  }
}

// f16 + - * are one instruction each (tt_hadd / tt_hsub / tt_hmul: add.rn.f16 ...), as Triton's
// HADD2 / HMUL2, not two conversions to f32, the op and one back (unsloth swiglu's f16 backward:
// 320 SASS instructions a thread, now 240; Triton 208). Values: test_contract_fma.
BOOST_AUTO_TEST_CASE(f16_arithmetic_is_native) {
  if (!tritium::test::nvrtc_or_skip()) return;
  auto k = tritium::kernel("f16_chain", [](tl::ptr<tritium::f16_t> x, tl::ptr<tritium::f16_t> y, tl::ptr<tritium::f16_t> o,
                                           tl::i32 n, int B) {
    auto offs = tl::program_id(0) * B + tl::arange(0, B);
    auto m = offs < n;
    auto a = tl::load(x + offs, m), b = tl::load(y + offs, m);
    tl::store(o + offs, (a + b) * a - b, m);
  });
  cuda::KernelSource ks = tritium::test::compile_cuda(k, tritium::test::CudaCheck().routed().also_for("sm_80"),
                                                      addr<tritium::f16_t>(0), addr<tritium::f16_t>(1),
                                                      addr<tritium::f16_t>(2), 1000, 1024);
  const std::string body = tritium::test::kernel_body(ks);
  for (const char* op : {"tt_hadd(", "tt_hmul(", "tt_hsub("}) BOOST_TEST(body.find(op) != std::string::npos, op << "\n" << body);
  BOOST_TEST(body.find("tt_to_f32") == std::string::npos, body);
}

BOOST_AUTO_TEST_SUITE_END()
