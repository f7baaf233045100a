// Run-time control flow (tl::range loops with automatically loop-carried tensors, tl::if_),
// compile-time C++ loops, device_print (stdout captured through the file descriptor) and
// device_assert.
#include "test_support.h"
#include "trip_rows_kernels.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace tl = tritium::tl;
namespace tt = tritium::test;
using tritium::f16_t;

namespace {

// Runs f with the process's stdout (fd 1) redirected to a temporary file; returns what was
// written, in lines.
template <class F> std::vector<std::string> capture_stdout_lines(F&& f) {
  std::fflush(stdout);
  char path[] = "/tmp/tritium-test-stdout-XXXXXX";
  int fd = mkstemp(path);
  BOOST_TEST_REQUIRE(fd >= 0);
  int saved = dup(1);
  dup2(fd, 1);
  auto restore = [&] {
    std::fflush(stdout);
    dup2(saved, 1);
    close(saved);
    close(fd);
  };
  try {
    f();
  } catch (...) {
    restore();
    unlink(path);
    throw;
  }
  restore();
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  unlink(path);
  return lines;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_control_flow)

// ---- loops ------------------------------------------------------------------------------------------

// Scalar loop-carried values (an i32 and an f32) over range(start, end, step), all run-time.
BOOST_AUTO_TEST_CASE(scalar_loop_carried_runtime_bounds) {
  auto k = tritium::kernel("scalar_loop", [](tl::ptr<int32_t> out_i, tl::ptr<float> out_f, tl::ptr<int32_t> trips,
                                             tl::i32 start, tl::i32 end, tl::i32 step) {
    auto s = tl::full({}, 0, tl::int32);
    auto f = tl::full({}, 1.0f, tl::float32);
    auto count = tl::full({}, 0, tl::int32);
    for (auto i : tl::range(start, end, step)) {
      s = s + i * i;
      f = f * 0.5f + i.to(tl::float32);
      count += 1;
    }
    tl::store(out_i + tl::program_id(0), s);
    tl::store(out_f + tl::program_id(0), f);
    tl::store(trips + tl::program_id(0), count);
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    struct Case { int start, end, step; };
    for (Case c : {Case{0, 10, 1}, Case{3, 50, 4}, Case{-7, 9, 3}, Case{5, 5, 1}, Case{10, 3, 1}, Case{0, 0, 2}, Case{0, 1000, 7}}) {
      BOOST_TEST_CONTEXT("range(" << c.start << ", " << c.end << ", " << c.step << ")") {
        int32_t s = 0, count = 0;
        double f = 1.0;
        float ff = 1.0f;
        for (int i = c.start; i < c.end; i += c.step) s += i * i, ff = ff * 0.5f + float(i), f = f * 0.5 + i, ++count;
        const int P = 3;
        auto oi = be.alloc_poisoned<int32_t>(P), trips = be.alloc_poisoned<int32_t>(P);
        auto of = be.alloc_poisoned<float>(P);
        k[{P}](oi.ptr(), of.ptr(), trips.ptr(), c.start, c.end, c.step, be.options());
        tt::check_equal<int32_t>(oi.download(), tt::host_vector<int32_t>(P, s), "sum of squares");
        tt::check_equal<int32_t>(trips.download(), tt::host_vector<int32_t>(P, count), "trip count");
        tt::check_close<float>(of.download(), std::vector<double>(P, f), 1e-6, "float recurrence");
      }
    }
  });
}

// A block accumulator over a run-time number of chunks, including zero chunks.
BOOST_AUTO_TEST_CASE(block_loop_carried) {
  auto k = tritium::kernel("chunk_sum", [](tl::ptr<float> x, tl::ptr<float> out, tl::ptr<int32_t> maxes, tl::i32 n_chunks,
                                           tl::i32 row_len, int BLOCK) {
    auto row = tl::program_id(0);
    auto offs = tl::arange(0, BLOCK);
    auto acc = tl::zeros({BLOCK}, tl::float32);
    auto best = tl::full({BLOCK}, -1, tl::int32);
    auto ptrs = x + row * row_len + offs;  // a carried block of pointers
    for (auto c : tl::range(0, n_chunks)) {
      auto v = tl::load(ptrs);
      acc += v;
      best = tl::where(v > 0.5f, c, best);
      ptrs += BLOCK;
    }
    tl::store(out + row * BLOCK + offs, acc);
    tl::store(maxes + row * BLOCK + offs, best);
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int BLOCK = 64, rows = 5;
    for (int n_chunks : {0, 1, 7}) {
      int row_len = std::max(1, n_chunks) * BLOCK;
      auto x = tt::random_vector<float>(size_t(rows) * row_len, 100 + n_chunks);
      std::vector<double> ref(rows * BLOCK, 0.0);
      tt::host_vector<int32_t> ref_best(rows * BLOCK, -1);
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < n_chunks; ++c)
          for (int i = 0; i < BLOCK; ++i) {
            float v = x[size_t(r) * row_len + c * BLOCK + i];
            ref[r * BLOCK + i] += v;
            if (v > 0.5f) ref_best[r * BLOCK + i] = c;
          }
      auto dx = be.upload<float>(x);
      auto out = be.alloc_poisoned<float>(rows * BLOCK);
      auto best = be.alloc_poisoned<int32_t>(rows * BLOCK);
      k[{rows}](dx.ptr(), out.ptr(), best.ptr(), n_chunks, row_len, BLOCK, be.options());
      tt::check_close<float>(out.download(), ref, 1e-6, std::to_string(n_chunks) + " chunks: sums");
      tt::check_equal<int32_t>(best.download(), ref_best, std::to_string(n_chunks) + " chunks: last chunk above 0.5");
    }
  });
}

