// Launches inside launches: a kernel launched from another kernel's body while it is traced, from
// a grid function, or by itself on another specialisation works; a kernel that needs itself to
// trace itself (or a grid function that launches its own kernel forever) is a clear error, not a
// stack overflow. CPU backend: the nested launches run at trace time on the host.
#include <numeric>
#include <vector>

#include "test_support.h"

namespace tl = tritium::tl;
namespace tt = tritium::test;

namespace {

const tritium::Options kCpu{.device = tritium::Device::cpu()};

// out[i] = i * factor for i < N.
tritium::Kernel& fill_kernel() {
  static tritium::Kernel k = tritium::kernel(
      "fill", [](tl::ptr<int32_t> out, tl::i32 factor, int N) {
        auto i = tl::arange(0, N);
        tl::store(out + i, i * factor);
      },
      {"out", "factor", "N"});
  return k;
}

// sum_{i < N} i * 3, computed at trace time by launching fill.
int32_t table_sum(int N) {
  std::vector<int32_t> table(static_cast<size_t>(N), -1);
  fill_kernel()[{1}](table.data(), 3, N, kCpu);
  return std::accumulate(table.begin(), table.end(), 0);
}

// out[i] = i + sum of fill's table, the sum found by a launch inside the body.
tritium::Kernel& outer_kernel() {
  static tritium::Kernel k = tritium::kernel(
      "outer_with_nested_launch", [](tl::ptr<int32_t> out, tl::i32 n, int N) {
        int32_t s = table_sum(N);
        auto i = tl::arange(0, N);
        tl::store(out + i, i + s, i < n);
      },
      {"out", "n", "N"});
  return k;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_reentrant_launch)

BOOST_AUTO_TEST_CASE(launch_inside_a_kernel_body, *tt::needs_cpu_backend()) {
  const int N = 32, n = 29;
  const int32_t s = 3 * (N - 1) * N / 2;
  for (int round = 0; round < 2; ++round) {  // the second launch is a cache hit
    auto out = tt::poisoned<int32_t>(N);
    outer_kernel()[{1}](out.data(), n, N, kCpu);
    tt::host_vector<int32_t> ref = tt::poisoned<int32_t>(N);
    for (int i = 0; i < n; ++i) ref[i] = i + s;
    tt::check_equal<int32_t>(out, ref, "round " + std::to_string(round));
  }
  BOOST_TEST(outer_kernel().num_specializations() == 1u);
}

BOOST_AUTO_TEST_CASE(launch_inside_a_grid_function, *tt::needs_cpu_backend()) {
  static tritium::Kernel add_const = tritium::kernel(
      "add_const", [](tl::ptr<int32_t> x, tl::ptr<int32_t> out, tl::i32 n, tl::i32 c, int BLOCK) {
        auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
        tl::store(out + offs, tl::load(x + offs, offs < n) + c, offs < n);
      },
      {"x", "out", "n", "c", "BLOCK"});
  const int n = 1000;
  auto x = tt::random_vector<int32_t>(n, 5, -100, 100);
  for (int round = 0; round < 2; ++round) {  // a miss, then a hit: the grid function runs in both
    auto out = tt::poisoned<int32_t>(n);
    int32_t s = 0;
    auto grid = [&](const tritium::Meta& m) {
      s = table_sum(16);  // another kernel launched while this one is being launched
      return tritium::Grid(tritium::cdiv(n, m["BLOCK"]));
    };
    add_const[grid](x.data(), out.data(), n, 7, tritium::Meta{{"BLOCK", 64}}, kCpu);
    BOOST_TEST(s == 360);
    tt::host_vector<int32_t> ref(n);
    for (int i = 0; i < n; ++i) ref[i] = x[i] + 7;
    tt::check_equal<int32_t>(out, ref, "round " + std::to_string(round));
  }
}

BOOST_AUTO_TEST_CASE(recursion_on_other_specialisations, *tt::needs_cpu_backend()) {
  // depth(N) = 1 + depth(N / 2), found by launching this same kernel with N / 2 while tracing N.
  static tritium::Kernel depth = tritium::kernel("depth", [](tl::ptr<int32_t> out, int N) {
    int32_t below = 0;
    if (N > 1) {
      int32_t got = -1;
      depth[{1}](&got, N / 2, kCpu);
      below = got;
    }
    tl::store(out, below + 1 + 0 * tl::program_id(0));
  });
  int32_t got = -1;
  depth[{1}](&got, 64, kCpu);
  BOOST_TEST(got == 7);
  BOOST_TEST(depth.num_specializations() == 7u);
}

BOOST_AUTO_TEST_CASE(kernel_launching_itself_while_traced_is_an_error, *tt::needs_cpu_backend()) {
  static tritium::Kernel self = tritium::kernel("self_launch", [](tl::ptr<int32_t> out, int N) {
    int32_t got = 0;
    self[{1}](&got, N, kCpu);  // the same specialisation: it would need itself to exist
    tl::store(out + tl::arange(0, N), got);
  }, {"out", "N"});
  int32_t buf[16];
  int32_t* out = buf;
  tt::check_throws([&] { self[{1}](out, 16, kCpu); }, {"self_launch", "itself", "N=16"}, "self launch");
  // Nothing was left half-registered: the same error again, not a crash or a stale kernel.
  tt::check_throws([&] { self[{1}](out, 16, kCpu); }, {"self_launch", "itself"}, "self launch again");
  BOOST_TEST(self.num_specializations() == 0u);
}

BOOST_AUTO_TEST_CASE(grid_function_launching_its_own_kernel_forever, *tt::needs_cpu_backend()) {
  static tritium::Kernel k = tritium::kernel("grid_recursion", [](tl::ptr<int32_t> out, int N) {
    tl::store(out + tl::arange(0, N), tl::arange(0, N));
  });
  int32_t buf[16];
  int32_t* out = buf;
  std::function<tritium::Grid(const tritium::Meta&)> grid = [&](const tritium::Meta&) {
    k[grid](out, 16, kCpu);
    return tritium::Grid(1);
  };
  tt::check_throws([&] { k[grid](out, 16, kCpu); }, {"grid_recursion", "nested", "deep"}, "endless grid recursion");
  // The kernel still launches normally afterwards.
  tt::host_vector<int32_t> res = tt::poisoned<int32_t>(16);
  k[{1}](res.data(), 16, kCpu);
  tt::host_vector<int32_t> ref(16);
  std::iota(ref.begin(), ref.end(), 0);
  tt::check_equal<int32_t>(res, ref, "after the error");
}

BOOST_AUTO_TEST_SUITE_END()
