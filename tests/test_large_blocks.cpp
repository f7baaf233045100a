// Blocks at Triton's size limit (2^20 elements) must run on pool threads without overflowing a
// stack: the CPU backend keeps large block buffers on the heap.
#include "test_support.h"

namespace tl = tritium::tl;
namespace tt = tritium::test;

BOOST_AUTO_TEST_SUITE(test_large_blocks)

BOOST_AUTO_TEST_CASE(block_of_2_pow_20_elements) {
  // Each program loads a [1024, 1024] tile, uses it twice (so it is materialised: 4 MiB), and
  // writes x - rowmax(x).
  auto k = tritium::kernel("big_tile", [](tl::ptr<float> x, tl::ptr<float> out, int R, int C) {
    auto base = tl::program_id(0) * (R * C);
    auto offs = base + tl::arange(0, R)(tl::_, tl::None) * C + tl::arange(0, C)(tl::None, tl::_);
    auto v = tl::load(x + offs);
    tl::store(out + offs, v - tl::max(v, 1, true));
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int R = 1024, C = 1024, programs = 3;
    auto x = tt::random_vector<float>(size_t(R) * C * programs, 11);
    auto dx = be.upload<float>(x);
    auto dout = be.alloc_poisoned<float>(x.size());
    k[{programs}](dx.ptr(), dout.ptr(), R, C, be.options());
    std::vector<double> ref(x.size());
    for (size_t r = 0; r < size_t(R) * programs; ++r) {
      double m = -INFINITY;
      for (int c = 0; c < C; ++c) m = std::max(m, double(x[r * C + c]));
      for (int c = 0; c < C; ++c) ref[r * C + c] = double(x[r * C + c]) - m;
    }
    tt::check_close<float>(dout.download(), ref, 1e-6);
  });
}

BOOST_AUTO_TEST_SUITE_END()