// Nested loops; the inner trip count depends on the outer induction variable (triangular).
BOOST_AUTO_TEST_CASE(nested_loops) {
  auto k = tritium::kernel("nested", [](tl::ptr<float> x, tl::ptr<float> out, tl::ptr<int32_t> count_out, tl::i32 n, int BLOCK) {
    auto offs = tl::arange(0, BLOCK);
    auto acc = tl::zeros({BLOCK}, tl::float32);
    auto count = tl::full({}, 0, tl::int32);
    for (auto i : tl::range(0, n)) {
      auto weight = (i + 1).to(tl::float32);
      for (auto j : tl::range(0, i + 1)) {
        acc += tl::load(x + (i * n + j) * BLOCK + offs) * weight;
        count += 1;
      }
      acc = acc * 0.5f;
    }
    tl::store(out + offs, acc);
    tl::store(count_out, count);
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int BLOCK = 32;
    for (int n : {0, 1, 5}) {
      auto x = tt::random_vector<float>(size_t(std::max(n, 1)) * std::max(n, 1) * BLOCK, 200 + n);
      std::vector<double> ref(BLOCK, 0.0);
      for (int i = 0; i < n; ++i) {
        for (int j = 0; j <= i; ++j)
          for (int e = 0; e < BLOCK; ++e) ref[e] += double(x[(size_t(i) * n + j) * BLOCK + e]) * (i + 1);
        for (auto& r : ref) r *= 0.5;
      }
      auto dx = be.upload<float>(x);
      auto out = be.alloc_poisoned<float>(BLOCK);
      auto cnt = be.alloc_poisoned<int32_t>(1);
      k[{1}](dx.ptr(), out.ptr(), cnt.ptr(), n, BLOCK, be.options());
      tt::check_close<float>(out.download(), ref, 1e-6, "n " + std::to_string(n));
      tt::check_equal<int32_t>(cnt.download(), tt::host_vector<int32_t>{n * (n + 1) / 2}, "inner trips, n " + std::to_string(n));
    }
  });
}

// Values computed before the loop and only read inside it; stores inside the loop body.
BOOST_AUTO_TEST_CASE(loop_invariant_values_and_stores_in_loop) {
  auto k = tritium::kernel("invariant", [](tl::ptr<float> x, tl::ptr<float> rows, tl::ptr<float> acc_out, tl::ptr<float> v_out,
                                           tl::f32 scale, tl::i32 n, int BLOCK) {
    auto offs = tl::arange(0, BLOCK);
    auto v = tl::load(x + offs) * 2.0f;  // invariant block
    auto c = scale * 3.0f;               // invariant scalar
    auto acc = tl::zeros({BLOCK}, tl::float32);
    for (auto k : tl::range(0, n)) {
      auto kf = k.to(tl::float32);
      acc += v * c + kf;
      tl::store(rows + k * BLOCK + offs, v + kf);
    }
    tl::store(acc_out + offs, acc);
    tl::store(v_out + offs, v);
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int BLOCK = 16, n = 9;
    const float scale = 0.75f;
    auto x = tt::random_vector<float>(BLOCK, 300);
    std::vector<double> ref_rows(n * BLOCK), ref_acc(BLOCK, 0.0), ref_v(BLOCK);
    for (int e = 0; e < BLOCK; ++e) {
      double v = 2.0 * x[e];
      ref_v[e] = v;
      for (int kk = 0; kk < n; ++kk) ref_acc[e] += v * (scale * 3.0) + kk, ref_rows[kk * BLOCK + e] = v + kk;
    }
    auto dx = be.upload<float>(x);
    auto rows = be.alloc_poisoned<float>(n * BLOCK), acc = be.alloc_poisoned<float>(BLOCK), vo = be.alloc_poisoned<float>(BLOCK);
    k[{1}](dx.ptr(), rows.ptr(), acc.ptr(), vo.ptr(), scale, n, BLOCK, be.options());
    tt::check_close<float>(rows.download(), ref_rows, 1e-6, "rows stored in the loop");
    tt::check_close<float>(acc.download(), ref_acc, 1e-6, "accumulator");
    tt::check_close<float>(vo.download(), ref_v, 0.0, "invariant block unchanged after the loop");
  });
}

