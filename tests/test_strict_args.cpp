// Launch arguments are taken as given or refused: a float for an integer meta-parameter, a value
// its C++ type cannot hold, a misspelt name in a tritium::Meta, a meta-parameter given twice, and
// a tl::tensor used after the trace that made it are tritium::Errors naming the kernel, the
// parameter and the values; launch-time errors name the file:line of the launch call.
#include "test_support.h"

namespace tl = tritium::tl;
namespace tt = tritium::test;

namespace {

const tritium::Options kCpu{.device = tritium::Device::cpu()};

tritium::Kernel& add_one() {
  static tritium::Kernel k = tritium::kernel(
      "add_one",
      [](tl::ptr<float> x, tl::ptr<float> out, tl::i32 n, int BLOCK, bool TWICE) {
        auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
        auto m = offs < n;
        auto v = tl::load(x + offs, m) + 1;
        if (TWICE) v = v + 1;
        tl::store(out + offs, v, m);
      },
      {"x", "out", "n", "BLOCK", "TWICE"});
  return k;
}

tritium::Kernel& scaled() {
  static tritium::Kernel k = tritium::kernel(
      "scaled", [](tl::ptr<float> out, float SCALE) { tl::store(out + tl::arange(0, 16), tl::full({16}, SCALE, tl::float32)); },
      {"out", "SCALE"});
  return k;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_strict_args)

BOOST_AUTO_TEST_CASE(meta_parameter_values_must_fit_their_type, *tt::needs_cpu_backend()) {
  const int n = 100;
  auto x = tt::random_vector<float>(n, 1);
  auto out = tt::poisoned<float>(n);
  auto& k = add_one();
  tt::check_throws([&] { k[{1}](x.data(), out.data(), n, 64.5, false, kCpu); },
                   {"add_one", "BLOCK", "64.5", "int"}, "float for an int meta-parameter");
  tt::check_throws([&] { k[{1}](x.data(), out.data(), n, 64.0, false, kCpu); },
                   {"add_one", "BLOCK", "64", "int"}, "integral float for an int meta-parameter");
  tt::check_throws([&] { k[{1}](x.data(), out.data(), n, tritium::Meta{{"BLOCK", 128.25}, {"TWICE", false}}, kCpu); },
                   {"add_one", "BLOCK", "128.25"}, "float for an int meta-parameter, by name");
  tt::check_throws([&] { k[{1}](x.data(), out.data(), n, int64_t(1) << 40, false, kCpu); },
                   {"add_one", "BLOCK", "1099511627776", "int"}, "int meta-parameter out of range");
  tt::check_throws([&] { k[{1}](x.data(), out.data(), n, 128, 2, kCpu); }, {"add_one", "TWICE", "2", "bool"},
                   "2 for a bool meta-parameter");
  tt::check_throws([&] { k[{1}](x.data(), out.data(), n, 128, 0.5, kCpu); }, {"add_one", "TWICE", "0.5", "bool"},
                   "float for a bool meta-parameter");
  BOOST_TEST(tt::count_poison<float>(out) == size_t(n), "a refused launch wrote");
  // What fits is taken: an integer for a float meta-parameter, 0/1 and true/false for a bool one.
  k[{tritium::cdiv(n, 128)}](x.data(), out.data(), n, 128, 1, kCpu);
  std::vector<double> ref(n);
  for (int i = 0; i < n; ++i) ref[i] = (x[i] + 1.0f) + 1.0f;
  tt::check_close<float>(out, ref, 0, "TWICE = 1");
  auto s = tt::poisoned<float>(16);
  scaled()[{1}](s.data(), 3, kCpu);
  tt::check_close<float>(s, std::vector<double>(16, 3.0), 0, "SCALE = 3");
}

BOOST_AUTO_TEST_CASE(meta_names_are_checked, *tt::needs_cpu_backend()) {
  const int n = 100;
  auto x = tt::random_vector<float>(n, 2);
  auto out = tt::poisoned<float>(n);
  auto& k = add_one();
  tt::check_throws([&] { k[{1}](x.data(), out.data(), n, 64, tritium::Meta{{"TWICE", true}, {"BLOKC", 64}}, kCpu); },
                   {"add_one", "BLOKC", "not a meta-parameter", "BLOCK", "TWICE"}, "misspelt name");
  tt::check_throws([&] { k[{1}](x.data(), out.data(), tritium::Meta{{"n", 5}, {"BLOCK", 64}, {"TWICE", true}}, kCpu); },
                   {"add_one", "'n'", "run-time"}, "run-time parameter by name");
  tt::check_throws([&] { k[{1}](x.data(), out.data(), n, 64, false, tritium::Meta{{"BLOCK", 128}}, kCpu); },
                   {"add_one", "BLOCK", "by position", "64", "by name", "128"}, "given twice");
  BOOST_TEST(tt::count_poison<float>(out) == size_t(n), "a refused launch wrote");
}

BOOST_AUTO_TEST_CASE(launch_errors_name_the_launch_line, *tt::needs_cpu_backend()) {
  const int n = 100;
  auto x = tt::random_vector<float>(n, 3);
  auto out = tt::poisoned<float>(n);
  std::vector<double> xd(n);
  auto& k = add_one();
  unsigned line = 0;
  tt::check_throws_at([&] { line = __LINE__; k[{1}](x.data(), out.data(), n, kCpu); }, __FILE__, line,
                      {"add_one", "BLOCK", "missing"}, "missing meta-parameter");
  tt::check_throws_at([&] { line = __LINE__; k[{1}](x.data(), kCpu); }, __FILE__, line,
                      {"add_one", "takes 5 arguments"}, "argument count");
  tt::check_throws_at([&] { line = __LINE__; k[{1}](xd.data(), out.data(), n, 64, false, kCpu); }, __FILE__, line,
                      {"add_one", "x", "f32", "f64"}, "argument dtype");
  tt::check_throws_at([&] { line = __LINE__; k[{-1}](x.data(), out.data(), n, 64, false, kCpu); }, __FILE__, line,
                      {"add_one", "grid"}, "negative grid");
  tt::check_throws_at([&] {
    line = __LINE__; k.launch([](const tritium::Meta&) { return tritium::Grid(1, 1 << 20); }, x.data(), out.data(), n, 64, false, kCpu);
  }, __FILE__, line, {"add_one", "grid"}, "grid function giving a bad grid");
  tt::check_throws_at([&] { line = __LINE__; k.launch(1, x.data(), out.data(), n, 64.5, false, kCpu); }, __FILE__, line,
                      {"add_one", "BLOCK", "64.5"}, "launch(): float meta-parameter");
}

BOOST_AUTO_TEST_CASE(tensor_kept_past_its_trace, *tt::needs_cpu_backend()) {
  tl::tensor saved;  // outlives the trace below
  auto leak = tritium::kernel("leak", [&](tl::ptr<float> x) { saved = tl::load(x + tl::arange(0, 16)); });
  std::vector<float> data16(16, 0.0f);
  float* buf = data16.data();
  leak.ir(buf);
  unsigned line = 0;
  auto use = tritium::kernel("use_leaked", [&](tl::ptr<float> x) {
    line = __LINE__; auto y = saved + 1.0f;
    tl::store(x + tl::arange(0, 16), y);
  });
  tt::check_throws_at([&] { use.ir(buf); }, __FILE__, line, {"tl::tensor", "trace", "kernel body"}, "escaped tensor");
  tt::check_throws_at([&] { use[{1}](buf, kCpu); }, __FILE__, line, {"tl::tensor", "trace"}, "escaped tensor at launch");
  // Run-time control flow in a later kernel ignores the stale tensor (it is not loop-carried).
  auto loop = tritium::kernel("loop_after_leak", [](tl::ptr<float> x, tl::i32 n) {
    auto acc = tl::zeros({16}, tl::float32);
    for (auto i : tl::range(0, n)) acc += tl::load(x + tl::arange(0, 16)) * 0 + 1 + 0 * i;
    tl::store(x + tl::arange(0, 16), acc);
  });
  std::vector<float> data(16, 0.0f);
  loop[{1}](data.data(), 5, kCpu);
  for (float v : data) BOOST_TEST(v == 5.0f);
  BOOST_TEST(saved.defined());
}

BOOST_AUTO_TEST_SUITE_END()
