// dtype- and string-valued meta-parameters (Triton's `X_dtype: tl.constexpr`,
// `reduction: tl.constexpr = "mean"`): declared as tl::constexpr_<DType> / tl::constexpr_<std::string>
// (or plain DType / std::string), passed by position, in a tritium::Meta or in an autotuner's
// configs; part of the specialisation key; type-checked at launch.
#include "test_support.h"

#include <cmath>
#include <string>
#include <vector>

#include "autotune/autotuner.h"

namespace tl = tritium::tl;
namespace tt = tritium::test;
using tritium::DType;
using tritium::f16_t;

namespace {

constexpr int kN = 300, kBlock = 128;

template <class T> T* fake(uint64_t i) { return reinterpret_cast<T*>(uint64_t{0x7f0000000000} + i * 0x100000); }

// Liger's cross-entropy style: a loss reduced by `reduction`, computed in `ACC_DTYPE`.
tritium::Kernel reduce_kernel() {
  return tritium::kernel(
      "meta_reduce",
      [](tl::ptr<float> x, tl::ptr<float> out, tl::i32 n, tl::constexpr_<DType> ACC_DTYPE,
         tl::constexpr_<std::string> reduction, int B) {
        auto offs = tl::program_id(0) * B + tl::arange(0, B);
        auto m = offs < n;
        auto v = tl::load(x + offs, m, 0.0f).to(ACC_DTYPE);
        tl::static_assert_(reduction == "mean" || reduction == "sum" || reduction == "none");
        if (reduction == "none") {
          tl::store(out + offs, v, m);
        } else {
          auto s = tl::sum(v, 0);
          if (reduction == "mean") s = s / n.to(ACC_DTYPE);
          tl::atomic_add(out, s);
        }
      },
      {"x", "out", "n", "ACC_DTYPE", "reduction", "B"});
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_meta_values)

BOOST_AUTO_TEST_CASE(dtype_and_string_values_specialise_the_kernel) {
  auto x = tt::random_vector<float>(kN, 1);
  double sum = 0;
  for (float v : x) sum += v;
  tt::for_each_backend([&](const tt::Backend& be) {
    auto k = reduce_kernel();
    auto dx = be.upload<float>(x);
    const int grid = tritium::cdiv(kN, kBlock);
    for (std::string reduction : {"sum", "mean"}) {
      BOOST_TEST_CONTEXT(reduction) {
        auto d = be.upload<float>(tt::host_vector<float>{0.0f});
        k[{grid}](dx.ptr(), d.ptr(), kN, tl::float64, reduction, kBlock, be.options());
        const double ref = reduction == "mean" ? sum / kN : sum;
        BOOST_TEST(std::abs(d.download()[0] - ref) <= 1e-5 * (1 + std::abs(ref)));
      }
    }
    auto d = be.alloc_poisoned<float>(kN);
    k[{grid}](dx.ptr(), d.ptr(), kN, tritium::Meta{{"ACC_DTYPE", tl::float16}, {"reduction", "none"}, {"B", kBlock}},
              be.options());
    auto out = d.download();
    int wrong = 0;
    for (int i = 0; i < kN; ++i) wrong += out[i] != tt::to_float(tt::to_f16(x[i]));  // through f16
    BOOST_TEST(wrong == 0);
    BOOST_TEST(k.num_specializations() == 3u);
    // The values reach the IR: f64 arithmetic for tl::float64, f16 for tl::float16.
    std::string ir64 = k.ir(fake<float>(0), fake<float>(1), kN, tl::float64, "sum", kBlock);
    std::string ir16 = k.ir(fake<float>(0), fake<float>(1), kN, tl::float16, "none", kBlock);
    BOOST_TEST(ir64.find("f64") != std::string::npos);
    BOOST_TEST(ir16.find("f16") != std::string::npos);
    BOOST_TEST(ir16.find("atomic") == std::string::npos);
  });
}

// Run-time arguments after a string meta-parameter keep their own specialisation: the string's
// characters in the key are not read as theirs (a 3-character string once made the next scalar
// "equal to 1" and traced it as a constant, Liger's cross-entropy with reduction="sum").
BOOST_AUTO_TEST_CASE(scalars_after_a_string_are_not_specialised_by_it) {
  auto k = tritium::kernel("meta_string_then_scalars", [](tl::ptr<float> out, std::string tag, tl::f32 scale, tl::i32 n,
                                                          tl::i32 one, int B) {
    auto offs = tl::arange(0, B);
    auto v = scale * n.to(tl::float32) + one.to(tl::float32);
    tl::store(out + offs, tl::full({B}, tag.size() == 0 ? 0.0f : float(tag.size()), tl::float32) + v, offs < n);
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    // Tags whose characters fill no, one and two key words; n = 7 is neither 1 nor a multiple of 16.
    for (std::string tag : {"", "sum", "mean", "exactly9c", "sixteen_chars_xx"}) {
      BOOST_TEST_CONTEXT("tag \"" << tag << "\"") {
        auto d = be.alloc_poisoned<float>(16);
        k[{1}](d.ptr(), tag, 20.5f, 7, 1, 16, be.options());
        auto out = d.download();
        for (int i = 0; i < 7; ++i) BOOST_TEST(out[i] == float(tag.size()) + 20.5f * 7 + 1);
        for (int i = 7; i < 16; ++i) BOOST_TEST(std::isnan(out[i]));
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(meta_values_are_type_checked) {
  auto k = reduce_kernel();
  unsigned line = __LINE__ + 1;
  tt::check_throws_at([&] { k[{1}](fake<float>(0), fake<float>(1), kN, "f32", "sum", kBlock); }, __FILE__, line,
                      {"meta_reduce", "ACC_DTYPE", "tl::constexpr_<DType>", "the string \"f32\""}, "a string for a dtype");
  line = __LINE__ + 1;
  tt::check_throws_at([&] { k[{1}](fake<float>(0), fake<float>(1), kN, tl::float32, tl::float32, kBlock); }, __FILE__,
                      line, {"reduction", "tl::constexpr_<std::string>", "the dtype f32"}, "a dtype for a string");
  line = __LINE__ + 1;
  tt::check_throws_at([&] { k[{1}](fake<float>(0), fake<float>(1), kN, 32, "sum", kBlock); }, __FILE__, line,
                      {"ACC_DTYPE", "the integer 32"}, "a number for a dtype");
  line = __LINE__ + 1;
  tt::check_throws_at([&] { k[{1}](fake<float>(0), fake<float>(1), kN, tl::float32, "sum", "128"); }, __FILE__, line,
                      {"B", "C++ int", "the string \"128\""}, "a string for an int");
  tt::check_throws([&] { (void)k.ir(fake<float>(0), fake<float>(1), kN, tl::float32, "avg", kBlock); },
                      {"static_assert"}, "a value the body refuses");
  // A plain DType / std::string parameter is a meta-parameter too.
  auto plain = tritium::kernel("meta_plain", [](tl::ptr<float> out, DType d, std::string tag) {
    tl::store(out + tl::arange(0, 16), tl::full({16}, tag == "one" ? 1.0 : 2.0, d).to(tl::float32));
  });
  BOOST_TEST(plain.ir(fake<float>(0), tl::bfloat16, "one").find("bf16") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(autotuner_configs_carry_dtype_and_string_values) {
  auto x = tt::random_vector<float>(kN, 2);
  tt::for_each_backend([&](const tt::Backend& be) {
    tritium::AutotuneOptions opts;
    opts.warmup_ms = 1, opts.rep_ms = 2, opts.cache_results = false;
    opts.key = {"n", "reduction"};  // a string value in the tuning key
    auto tuner = tritium::autotune(reduce_kernel(),
                                   {tritium::Config(tritium::Meta{{"ACC_DTYPE", tl::float32}, {"B", 64}}),
                                    tritium::Config(tritium::Meta{{"ACC_DTYPE", tl::float64}, {"B", 128}})},
                                   opts);
    auto dx = be.upload<float>(x);
    auto d = be.alloc_poisoned<float>(kN);
    auto grid = [&](const tritium::Meta& m) { return tritium::Grid(tritium::cdiv(kN, m["B"])); };
    tuner[grid](dx.ptr(), d.ptr(), kN, tritium::Meta{{"reduction", "none"}}, be.options());
    auto out = d.download();
    int wrong = 0;
    for (int i = 0; i < kN; ++i) wrong += out[i] != x[i];
    BOOST_TEST(wrong == 0);
  });
}

BOOST_AUTO_TEST_SUITE_END()