// Trips that load and store rows of one buffer: in place on disjoint rows (no barrier between
// trips on the GPU, loads issued trips ahead), and a shift whose trips overwrite what the trip
// before read in other threads' columns (the barrier stays): test_cuda_codegen_loops.
BOOST_AUTO_TEST_CASE(loop_trips_on_rows) {
  tt::for_each_backend([&](const tt::Backend& be) {
    for (auto [D, BLOCK] : {std::pair{128, 64}, std::pair{64, 32}}) {
      const int rows = 23, R = 4;  // the last program's group is short
      auto x = tt::random_vector<float>(size_t(rows) * D, 310 + D), cs = tt::random_vector<float>(size_t(D), 311 + D);
      std::vector<double> ref(x.size());
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < D / 2; ++c) {
          const double x0 = x[size_t(r * D + c)], x1 = x[size_t(r * D + c + D / 2)], co = cs[size_t(c)], si = cs[size_t(D / 2 + c)];
          ref[size_t(r * D + c)] = x0 * co - x1 * si;
          ref[size_t(r * D + c + D / 2)] = x1 * co + x0 * si;
        }
      auto dx = be.upload<float>(x), dcs = be.upload<float>(cs);
      tt::rotate_rows_kernel()[{tritium::cdiv(rows, R)}](dx.ptr(), dcs.ptr(), R, rows, D, BLOCK, be.options());
      tt::check_close<float>(dx.download(), ref, 1e-6, "rotated rows, D " + std::to_string(D));
    }
    const int rows = 9, D = 256;
    auto x = tt::random_vector<float>(size_t(rows) * D, 312);
    std::vector<double> ref(x.begin(), x.end());
    for (int k = 0; k + 1 < rows; ++k)
      for (int c = 0; c < D; ++c) ref[size_t(k * D + c)] = ref[size_t((k + 1) * D + D - 1 - c)];
    auto dx = be.upload<float>(x);
    tt::shift_rows_kernel()[{1}](dx.ptr(), rows, D, be.options());
    tt::check_close<float>(dx.download(), ref, 0.0, "shifted rows");
  });
}

// A 64-bit trip count makes a 64-bit induction variable.
BOOST_AUTO_TEST_CASE(loop_with_i64_bounds) {
  auto k = tritium::kernel("i64_loop", [](tl::ptr<int64_t> out, tl::i64 start, tl::i64 end, tl::i64 step) {
    auto s = tl::full({}, 0, tl::int64);
    for (auto i : tl::range(start, end, step)) s = s + i;
    tl::store(out, s);
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    int64_t start = (int64_t(1) << 33) + 5, end = start + 1000, step = 3;
    int64_t ref = 0;
    for (int64_t i = start; i < end; i += step) ref += i;
    auto out = be.alloc_poisoned<int64_t>(1);
    k[{1}](out.ptr(), start, end, step, be.options());
    tt::check_equal<int64_t>(out.download(), tt::host_vector<int64_t>{ref}, "sum over an i64 range");
  });
}

// (a, b) = (b, a): swapping two carried values each iteration, and (a, b) = (b, a + b).
BOOST_AUTO_TEST_CASE(swap_carried_values) {
  auto k = tritium::kernel("swap", [](tl::ptr<float> xa, tl::ptr<float> xb, tl::ptr<float> oa, tl::ptr<float> ob,
                                      tl::ptr<int64_t> fib, tl::ptr<int32_t> fib_block, tl::i32 n, int BLOCK) {
    auto offs = tl::arange(0, BLOCK);
    auto a = tl::load(xa + offs), b = tl::load(xb + offs);
    auto sa = tl::full({}, 1, tl::int32), sb = tl::full({}, 2, tl::int32);
    auto f0 = tl::full({}, 0, tl::int64), f1 = tl::full({}, 1, tl::int64);
    auto g0 = tl::zeros({BLOCK}, tl::int32), g1 = offs;
    for (auto i : tl::range(0, n)) {
      (void)i;
      auto t = a;
      a = b;
      b = t;
      auto st = sa;
      sa = sb;
      sb = st;
      auto f2 = f0 + f1;
      f0 = f1;
      f1 = f2;
      auto g2 = g0 + g1;
      g0 = g1;
      g1 = g2;
    }
    tl::store(oa + offs, a + (sa * 0).to(tl::float32));
    tl::store(ob + offs, b + (sb - 2 * sb + sb).to(tl::float32));
    tl::store(fib, f0);
    tl::store(fib_block + offs, g0);
    tl::device_assert(sa + sb == 3, "the scalar swap lost a value");
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int BLOCK = 16;
    auto xa = tt::random_vector<float>(BLOCK, 400), xb = tt::random_vector<float>(BLOCK, 401);
    for (int n : {0, 1, 2, 7, 40}) {
      auto da = be.upload<float>(xa), db = be.upload<float>(xb);
      auto oa = be.alloc_poisoned<float>(BLOCK), ob = be.alloc_poisoned<float>(BLOCK);
      auto fib = be.alloc_poisoned<int64_t>(1);
      auto fibb = be.alloc_poisoned<int32_t>(BLOCK);
      k[{1}](da.ptr(), db.ptr(), oa.ptr(), ob.ptr(), fib.ptr(), fibb.ptr(), n, BLOCK, be.options());
      std::string what = "n " + std::to_string(n);
      tt::check_equal<float>(oa.download(), n % 2 ? xb : xa, what + ": a");
      tt::check_equal<float>(ob.download(), n % 2 ? xa : xb, what + ": b");
      int64_t f0 = 0, f1 = 1;
      for (int i = 0; i < n; ++i) std::tie(f0, f1) = std::pair(f1, f0 + f1);
      tt::check_equal<int64_t>(fib.download(), tt::host_vector<int64_t>{f0}, what + ": fibonacci");
      tt::host_vector<int32_t> g(BLOCK);
      for (int e = 0; e < BLOCK; ++e) {
        int32_t g0 = 0, g1 = e;
        for (int i = 0; i < n; ++i) std::tie(g0, g1) = std::pair(g1, int32_t(uint32_t(g0) + uint32_t(g1)));
        g[e] = g0;
      }
      tt::check_equal<int32_t>(fibb.download(), g, what + ": block fibonacci");
    }
  });
}

