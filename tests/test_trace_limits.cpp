// Kernels the user makes large: tracing and the passes take time linear in the kernel's size;
// run-time control flow nested too deep, a trace that would create too many IR ops and a
// constant tl::range step that is not positive are clear tritium::Errors, never a stack overflow
// or minutes of tracing; a run-time step that is not positive runs the loop zero times, never
// hangs.
#include <chrono>
#include <functional>

#include "test_support.h"

namespace tl = tritium::tl;
namespace tt = tritium::test;

namespace {

const tritium::Options kCpu{.device = tritium::Device::cpu()};

// A kernel of `steps` unrolled steps, each a run-time loop and a chain of loads and arithmetic:
// the shapes that made tracing (loop-carried placeholders) and the passes (folding, CSE)
// replace values by walking the whole function.
double trace_and_optimize_seconds(int steps) {
  auto k = tritium::kernel("steps", [steps](tl::ptr<float> x, tl::ptr<float> out, tl::i32 n, int BLOCK) {
    auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    auto acc = tl::zeros({BLOCK}, tl::float32);
    for (int i = 0; i < steps; ++i) {
      acc = acc * 1.0001f + tl::load(x + offs + i, offs < n);
      for (auto j : tl::range(0, n)) acc = acc + 1.0f + 0 * j;
    }
    tl::store(out + offs, acc, offs < n);
  });
  std::vector<float> buf(4);
  double best = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    auto start = std::chrono::steady_clock::now();
    std::string ir = k.optimized_ir(buf.data(), buf.data(), 100, 64);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    BOOST_TEST(!ir.empty());
  }
  return best;
}

// n nested tl::if_, each adding 1 to acc when pid >= its level.
void nested_ifs(tl::tensor& acc, const tl::tensor& pid, int level, int n) {
  if (level == n) return;
  tl::if_(pid >= level, [&] {
    acc = acc + 1;
    nested_ifs(acc, pid, level + 1, n);
  });
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_trace_limits)

BOOST_AUTO_TEST_CASE(tracing_and_passes_scale_linearly) {
  // Before use lists every replacement walked the whole function: 1,000 / 2,000 / 4,000 steps of
  // the load chain took 2.1 / 19.7 / 85 s to trace and optimise. Linear: about 8x for 8x the
  // steps; the bound leaves room for a loaded machine and still fails a quadratic time.
  double small = trace_and_optimize_seconds(500);
  double large = trace_and_optimize_seconds(4000);
  BOOST_TEST_MESSAGE("trace + passes: 500 steps " << small << " s, 4000 steps " << large << " s");
  BOOST_TEST(large < 24 * small + 0.05, "8x the steps took " << large / small << "x the time (" << small << " s, "
                                                               << large << " s)");
}

BOOST_AUTO_TEST_CASE(nesting_deeper_than_the_limit_is_an_error) {
  auto deep = tritium::kernel("deep_ifs", [](tl::ptr<int32_t> out, int DEPTH) {
    auto pid = tl::program_id(0);
    tl::tensor acc = tl::zeros({}, tl::int32) + 0 * pid;
    nested_ifs(acc, pid, 0, DEPTH);
    tl::store(out + pid, acc);
  });
  int32_t* none = nullptr;
  tt::check_throws([&] { deep.ir(none, 10000); }, {"tl::if_", "nested", "256"}, "10000 nested tl::if_");
  tt::check_throws([&] { deep.ir(none, 257); }, {"tl::if_", "257 levels", "256"}, "257 nested tl::if_");
  // At the limit it traces, optimises, and compiles and runs on the CPU.
  BOOST_TEST(!deep.optimized_ir(none, 256).empty());
  if (tritium::runtime::device_available(tritium::Device::cpu())) {
    const int depth = 256, programs = 300;
    auto out = tt::poisoned<int32_t>(programs);
    deep[{programs}](out.data(), depth, kCpu);
    tt::host_vector<int32_t> ref(programs);
    for (int p = 0; p < programs; ++p) ref[p] = std::min(p + 1, depth);
    tt::check_equal<int32_t>(out, ref, "256 nested tl::if_");
  }
}

BOOST_AUTO_TEST_CASE(too_many_ir_ops_is_an_error) {
  unsigned line = 0;
  auto big = tritium::kernel("unrolled_too_far", [&](tl::ptr<float> x, int STEPS) {
    auto v = tl::load(x + tl::arange(0, 16));
    for (int i = 0; i < STEPS; ++i) {
      line = __LINE__; v = v * 1.5f + 1.0f;
    }
    tl::store(x + tl::arange(0, 16), v);
  });
  float* none = nullptr;
  {
    tt::ScopedEnv limit("TRITIUM_MAX_IR_OPS", "1000");
    tt::check_throws_at([&] { big.ir(none, 10000); }, __FILE__, line,
                        {"unrolled_too_far", "1000 IR ops", "TRITIUM_MAX_IR_OPS"}, "10000 steps over a limit of 1000");
    BOOST_TEST(!big.ir(none, 100).empty());  // under the limit
  }
  BOOST_TEST(!big.ir(none, 10000).empty());  // under the default limit
}

BOOST_AUTO_TEST_CASE(range_step_must_be_positive) {
  auto k = tritium::kernel("stepped", [](tl::ptr<int32_t> out, tl::i32 n, tl::i32 step, bool CONSTANT_ZERO) {
    auto trips = tl::zeros({}, tl::int32);
    if (CONSTANT_ZERO) {
      for (auto i : tl::range(0, n, tl::zeros({}, tl::int32))) trips = trips + 1 + 0 * i;
    } else {
      for (auto i : tl::range(0, n, step)) trips = trips + 1 + 0 * i;
    }
    tl::store(out, trips);
  });
  int32_t* none = nullptr;
  tt::check_throws([&] { k.ir(none, 10, 1, true); }, {"tl::range", "step must be positive", "0"}, "constant 0 step");
  auto literal = tritium::kernel("literal_step", [](tl::ptr<int32_t> out, tl::i32 n) {
    for (auto i : tl::range(0, n, 0)) tl::store(out, i);
  });
  tt::check_throws([&] { literal.ir(none, 10); }, {"tl::range", "step must be positive", "0"}, "literal 0 step");
  if (!tritium::runtime::device_available(tritium::Device::cpu())) return;
  int32_t trips = -1;
  k[{1}](&trips, 10, 3, false, kCpu);
  BOOST_TEST(trips == 4);
  // A run-time step of 0 or below: the loop runs zero times (it would never end).
  for (int step : {0, -2}) {
    trips = -1;
    k[{1}](&trips, 10, step, false, kCpu);
    BOOST_TEST(trips == 0, "run-time step " << step << ": " << trips << " trips");
  }
}

BOOST_AUTO_TEST_SUITE_END()
