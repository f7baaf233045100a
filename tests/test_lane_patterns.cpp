// Loads whose lanes read a fixed pattern of nearby elements (the CPU backend loads the span and
// permutes it when each chunk's addresses check out at run time, and gathers otherwise:
// jit/cpu/lane_patterns.cpp): stride 2 and 3 (a pooling window's columns), i / 2 (the pooling
// backward's shared window), i / 8, a reversed row, a 2-D tile, with masks, run-time offsets that
// break the assumed alignment in some chunks (odd offsets: the gather's path), element sizes of 1 to 8 bytes
// and sizes that are not multiples of the block. Values against the host's own indexing (exact),
// on every backend; on the CPU, the generated code must take the pattern path.
#include "test_support.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace tl = tritium::tl;
namespace tt = tritium::test;

namespace {

template <class T> std::string tname() { return tritium::dtype_name(tritium::dtype_of<T>()); }

enum Pattern : int { stride2, stride3, halves, reversed, eighths };

// out[i] = x[f(i)] for i < n (other -3 past n), f by PATTERN with the run-time offset `off`:
// 2 i + off, 3 i + off, (i + off) / 2, n - 1 - i + off, (i + off) / 8.
template <class T> tritium::Kernel& pattern_kernel() {
  static tritium::Kernel k = tritium::kernel(
      "lane_pattern_" + tname<T>(), [](tl::ptr<T> x, tl::ptr<T> out, tl::i32 n, tl::i32 off, int PATTERN, int BLOCK) {
        auto i = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
        tl::tensor at;
        switch (static_cast<Pattern>(PATTERN)) {
          case stride2: at = i * 2 + off; break;
          case stride3: at = i * 3 + off; break;
          case halves: at = (i + off) / 2; break;
          case reversed: at = (n - 1 - i) + off; break;
          case eighths: at = (i + off) / 8; break;
        }
        auto m = i < n;
        tl::store(out + i, tl::load(x + at, m, -3), m);
      });
  return k;
}

int64_t source_of(Pattern p, int64_t i, int64_t n, int64_t off) {
  switch (p) {
    case stride2: return 2 * i + off;
    case stride3: return 3 * i + off;
    case halves: return (i + off) / 2;
    case reversed: return n - 1 - i + off;
    case eighths: return (i + off) / 8;
  }
  return 0;
}

template <class T> void check_pattern(const tt::Backend& be, Pattern p, int n, int off, int block) {
  BOOST_TEST_CONTEXT(tname<T>() << " pattern " << int(p) << " n " << n << " off " << off << " block " << block) {
    const int64_t len = 3 * int64_t(n) + off + 8;
    auto x = tt::random_vector<T>(size_t(len), 11 + n + off, -100, 100);
    auto dx = be.upload<T>(x);
    const int grid = tritium::cdiv(n, block);
    auto out = be.alloc_poisoned<T>(size_t(grid) * block);
    pattern_kernel<T>()[{grid}](dx.ptr(), out.ptr(), n, off, int(p), block, be.options());
    auto got = out.download();
    size_t bad = 0;
    for (int i = 0; i < n; ++i) bad += !(tt::to_double(got[size_t(i)]) == tt::to_double(x[size_t(source_of(p, i, n, off))]));
    BOOST_TEST(bad == 0u, bad << " of " << n << " elements differ");
  }
}

// A [R, C] tile of rows `stride` apart whose lanes read column c / 2 + off of their row (the
// pooling backward's gradient read): out[r, c] = x[r * stride + (c + off) / 2], masked to R x C.
template <class T> tritium::Kernel& tile_kernel() {
  static tritium::Kernel k = tritium::kernel(
      "lane_pattern_tile_" + tname<T>(),
      [](tl::ptr<T> x, tl::ptr<T> out, tl::i32 R, tl::i32 C, tl::i32 stride, tl::i32 off, int BR, int BC) {
        auto r = (tl::program_id(0) * BR + tl::arange(0, BR))(tl::_, tl::None);
        auto c = (tl::program_id(1) * BC + tl::arange(0, BC))(tl::None, tl::_);
        auto m = (r < R) & (c < C);
        tl::store(out + r * C + c, tl::load(x + r * stride + (c + off) / 2, m, 0), m);
      });
  return k;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_lane_patterns)

BOOST_AUTO_TEST_CASE(strided_repeated_and_reversed_loads) {
  tt::for_each_backend([](const tt::Backend& be) {
    for (Pattern p : {stride2, stride3, halves, reversed, eighths})
      // Odd offsets: (i + 1) / 2 and (i + 5) / 8 break the assumed alignment (the gather's path).
      for (int off : {0, 1, 5, 6})
        for (int n : {1, 15, 100, 333}) {
          check_pattern<float>(be, p, n, off, 64);
          check_pattern<int8_t>(be, p, n, off, 32);
          check_pattern<tritium::bf16_t>(be, p, n, off, 16);
          check_pattern<int64_t>(be, p, n, off, 64);
          check_pattern<double>(be, p, n, off, 16);
        }
  });
}

BOOST_AUTO_TEST_CASE(tiles_of_rows) {
  tt::for_each_backend([](const tt::Backend& be) {
    for (int off : {0, 1, 2})
      for (auto [R, C] : {std::pair{5, 37}, {16, 32}, {3, 100}}) {
        BOOST_TEST_CONTEXT("R " << R << " C " << C << " off " << off) {
          const int stride = C / 2 + 4;
          auto x = tt::random_vector<float>(size_t(R) * stride + 8, 5 + R + C + off);
          auto dx = be.upload<float>(x);
          const int BR = 4, BC = 32, gr = tritium::cdiv(R, BR), gc = tritium::cdiv(C, BC);
          auto out = be.alloc_poisoned<float>(size_t(R) * C);
          tile_kernel<float>()[{gr, gc}](dx.ptr(), out.ptr(), R, C, stride, off, BR, BC, be.options());
          tt::host_vector<float> want(size_t(R) * C);
          for (int r = 0; r < R; ++r)
            for (int c = 0; c < C; ++c) want[size_t(r) * C + c] = x[size_t(r) * stride + (c + off) / 2];
          tt::check_equal<float>(out.download(), want, "tile");
        }
      }
  });
}

// The CPU's generated code takes the pattern path for each pattern: strides and reversal without
// a gather, divisions checked per chunk with the gather behind the check.
BOOST_AUTO_TEST_CASE(the_cpu_loads_the_span, *tt::needs_cpu_backend()) {
  for (Pattern p : {stride2, stride3, halves, reversed, eighths}) {
    BOOST_TEST_CONTEXT("pattern " << int(p)) {
      const auto dir = std::filesystem::temp_directory_path() /
                       ("tritium-lane-pattern-" + std::to_string(int(p)) + "-" + std::to_string(::getpid()));
      std::filesystem::remove_all(dir);
      tt::FreshCacheDir cache("lanepattern" + std::to_string(int(p)));
      tt::host_vector<float> x(400), out(64);
      {
        tt::ScopedEnv dump("TRITIUM_DUMP", dir.c_str());
        pattern_kernel<float>()[{1}](x.data(), out.data(), 64, 0, int(p), 64,
                                     tritium::Options{.device = tritium::Device::cpu()});
      }
      std::ifstream in(dir / "lane_pattern_f32.ll");
      const std::string ll((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::filesystem::remove_all(dir);
      BOOST_TEST(ll.find("define ") != std::string::npos, "no LLVM IR dumped");
      if (p == halves || p == eighths)  // a division: checked per chunk, the gather behind it
        BOOST_TEST(ll.find("pattern.load") != std::string::npos, "no checked pattern load in the generated code");
      else  // exact patterns: no check and no gather at all
        BOOST_TEST(ll.find("masked.gather") == std::string::npos, "the pattern load gathers");
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