// Carried blocks whose new value reads the old one at other elements (a square transpose, a
// reshape) or reads another carried block: updating them in place would be wrong.
BOOST_AUTO_TEST_CASE(carried_blocks_reading_other_elements) {
  auto k = tritium::kernel("permuted_carry", [](tl::ptr<float> x, tl::ptr<float> out_t, tl::ptr<float> out_r,
                                                tl::ptr<float> out_a, tl::ptr<float> out_b, tl::i32 n, int B) {
    auto offs = tl::arange(0, B)(tl::_, tl::None) * B + tl::arange(0, B)(tl::None, tl::_);
    auto t = tl::load(x + offs);
    auto r = tl::load(x + tl::arange(0, B * B));
    auto a = tl::load(x + offs), b = tl::load(x + offs) * 0.5f;
    for (auto i : tl::range(0, n)) {
      (void)i;
      t = tl::trans(t) * 2.0f + 1.0f;
      r = tl::reshape(tl::trans(tl::reshape(r, {B, B})), {B * B}) - 0.25f;
      auto a_old = a;
      a = a + tl::trans(b);  // reads the other carried block at other elements
      b = b - a_old;
    }
    tl::store(out_t + offs, t);
    tl::store(out_r + tl::arange(0, B * B), r);
    tl::store(out_a + offs, a);
    tl::store(out_b + offs, b);
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int B = 8;
    auto x = tt::random_vector<float>(B * B, 1000);
    for (int n : {1, 2, 5}) {
      std::vector<double> t(x.begin(), x.end()), r = t, a = t, b(B * B);
      for (int e = 0; e < B * B; ++e) b[e] = 0.5 * x[e];
      for (int it = 0; it < n; ++it) {
        std::vector<double> t2(B * B), r2(B * B), a2(B * B), b2(B * B);
        for (int i = 0; i < B; ++i)
          for (int j = 0; j < B; ++j) {
            t2[i * B + j] = t[j * B + i] * 2 + 1;
            r2[i * B + j] = r[j * B + i] - 0.25;
            a2[i * B + j] = a[i * B + j] + b[j * B + i];
            b2[i * B + j] = b[i * B + j] - a[i * B + j];
          }
        t = t2, r = r2, a = a2, b = b2;
      }
      auto dx = be.upload<float>(x);
      auto ot = be.alloc_poisoned<float>(B * B), orr = be.alloc_poisoned<float>(B * B);
      auto oa = be.alloc_poisoned<float>(B * B), ob = be.alloc_poisoned<float>(B * B);
      k[{1}](dx.ptr(), ot.ptr(), orr.ptr(), oa.ptr(), ob.ptr(), n, B, be.options());
      std::string what = " after " + std::to_string(n) + " iterations";
      tt::check_close<float>(ot.download(), t, 1e-6, "t = trans(t) * 2 + 1" + what);
      tt::check_close<float>(orr.download(), r, 1e-6, "r = reshape(trans(reshape(r))) - 0.25" + what);
      tt::check_close<float>(oa.download(), a, 1e-6, "a = a + trans(b)" + what);
      tt::check_close<float>(ob.download(), b, 1e-6, "b = b - a_old" + what);
    }
  });
}

// ---- branches ----------------------------------------------------------------------------------------

// tl::if_ on program_id and on an argument, with block and scalar results; one if_ has no else.
BOOST_AUTO_TEST_CASE(if_on_program_id_and_argument) {
  auto k = tritium::kernel("branches", [](tl::ptr<float> x, tl::ptr<float> out, tl::ptr<int32_t> out_s, tl::i32 flag,
                                          int BLOCK) {
    auto pid = tl::program_id(0);
    auto offs = pid * BLOCK + tl::arange(0, BLOCK);
    auto v = tl::load(x + offs);
    auto s = pid;
    tl::if_(
        pid % 2 == 0,
        [&] {
          v = v * 2.0f;
          s = s * 10;
        },
        [&] {
          v = v + 1.0f;
          s = s - 100;
        });
    tl::if_(flag != 0, [&] { v = -v; });
    tl::if_(pid == 3, [&] { s = s + 1000; }, [&] {});
    tl::store(out + offs, v);
    tl::store(out_s + pid, s);
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int BLOCK = 32, P = 6;
    auto x = tt::random_vector<float>(P * BLOCK, 500);
    for (int flag : {0, 1}) {
      std::vector<double> ref(P * BLOCK);
      tt::host_vector<int32_t> ref_s(P);
      for (int p = 0; p < P; ++p) {
        for (int e = 0; e < BLOCK; ++e) {
          double v = x[p * BLOCK + e];
          v = p % 2 == 0 ? v * 2 : v + 1;
          ref[p * BLOCK + e] = flag ? -v : v;
        }
        ref_s[p] = (p % 2 == 0 ? p * 10 : p - 100) + (p == 3 ? 1000 : 0);
      }
      auto dx = be.upload<float>(x);
      auto out = be.alloc_poisoned<float>(P * BLOCK);
      auto outs = be.alloc_poisoned<int32_t>(P);
      k[{P}](dx.ptr(), out.ptr(), outs.ptr(), flag, BLOCK, be.options());
      tt::check_close<float>(out.download(), ref, 1e-7, "block results, flag " + std::to_string(flag));
      tt::check_equal<int32_t>(outs.download(), ref_s, "scalar results, flag " + std::to_string(flag));
    }
  });
}

// Stores and loads inside branches (side effects only on the taken side).
BOOST_AUTO_TEST_CASE(if_with_side_effects) {
  auto k = tritium::kernel("branch_store", [](tl::ptr<int32_t> out, tl::i32 threshold, int BLOCK) {
    auto pid = tl::program_id(0);
    auto offs = pid * BLOCK + tl::arange(0, BLOCK);
    tl::if_(pid < threshold, [&] { tl::store(out + offs, offs); }, [&] { tl::store(out + offs, -offs); });
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int BLOCK = 16, P = 8;
    for (int threshold : {0, 3, 8}) {
      auto out = be.alloc_poisoned<int32_t>(P * BLOCK);
      k[{P}](out.ptr(), threshold, BLOCK, be.options());
      tt::host_vector<int32_t> ref(P * BLOCK);
      for (int i = 0; i < P * BLOCK; ++i) ref[i] = i / BLOCK < threshold ? i : -i;
      tt::check_equal<int32_t>(out.download(), ref, "threshold " + std::to_string(threshold));
    }
  });
}

// tl::if_ inside a tl::range loop, on the induction variable, updating block and scalar state.
BOOST_AUTO_TEST_CASE(if_inside_loop) {
  auto k = tritium::kernel("loop_if", [](tl::ptr<float> x, tl::ptr<float> out, tl::ptr<int32_t> out_s, tl::i32 n, int BLOCK) {
    auto offs = tl::arange(0, BLOCK);
    auto acc = tl::zeros({BLOCK}, tl::float32);
    auto s = tl::full({}, 0, tl::int32);
    for (auto i : tl::range(0, n)) {
      auto v = tl::load(x + i * BLOCK + offs);
      tl::if_(
          i % 3 == 0,
          [&] {
            acc += v;
            s += i;
          },
          [&] {
            acc = acc - v * 0.5f;
            s -= 1;
          });
    }
    tl::store(out + offs, acc);
    tl::store(out_s, s);
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int BLOCK = 32;
    for (int n : {0, 1, 10}) {
      auto x = tt::random_vector<float>(size_t(std::max(n, 1)) * BLOCK, 600 + n);
      std::vector<double> ref(BLOCK, 0.0);
      int32_t s = 0;
      for (int i = 0; i < n; ++i) {
        for (int e = 0; e < BLOCK; ++e) ref[e] = i % 3 == 0 ? ref[e] + x[i * BLOCK + e] : ref[e] - 0.5 * x[i * BLOCK + e];
        s = i % 3 == 0 ? s + i : s - 1;
      }
      auto dx = be.upload<float>(x);
      auto out = be.alloc_poisoned<float>(BLOCK);
      auto outs = be.alloc_poisoned<int32_t>(1);
      k[{1}](dx.ptr(), out.ptr(), outs.ptr(), n, BLOCK, be.options());
      tt::check_close<float>(out.download(), ref, 1e-6, "n " + std::to_string(n));
      tt::check_equal<int32_t>(outs.download(), tt::host_vector<int32_t>{s}, "scalar, n " + std::to_string(n));
    }
  });
}

// A run-time loop inside a branch.
BOOST_AUTO_TEST_CASE(loop_inside_if) {
  auto k = tritium::kernel("if_loop", [](tl::ptr<int32_t> out, tl::i32 n) {
    auto pid = tl::program_id(0);
    auto s = tl::full({}, 0, tl::int32);
    tl::if_(pid % 2 == 1, [&] {
      for (auto i : tl::range(0, n)) s += i + pid;
    }, [&] { s = -pid; });
    tl::store(out + pid, s);
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int P = 5, n = 7;
    auto out = be.alloc_poisoned<int32_t>(P);
    k[{P}](out.ptr(), n, be.options());
    tt::host_vector<int32_t> ref(P);
    for (int p = 0; p < P; ++p) ref[p] = p % 2 == 1 ? n * (n - 1) / 2 + n * p : -p;
    tt::check_equal<int32_t>(out.download(), ref, "loop in a branch");
  });
}

// Loop bounds and branch conditions computed from data: a loaded trip count, a reduction result.
BOOST_AUTO_TEST_CASE(data_dependent_bounds_and_conditions) {
  auto k = tritium::kernel("data_dependent", [](tl::ptr<int32_t> counts, tl::ptr<float> x, tl::ptr<float> out, int BLOCK) {
    auto pid = tl::program_id(0);
    auto n = tl::load(counts + pid);
    auto offs = tl::arange(0, BLOCK);
    auto acc = tl::zeros({BLOCK}, tl::float32);
    for (auto i : tl::range(0, n)) acc += tl::load(x + (pid * 8 + i) * BLOCK + offs);
    auto total = tl::sum(acc, 0);
    tl::if_(total > 0.0f, [&] { acc = acc / total; }, [&] { acc = -acc; });
    tl::store(out + pid * BLOCK + offs, acc);
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int BLOCK = 32, P = 6;
    tt::host_vector<int32_t> counts = {0, 3, 8, 1, 5, 2};
    auto x = tt::random_vector<float>(size_t(P) * 8 * BLOCK, 900, -0.5, 1.0);
    std::vector<double> ref(P * BLOCK, 0.0);
    for (int p = 0; p < P; ++p) {
      double total = 0;
      for (int i = 0; i < counts[p]; ++i)
        for (int e = 0; e < BLOCK; ++e) ref[p * BLOCK + e] += x[(size_t(p) * 8 + i) * BLOCK + e];
      for (int e = 0; e < BLOCK; ++e) total += ref[p * BLOCK + e];
      for (int e = 0; e < BLOCK; ++e) ref[p * BLOCK + e] = total > 0 ? ref[p * BLOCK + e] / total : -ref[p * BLOCK + e];
    }
    auto dc = be.upload<int32_t>(counts);
    auto dx = be.upload<float>(x);
    auto out = be.alloc_poisoned<float>(P * BLOCK);
    k[{P}](dc.ptr(), dx.ptr(), out.ptr(), BLOCK, be.options());
    tt::check_close<float>(out.download(), ref, 1e-5, "loaded trip counts, branch on a sum");
  });
}

// The online-softmax pattern: a running max and a rescaled running sum carried as scalars
// through a loop over chunks, then a second loop writing the normalised row.
BOOST_AUTO_TEST_CASE(online_softmax_carried_reductions) {
  auto k = tritium::kernel("online_softmax", [](tl::ptr<float> x, tl::ptr<float> out, tl::i32 n, int BLOCK) {
    auto row = tl::program_id(0);
    auto m = tl::full({}, -INFINITY, tl::float32);
    auto l = tl::full({}, 0.0f, tl::float32);
    for (auto start : tl::range(0, n, BLOCK)) {
      auto offs = start + tl::arange(0, BLOCK);
      auto v = tl::load(x + row * n + offs, offs < n, -INFINITY);
      auto m_new = tl::maximum(m, tl::max(v, 0));
      l = l * tl::exp(m - m_new) + tl::sum(tl::exp(v - m_new), 0);
      m = m_new;
    }
    for (auto start : tl::range(0, n, BLOCK)) {
      auto offs = start + tl::arange(0, BLOCK);
      auto v = tl::load(x + row * n + offs, offs < n, -INFINITY);
      tl::store(out + row * n + offs, tl::exp(v - m) / l, offs < n);
    }
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int rows = 4;
    for (int n : {1000, 64, 5}) {
      auto x = tt::random_vector<float>(size_t(rows) * n, 950 + n, -8, 8);
      std::vector<double> ref(size_t(rows) * n);
      for (int r = 0; r < rows; ++r) {
        double m = -INFINITY, s = 0;
        for (int i = 0; i < n; ++i) m = std::max<double>(m, x[size_t(r) * n + i]);
        for (int i = 0; i < n; ++i) s += std::exp(x[size_t(r) * n + i] - m);
        for (int i = 0; i < n; ++i) ref[size_t(r) * n + i] = std::exp(x[size_t(r) * n + i] - m) / s;
      }
      auto dx = be.upload<float>(x);
      auto out = be.alloc_poisoned<float>(size_t(rows) * n);
      k[{rows}](dx.ptr(), out.ptr(), n, 64, be.options());
      tt::check_close<float>(out.download(), ref, 1e-5, "n " + std::to_string(n));
    }
  });
}

// ---- compile-time loops -------------------------------------------------------------------------------

// A plain C++ loop is unrolled at trace time: no run-time loop in the IR, same result.
BOOST_AUTO_TEST_CASE(compile_time_loops) {
  auto k = tritium::kernel("unrolled", [](tl::ptr<float> x, tl::ptr<float> out, int UNROLL, int BLOCK) {
    auto offs = tl::arange(0, BLOCK);
    auto acc = tl::zeros({BLOCK}, tl::float32);
    for (int i = 0; i < UNROLL; ++i) acc = acc * 2.0f + tl::load(x + i * BLOCK + offs);
    tl::store(out + offs, acc);
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int BLOCK = 64;
    for (int unroll : {1, 4}) {
      auto x = tt::random_vector<float>(size_t(unroll) * BLOCK, 700 + unroll);
      std::vector<double> ref(BLOCK, 0.0);
      for (int i = 0; i < unroll; ++i)
        for (int e = 0; e < BLOCK; ++e) ref[e] = ref[e] * 2 + x[i * BLOCK + e];
      auto dx = be.upload<float>(x);
      auto out = be.alloc_poisoned<float>(BLOCK);
      k[{1}](dx.ptr(), out.ptr(), unroll, BLOCK, be.options());
      tt::check_close<float>(out.download(), ref, 1e-6, "unroll " + std::to_string(unroll));
      std::string ir = k.ir(dx.ptr(), out.ptr(), unroll, BLOCK);
      BOOST_TEST(ir.find(" for ") == std::string::npos, "an unrolled C++ loop left a run-time loop:\n" << ir);
      size_t loads = 0;
      for (size_t p = ir.find("load"); p != std::string::npos; p = ir.find("load", p + 1)) ++loads;
      BOOST_TEST(loads == size_t(unroll), "expected one load per unrolled iteration:\n" << ir);
    }
  });
}

// A carried value whose type changes is a trace error naming the loop's line.
BOOST_AUTO_TEST_CASE(loop_carried_type_change_is_an_error) {
  unsigned line = 0;
  auto k = tritium::kernel("bad_loop", [&line](tl::ptr<float> out, tl::i32 n) {
    auto s = tl::full({}, 0, tl::int32);
    line = __LINE__ + 1;
    for (auto i : tl::range(0, n)) s = s + i.to(tl::float32);
    tl::store(out, s);
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    auto out = be.alloc_poisoned<float>(1);
    std::string msg = tt::check_throws([&] { k[{1}](out.ptr(), 3, be.options()); },
                                       {"tl::range", "changes type", "i32", "f32"}, "loop-carried type change");
    BOOST_TEST(line > 0u);
    BOOST_TEST(msg.find(tt::file_line(__FILE__, line)) != std::string::npos, "the error does not name the loop's line: " << msg);
  });
}

// ---- while loops --------------------------------------------------------------------------------

// A data-dependent trip count: Collatz steps of a per-program start value, and a loop whose
// condition is false at once (the carried values keep their inits).
BOOST_AUTO_TEST_CASE(while_loop_with_data_dependent_trips) {
  auto k = tritium::kernel("collatz", [](tl::ptr<int64_t> starts, tl::ptr<int32_t> steps, tl::ptr<int64_t> peaks) {
    auto pid = tl::program_id(0);
    auto x = tl::load(starts + pid);
    auto n = tl::full({}, 0, tl::int32);
    auto peak = x;
    auto offs = tl::arange(0, 32);  // a block read (not carried) inside the loop
    auto ones = tl::full({32}, 1, tl::int64);
    tl::while_([&] { return x != 1; },
               [&] {
                 x = tl::where(x % 2 == 0, x / 2, 3 * x + tl::sum(ones * (offs == 0).to(tl::int64), 0));
                 peak = tl::maximum(peak, x);
                 n += 1;
               });
    tl::store(steps + pid, n);
    tl::store(peaks + pid, peak);
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    std::vector<int64_t> starts = {1, 2, 3, 7, 27, 97, 871, 77031};
    const int P = static_cast<int>(starts.size());
    tt::DeviceArray<int64_t> in(be.device, starts);
    auto steps = be.alloc_poisoned<int32_t>(P);
    auto peaks = be.alloc_poisoned<int64_t>(P);
    k[{P}](in.ptr(), steps.ptr(), peaks.ptr(), be.options());
    std::vector<int32_t> want_steps;
    std::vector<int64_t> want_peaks;
    for (int64_t x : starts) {
      int32_t n = 0;
      int64_t peak = x;
      while (x != 1) x = x % 2 == 0 ? x / 2 : 3 * x + 1, peak = std::max(peak, x), ++n;
      want_steps.push_back(n), want_peaks.push_back(peak);
    }
    tt::check_equal<int32_t>(steps.download(), want_steps, "Collatz steps");
    tt::check_equal<int64_t>(peaks.download(), want_peaks, "Collatz peaks");
  });
}

// Triton's spin lock: `while tl.atomic_cas(lock, 0, 1) == 1: pass`. Every program adds its id
// to a counter with a plain load and store under the lock; a lost update would show.
BOOST_AUTO_TEST_CASE(while_loop_spin_lock) {
  auto k = tritium::kernel("locked_add", [](tl::ptr<int32_t> lock, tl::ptr<int32_t> total, tl::ptr<int32_t> trips) {
    auto pid = tl::program_id(0);
    auto spins = tl::full({}, 0, tl::int32);
    tl::while_([&] { return tl::atomic_cas(lock, 0, 1) == 1; }, [&] { spins += 1; });
    tl::store(total, tl::load(total) + pid + 1);
    tl::atomic_xchg(lock, 0);
    tl::store(trips + pid, spins);
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int P = 512;
    tt::DeviceArray<int32_t> lock(be.device, std::vector<int32_t>{0}), total(be.device, std::vector<int32_t>{0});
    auto trips = be.alloc_poisoned<int32_t>(P);
    k[{P}](lock.ptr(), total.ptr(), trips.ptr(), be.options());
    tt::check_equal<int32_t>(total.download(), std::vector<int32_t>{P * (P + 1) / 2}, "sum under the lock");
    tt::check_equal<int32_t>(lock.download(), std::vector<int32_t>{0}, "lock released");
    for (int32_t t : trips.download()) BOOST_TEST(t >= 0);  // written by every program (the poison is negative)
  });
}

BOOST_AUTO_TEST_CASE(while_loop_misuse_is_an_error) {
  auto carries_block = tritium::kernel("while_block", [](tl::ptr<float> out, tl::i32 n) {
    auto acc = tl::zeros({16}, tl::float32);
    auto i = tl::full({}, 0, tl::int32);
    tl::while_([&] { return i < n; }, [&] { acc = acc + 1.0f; i += 1; });
    tl::store(out + tl::arange(0, 16), acc);
  });
  auto changes_type = tritium::kernel("while_type", [](tl::ptr<float> out, tl::i32 n) {
    auto i = tl::full({}, 0, tl::int32);
    tl::while_([&] { return i < n; }, [&] { i = i.to(tl::float32) + 1.0f; });
    tl::store(out, i);
  });
  auto assigning_cond = tritium::kernel("while_cond", [](tl::ptr<int32_t> out, tl::i32 n) {
    auto i = tl::full({}, 0, tl::int32);
    tl::while_([&] { i += 1; return i < n; }, [] {});
    tl::store(out, i);
  });
  auto block_cond = tritium::kernel("while_block_cond", [](tl::ptr<int32_t> out) {
    auto offs = tl::arange(0, 16);
    tl::while_([&] { return offs < 3; }, [] {});
    tl::store(out, 0);
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    auto f = be.alloc_poisoned<float>(16);
    auto i = be.alloc_poisoned<int32_t>(1);
    tt::check_throws([&] { carries_block[{1}](f.ptr(), 3, be.options()); },
                     {"tl::while_", "[16]f32", "only scalars", "tl::range"}, "carried block");
    tt::check_throws([&] { changes_type[{1}](f.ptr(), 3, be.options()); }, {"tl::while_", "changes type", "i32", "f32"},
                     "type change");
    tt::check_throws([&] { assigning_cond[{1}](i.ptr(), 3, be.options()); },
                     {"tl::while_", "condition reassigns"}, "condition with an assignment");
    tt::check_throws([&] { block_cond[{1}](i.ptr(), be.options()); }, {"tl::while_", "must be a scalar"},
                     "block condition");
  });
}

// ---- device_print and device_assert -----------------------------------------------------------------

BOOST_AUTO_TEST_CASE(device_print_output) {
  auto k = tritium::kernel("printer", [](tl::ptr<int32_t> x, tl::ptr<float> y, int BLOCK) {
    auto pid = tl::program_id(0);
    auto offs = pid * BLOCK + tl::arange(0, BLOCK);
    tl::device_print("x", tl::load(x + offs));
    tl::device_print("pid", pid);
    tl::device_print("pair", {tl::load(y + offs), offs});
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int BLOCK = 4, P = 2;
    tt::host_vector<int32_t> x = {5, -3, 12, 0, 7, 8, -9, 100};
    tt::host_vector<float> y = {0.5f, -1.25f, 3.0f, 2.5f, -0.125f, 10.0f, 1.5f, -4.0f};
    auto dx = be.upload<int32_t>(x);
    auto dy = be.upload<float>(y);
    auto lines = capture_stdout_lines([&] { k[{P}](dx.ptr(), dy.ptr(), BLOCK, be.options()); });
    std::vector<std::string> expected;
    auto fmt_float = [](float f) {
      std::ostringstream os;
      os << f;
      return os.str();
    };
    for (int p = 0; p < P; ++p) {
      std::string pid = "pid (" + std::to_string(p) + ", 0, 0)";
      for (int i = 0; i < BLOCK; ++i) {
        std::string idx = " idx (" + std::to_string(i) + ")";
        expected.push_back(pid + idx + " x " + std::to_string(x[p * BLOCK + i]));
        expected.push_back(pid + idx + " pair " + fmt_float(y[p * BLOCK + i]));
        expected.push_back(pid + idx + " pair (operand 1) " + std::to_string(p * BLOCK + i));
      }
      expected.push_back(pid + " pid " + std::to_string(p));
    }
    std::sort(expected.begin(), expected.end());
    std::sort(lines.begin(), lines.end());
    BOOST_TEST(lines.size() == expected.size());
    for (size_t i = 0; i < std::min(lines.size(), expected.size()); ++i)
      BOOST_TEST(lines[i] == expected[i], "line " << i);
    // Lines of one program keep their order: its x lines come before its pid line.
    auto unsorted = capture_stdout_lines([&] { k[{1}](dx.ptr(), dy.ptr(), BLOCK, be.options()); });
    BOOST_TEST_REQUIRE(unsorted.size() == size_t(3 * BLOCK + 1));
    for (int i = 0; i < BLOCK; ++i)
      BOOST_TEST(unsorted[i] == "pid (0, 0, 0) idx (" + std::to_string(i) + ") x " + std::to_string(x[i]));
    BOOST_TEST(unsorted[BLOCK] == "pid (0, 0, 0) pid 0");
  });
}

// device_print inside a run-time loop prints once per iteration; f16 values print as numbers.
BOOST_AUTO_TEST_CASE(device_print_in_loop) {
  auto k = tritium::kernel("loop_printer", [](tl::ptr<f16_t> h, tl::i32 n) {
    auto v = tl::load(h);
    for (auto i : tl::range(0, n)) {
      tl::device_print("it", i);
      v = v * 2;
    }
    tl::device_print("h", v);
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    auto dh = be.upload<f16_t>(tt::host_vector<f16_t>{tt::to_f16(-1.5f)});
    auto lines = capture_stdout_lines([&] { k[{1}](dh.ptr(), 3, be.options()); });
    std::vector<std::string> expected = {"pid (0, 0, 0) it 0", "pid (0, 0, 0) it 1", "pid (0, 0, 0) it 2",
                                         "pid (0, 0, 0) h -12"};
    BOOST_TEST(lines == expected, boost::test_tools::per_element());
  });
}

BOOST_AUTO_TEST_CASE(device_assert_pass_and_fail) {
  tt::DebugModeScope debug;  // device_assert is compiled in only in debug mode, as in Triton
  auto k = tritium::kernel("checked", [](tl::ptr<int32_t> x, tl::ptr<int32_t> out, tl::i32 n, int BLOCK) {
    auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    auto mask = offs < n;
    auto v = tl::load(x + offs, mask, 1);
    tl::device_assert(v > 0, "values must be positive");
    tl::device_assert(tl::program_id(0) < tl::num_programs(0));
    tl::store(out + offs, v * 2, mask);
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int n = 100, BLOCK = 32;
    auto x = tt::random_vector<int32_t>(n, 800, 1, 1000);
    auto dx = be.upload<int32_t>(x);
    auto out = be.alloc_poisoned<int32_t>(n);
    BOOST_CHECK_NO_THROW(k[{tritium::cdiv(n, BLOCK)}](dx.ptr(), out.ptr(), n, BLOCK, be.options()));
    tt::host_vector<int32_t> ref(n);
    for (int i = 0; i < n; ++i) ref[i] = 2 * x[i];
    tt::check_equal<int32_t>(out.download(), ref, "output of a passing device_assert kernel");

    x[77] = -5;
    auto dbad = be.upload<int32_t>(x);
    auto out2 = be.alloc_poisoned<int32_t>(n);
    tt::check_throws([&] { k[{tritium::cdiv(n, BLOCK)}](dbad.ptr(), out2.ptr(), n, BLOCK, be.options()); },
                     {"values must be positive", "checked"}, "failing device_assert");
  });
}

BOOST_AUTO_TEST_SUITE_END()
