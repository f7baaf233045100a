// Atomics under the threaded grid: many programs (and many lanes of one program) hitting the same
// addresses. Float data is chosen so that every order of additions gives the same exact result,
// so all checks are exact.
#include "scatter_rows_kernel.h"
#include "test_support.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace tl = tritium::tl;
namespace tt = tritium::test;
using tritium::f16_t;
using tritium::bf16_t;

namespace {

// Random multiples of `step` in [-range, range] (exact in every float type used below).
template <class T> tt::host_vector<T> random_steps(size_t n, uint32_t seed, int range, double step) {
  auto k = tt::random_vector<int32_t>(n, seed, -range, range);
  tt::host_vector<T> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = tt::from_double<T>(k[i] * step);
  return v;
}

// ---- atomic_add: one global sum --------------------------------------------------------------------

// SCALAR: each program adds tl::sum of its block with one scalar atomic; otherwise every lane adds
// its own value to the same address (a block of identical pointers).
template <class T>
tritium::Kernel& global_sum_kernel() {
  static tritium::Kernel k = tritium::kernel("global_sum", [](tl::ptr<T> x, tl::ptr<T> out, tl::i32 n, int BLOCK, bool SCALAR) {
    auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    auto mask = offs < n;
    auto v = tl::load(x + offs, mask, 0);
    if (SCALAR) tl::atomic_add(out, tl::sum(v, 0).to(tritium::dtype_of<T>()));
    else tl::atomic_add(out + tl::zeros({BLOCK}, tl::int32), v, mask);
  });
  return k;
}

template <class T> void global_sum_case(const tt::Backend& be, int n, tt::host_vector<T> x) {
  double ref = 0;
  for (auto& v : x) ref += tt::to_double(v);
  for (bool scalar : {false, true}) {
    BOOST_TEST_CONTEXT(tritium::dtype_name(tritium::dtype_of<T>()) << " n " << n << (scalar ? " scalar atomic of tl::sum" : " block atomic")) {
      auto dx = be.template upload<T>(x);
      auto out = be.template upload<T>(tt::host_vector<T>{tt::from_double<T>(0)});
      global_sum_kernel<T>()[{tritium::cdiv(n, 64)}](dx.ptr(), out.ptr(), n, 64, scalar, be.options());
      tt::check_equal<T>(out.download(), tt::host_vector<T>{tt::from_double<T>(ref)}, "sum");
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(test_atomics)

BOOST_AUTO_TEST_CASE(atomic_add_global_sum) {
  tt::for_each_backend([](const tt::Backend& be) {
    const int n = 100003;  // ~1563 programs
    global_sum_case<int32_t>(be, n, tt::random_vector<int32_t>(n, 1, -1000, 1000));
    auto big = tt::random_vector<int64_t>(n, 2, -(int64_t(1) << 40), int64_t(1) << 40);
    global_sum_case<int64_t>(be, n, big);
    global_sum_case<float>(be, n, random_steps<float>(n, 3, 64, 0.125));
    global_sum_case<double>(be, n, random_steps<double>(n, 4, 1 << 20, 1.0 / 1024));
    // f16: halves whose partial sums stay below 1024 in magnitude, so every order is exact.
    global_sum_case<f16_t>(be, 1000, random_steps<f16_t>(1000, 5, 2, 0.5));
    // bf16 (the sm_90 instruction; a CAS loop elsewhere): integers whose partial sums stay within
    // +-250, exact in bf16's 8 bits in every order; every lane of a program on one address.
    global_sum_case<bf16_t>(be, 250, random_steps<bf16_t>(250, 6, 1, 1.0));
  });
}

// A histogram: lanes of one program and many programs increment the same bins.
BOOST_AUTO_TEST_CASE(atomic_add_histogram) {
  auto hist = tritium::kernel("histogram", [](tl::ptr<int32_t> keys, tl::ptr<int32_t> bins, tl::i32 n, int BLOCK) {
    auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    auto mask = offs < n;
    auto key = tl::load(keys + offs, mask);
    tl::atomic_add(bins + key, 1, mask);
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    for (int nbins : {64, 3}) {
      const int n = 50001;
      auto keys = tt::random_vector<int32_t>(n, 10 + nbins, 0, nbins - 1);
      tt::host_vector<int32_t> ref(nbins, 0);
      for (int32_t k : keys) ++ref[k];
      auto dk = be.upload<int32_t>(keys);
      auto db = be.upload<int32_t>(tt::host_vector<int32_t>(nbins, 0));
      hist[{tritium::cdiv(n, 128)}](dk.ptr(), db.ptr(), n, 128, be.options());
      tt::check_equal<int32_t>(db.download(), ref, std::to_string(nbins) + " bins");
    }
  });
}

// Rows scattered into a table with collisions (an embedding backward): the CUDA generator adds
// contiguous lanes with vector reductions (test_cuda_codegen_atomics); rows of 400 and 100 leave a
// masked tail (100: one lane a thread), SPARSE a mask that varies lane by lane. Halves within +-4, at most a few dozen a row:
// every order is exact in bf16's 8 bits.
template <class T> void scatter_rows_case(const tt::Backend& be, int N, bool sparse) {
  const int P = 96, R = 8, BLOCK = N <= 128 ? 128 : N <= 512 ? 512 : 1024;
  auto idx = tt::random_vector<int64_t>(P, 30 + N, 0, R - 1);
  auto src = random_steps<T>(size_t(P) * N, 31 + N, 8, 0.5), init = random_steps<T>(size_t(R) * N, 32 + N, 8, 0.5);
  std::vector<double> ref(size_t(R) * N);
  for (size_t i = 0; i < ref.size(); ++i) ref[i] = tt::to_double(init[i]);
  for (int p = 0; p < P; ++p)
    for (int c = 0; c < N; ++c)
      if (!sparse || c % 3 != 0) ref[size_t(idx[p] * N + c)] += tt::to_double(src[size_t(p) * N + c]);
  tt::host_vector<T> want(ref.size());
  for (size_t i = 0; i < ref.size(); ++i) want[i] = tt::from_double<T>(ref[i]);
  auto table = be.upload<T>(init), dsrc = be.upload<T>(src);
  auto didx = be.upload<int64_t>(idx);
  tt::scatter_rows_kernel<T>()[{P}](table.ptr(), dsrc.ptr(), didx.ptr(), N, BLOCK, sparse, be.options());
  tt::check_equal<T>(table.download(), want,
                     fmt::format("{} rows of {}{}", tritium::dtype_name(tritium::dtype_of<T>()), N, sparse ? " sparse" : ""));
}

BOOST_AUTO_TEST_CASE(row_scatter_add) {
  tt::for_each_backend([](const tt::Backend& be) {
    for (int N : {1024, 400, 100})
      for (bool sparse : {false, true}) {
        scatter_rows_case<f16_t>(be, N, sparse);
        scatter_rows_case<bf16_t>(be, N, sparse);
        scatter_rows_case<float>(be, N, sparse);
      }
  });
}

// Returned old values: tickets from one counter are a permutation of 0..N-1.
BOOST_AUTO_TEST_CASE(atomic_add_returns_old_values) {
  auto tickets = tritium::kernel("tickets", [](tl::ptr<int32_t> counter, tl::ptr<int32_t> out, tl::i32 n, int BLOCK, bool SCALAR) {
    auto pid = tl::program_id(0);
    if (SCALAR) {
      tl::store(out + pid, tl::atomic_add(counter, 1));
    } else {
      auto offs = pid * BLOCK + tl::arange(0, BLOCK);
      auto mask = offs < n;
      tl::store(out + offs, tl::atomic_add(counter + tl::zeros({BLOCK}, tl::int32), 1, mask), mask);
    }
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    for (bool scalar : {true, false}) {
      const int n = scalar ? 2000 : 30001;
      auto counter = be.upload<int32_t>(tt::host_vector<int32_t>{0});
      auto out = be.alloc_poisoned<int32_t>(n);
      tickets[{scalar ? n : tritium::cdiv(n, 32)}](counter.ptr(), out.ptr(), n, 32, scalar, be.options());
      auto got = out.download();
      std::sort(got.begin(), got.end());
      tt::host_vector<int32_t> ref(n);
      for (int i = 0; i < n; ++i) ref[i] = i;
      tt::check_equal<int32_t>(got, ref, scalar ? "scalar tickets (sorted)" : "block tickets (sorted)");
      tt::check_equal<int32_t>(counter.download(), tt::host_vector<int32_t>{n}, "final counter");
    }
  });
}

// Masked atomics on distinct addresses; the old values of enabled lanes are returned.
BOOST_AUTO_TEST_CASE(masked_atomics_and_old_values) {
  auto k = tritium::kernel("masked_add", [](tl::ptr<int32_t> data, tl::ptr<int32_t> vals, tl::ptr<int32_t> olds, tl::i32 n,
                                            int BLOCK) {
    auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    auto mask = (offs < n) && (offs % 3 != 0);
    auto old = tl::atomic_add(data + offs, tl::load(vals + offs, offs < n), mask);
    tl::store(olds + offs, old, mask);
  });
  auto kf = tritium::kernel("masked_add_f16", [](tl::ptr<f16_t> data, tl::ptr<f16_t> vals, tl::ptr<f16_t> olds, tl::i32 n,
                                                 int BLOCK) {
    auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    auto mask = (offs < n) && (offs % 2 == 0);
    tl::store(olds + offs, tl::atomic_add(data + offs, tl::load(vals + offs, offs < n), mask), mask);
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int n = 1000;
    auto init = tt::random_vector<int32_t>(n, 21, -1000, 1000), vals = tt::random_vector<int32_t>(n, 22, 1, 1000);
    auto data = be.upload<int32_t>(init), dv = be.upload<int32_t>(vals);
    auto olds = be.alloc_poisoned<int32_t>(n);
    k[{tritium::cdiv(n, 64)}](data.ptr(), dv.ptr(), olds.ptr(), n, 64, be.options());
    tt::host_vector<int32_t> ref = init, ref_old(n, tt::poison_value<int32_t>());
    for (int i = 0; i < n; ++i)
      if (i % 3 != 0) ref[i] += vals[i], ref_old[i] = init[i];
    tt::check_equal<int32_t>(data.download(), ref, "i32 data (lanes i % 3 == 0 masked off)");
    tt::check_equal<int32_t>(olds.download(), ref_old, "i32 returned old values");

    auto finit = random_steps<f16_t>(n, 23, 100, 0.25), fvals = random_steps<f16_t>(n, 24, 100, 0.25);
    auto fdata = be.upload<f16_t>(finit), dfv = be.upload<f16_t>(fvals);
    auto folds = be.alloc_poisoned<f16_t>(n);
    kf[{tritium::cdiv(n, 64)}](fdata.ptr(), dfv.ptr(), folds.ptr(), n, 64, be.options());
    tt::host_vector<f16_t> fref = finit, fref_old(n, tt::poison_value<f16_t>());
    for (int i = 0; i < n; i += 2)
      fref[i] = tt::from_double<f16_t>(tt::to_double(finit[i]) + tt::to_double(fvals[i])), fref_old[i] = finit[i];
    tt::check_equal<f16_t>(fdata.download(), fref, "f16 data (odd lanes masked off)");
    tt::check_equal<f16_t>(folds.download(), fref_old, "f16 returned old values");
  });
}

// Scalar atomics under a scalar mask: only even programs count, only odd programs take the max.
BOOST_AUTO_TEST_CASE(masked_scalar_atomics) {
  auto k = tritium::kernel("masked_scalar", [](tl::ptr<int32_t> counter, tl::ptr<float> best, tl::ptr<float> vals) {
    auto pid = tl::program_id(0);
    tl::atomic_add(counter, 1, pid % 2 == 0);
    tl::atomic_max(best, tl::load(vals + pid), pid % 2 == 1);
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int P = 501;
    auto vals = tt::random_vector<float>(P, 61, -100, 100);
    float ref_best = -INFINITY;
    for (int p = 1; p < P; p += 2) ref_best = std::max(ref_best, vals[p]);
    auto counter = be.upload<int32_t>(tt::host_vector<int32_t>{0});
    auto best = be.upload<float>(tt::host_vector<float>{-INFINITY});
    auto dv = be.upload<float>(vals);
    k[{P}](counter.ptr(), best.ptr(), dv.ptr(), be.options());
    tt::check_equal<int32_t>(counter.download(), tt::host_vector<int32_t>{(P + 1) / 2}, "masked scalar atomic_add");
    tt::check_equal<float>(best.download(), tt::host_vector<float>{ref_best}, "masked scalar atomic_max");
  });
}

// ---- atomic_max / atomic_min ------------------------------------------------------------------------

// P programs each apply row p of x [P, S] to the S slots.
template <class T>
tritium::Kernel& minmax_kernel() {
  static tritium::Kernel k = tritium::kernel("atomic_minmax", [](tl::ptr<T> x, tl::ptr<T> mx, tl::ptr<T> mn, int S) {
    auto cols = tl::arange(0, S);
    auto v = tl::load(x + tl::program_id(0) * S + cols);
    tl::atomic_max(mx + cols, v);
    tl::atomic_min(mn + cols, v);
  });
  return k;
}

template <class T> void minmax_case(const tt::Backend& be, const tt::host_vector<T>& x, int P, int S, const std::string& what) {
  T lowest, highest;
  if constexpr (std::is_floating_point_v<T>) lowest = -std::numeric_limits<T>::infinity(), highest = std::numeric_limits<T>::infinity();
  else lowest = std::numeric_limits<T>::min(), highest = std::numeric_limits<T>::max();
  tt::host_vector<T> rmax(S, lowest), rmin(S, highest);
  for (int p = 0; p < P; ++p)
    for (int s = 0; s < S; ++s) rmax[s] = std::max(rmax[s], x[p * S + s]), rmin[s] = std::min(rmin[s], x[p * S + s]);
  auto dx = be.template upload<T>(x);
  auto mx = be.template upload<T>(tt::host_vector<T>(S, lowest)), mn = be.template upload<T>(tt::host_vector<T>(S, highest));
  minmax_kernel<T>()[{P}](dx.ptr(), mx.ptr(), mn.ptr(), S, be.options());
  tt::check_equal<T>(mx.download(), rmax, what + " atomic_max");
  tt::check_equal<T>(mn.download(), rmin, what + " atomic_min");
}

BOOST_AUTO_TEST_CASE(atomic_max_min) {
  tt::for_each_backend([](const tt::Backend& be) {
    const int P = 300, S = 32;
    minmax_case<int32_t>(be, tt::random_vector<int32_t>(P * S, 31, -2e9, 2e9), P, S, "i32");
    minmax_case<int32_t>(be, tt::random_vector<int32_t>(P * S, 32, -1e6, -1), P, S, "i32 all negative");
    // Unsigned: values above 2^31 must compare as large, not as negative.
    minmax_case<uint32_t>(be, tt::random_vector<uint32_t>(P * S, 33, 0, 4294967295.0), P, S, "u32");
    minmax_case<int64_t>(be, tt::random_vector<int64_t>(P * S, 34, -9e18, 9e18), P, S, "i64");
    minmax_case<uint64_t>(be, tt::random_vector<uint64_t>(P * S, 35, 0, 1.8e19), P, S, "u64");
    minmax_case<float>(be, tt::random_vector<float>(P * S, 36, -100, 100), P, S, "f32");
    minmax_case<float>(be, tt::random_vector<float>(P * S, 37, -100, -0.001), P, S, "f32 all negative");
    minmax_case<double>(be, tt::random_vector<double>(P * S, 38, -1e10, 1e10), P, S, "f64");
  });
}

// ---- atomic_and / or / xor --------------------------------------------------------------------------

template <class T>
tritium::Kernel& bitwise_kernel() {
  static tritium::Kernel k = tritium::kernel("atomic_bitwise", [](tl::ptr<T> x, tl::ptr<T> a, tl::ptr<T> o, tl::ptr<T> e, int S) {
    auto cols = tl::arange(0, S);
    auto v = tl::load(x + tl::program_id(0) * S + cols);
    tl::atomic_and(a + cols, v);
    tl::atomic_or(o + cols, v);
    tl::atomic_xor(e + cols, v);
  });
  return k;
}

template <class T> void bitwise_case(const tt::Backend& be, uint32_t seed) {
  const int P = 200, S = 16;
  // Sparse bits for `or` and dense bits for `and`, so the results are neither all-ones nor zero.
  using L = std::numeric_limits<T>;
  auto x = tt::random_vector<T>(P * S, seed, static_cast<double>(L::min()), static_cast<double>(L::max()));
  auto x2 = tt::random_vector<T>(P * S, seed + 1, static_cast<double>(L::min()), static_cast<double>(L::max()));
  for (size_t i = 0; i < x.size(); ++i) x[i] = (i % 2) ? T(x[i] & x2[i] & (x[i] >> 3)) : T(x[i] | x2[i] | T(x2[i] << 5));
  auto xinit = tt::random_vector<T>(S, seed + 2, static_cast<double>(L::min()), static_cast<double>(L::max()));
  tt::host_vector<T> ra(S, T(~T(0))), ro(S, T(0)), re = xinit;
  for (int p = 0; p < P; ++p)
    for (int s = 0; s < S; ++s) ra[s] &= x[p * S + s], ro[s] |= x[p * S + s], re[s] ^= x[p * S + s];
  auto dx = be.template upload<T>(x);
  auto da = be.template upload<T>(tt::host_vector<T>(S, T(~T(0)))), dor = be.template upload<T>(tt::host_vector<T>(S, T(0)));
  auto de = be.template upload<T>(xinit);
  bitwise_kernel<T>()[{P}](dx.ptr(), da.ptr(), dor.ptr(), de.ptr(), S, be.options());
  std::string what = tritium::dtype_name(tritium::dtype_of<T>());
  tt::check_equal<T>(da.download(), ra, what + " atomic_and");
  tt::check_equal<T>(dor.download(), ro, what + " atomic_or");
  tt::check_equal<T>(de.download(), re, what + " atomic_xor");
}

BOOST_AUTO_TEST_CASE(atomic_and_or_xor) {
  tt::for_each_backend([](const tt::Backend& be) {
    bitwise_case<int32_t>(be, 41);
    bitwise_case<uint32_t>(be, 42);
    bitwise_case<int64_t>(be, 43);
    bitwise_case<uint64_t>(be, 44);
  });
}

// ---- atomic_xchg ------------------------------------------------------------------------------------

// Every program swaps its own id into one slot: the old values plus the final value are exactly
// the initial value and every id, each once.
BOOST_AUTO_TEST_CASE(atomic_xchg_chain) {
  auto k = tritium::kernel("xchg", [](tl::ptr<int32_t> slot, tl::ptr<float> fslot, tl::ptr<int32_t> olds,
                                      tl::ptr<float> folds) {
    auto pid = tl::program_id(0);
    tl::store(olds + pid, tl::atomic_xchg(slot, pid + 1));
    tl::store(folds + pid, tl::atomic_xchg(fslot, (pid + 1).to(tl::float32) * -0.5f));
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int P = 3000;
    auto slot = be.upload<int32_t>(tt::host_vector<int32_t>{-7});
    auto fslot = be.upload<float>(tt::host_vector<float>{1000.0f});
    auto olds = be.alloc_poisoned<int32_t>(P);
    auto folds = be.alloc_poisoned<float>(P);
    k[{P}](slot.ptr(), fslot.ptr(), olds.ptr(), folds.ptr(), be.options());
    auto all = olds.download();
    all.push_back(slot.download()[0]);
    std::sort(all.begin(), all.end());
    tt::host_vector<int32_t> ref{-7};
    for (int i = 1; i <= P; ++i) ref.push_back(i);
    tt::check_equal<int32_t>(all, ref, "i32 old values + final value (sorted)");
    auto fall = folds.download();
    fall.push_back(fslot.download()[0]);
    std::sort(fall.begin(), fall.end());
    tt::host_vector<float> fref{1000.0f};
    for (int i = 1; i <= P; ++i) fref.push_back(-0.5f * i);
    std::sort(fref.begin(), fref.end());
    tt::check_equal<float>(fall, fref, "f32 old values + final value (sorted)");
  });
}

// ---- atomic_cas ---------------------------------------------------------------------------------------

// A lock-free counter: each program retries compare-and-swap (cur -> cur + 1) in a run-time loop
// until it succeeds; the value it claimed is its ticket. P + 1 tries always suffice.
BOOST_AUTO_TEST_CASE(atomic_cas_counter) {
  auto k = tritium::kernel("cas_counter", [](tl::ptr<int32_t> counter, tl::ptr<int32_t> tickets, tl::ptr<int32_t> tries,
                                             tl::i32 max_tries) {
    auto pid = tl::program_id(0);
    auto cur = tl::full({}, 0, tl::int32);
    auto done = pid < 0;  // false
    auto used = tl::full({}, 0, tl::int32);
    for (auto i : tl::range(0, max_tries)) {
      (void)i;
      tl::if_(!done, [&] {
        auto expected = cur;
        auto prev = tl::atomic_cas(counter, expected, expected + 1);
        done = prev == expected;
        cur = prev;
        used = used + 1;
      });
    }
    tl::store(tickets + pid, tl::where(done, cur, -1));
    tl::store(tries + pid, used);
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int P = 400;
    auto counter = be.upload<int32_t>(tt::host_vector<int32_t>{0});
    auto tickets = be.alloc_poisoned<int32_t>(P), tries = be.alloc_poisoned<int32_t>(P);
    k[{P}](counter.ptr(), tickets.ptr(), tries.ptr(), P + 1, be.options());
    auto got = tickets.download();
    std::sort(got.begin(), got.end());
    tt::host_vector<int32_t> ref(P);
    for (int i = 0; i < P; ++i) ref[i] = i;
    tt::check_equal<int32_t>(got, ref, "claimed tickets (sorted)");
    tt::check_equal<int32_t>(counter.download(), tt::host_vector<int32_t>{P}, "final counter");
    auto t = tries.download();
    BOOST_TEST(*std::min_element(t.begin(), t.end()) >= 1);
    BOOST_TEST(*std::max_element(t.begin(), t.end()) <= P);
  });
}

// Block compare-and-swap: even lanes compare against the current value (and swap), odd lanes
// against a different one (and leave memory alone); every lane returns the current value.
BOOST_AUTO_TEST_CASE(atomic_cas_block) {
  auto k = tritium::kernel("cas_block", [](tl::ptr<int64_t> data, tl::ptr<int64_t> olds, int BLOCK) {
    auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    auto cur = tl::load(data + offs);
    auto cmp = tl::where(offs % 2 == 0, cur, cur + 1);
    tl::store(olds + offs, tl::atomic_cas(data + offs, cmp, offs.to(tl::int64) * 1000000007ll));
  });
  auto kf = tritium::kernel("cas_block_f32", [](tl::ptr<float> data, tl::ptr<float> olds, int BLOCK) {
    auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    auto cur = tl::load(data + offs);
    auto cmp = tl::where(offs % 2 == 0, cur, cur + 1.0f);
    tl::store(olds + offs, tl::atomic_cas(data + offs, cmp, offs.to(tl::float32) * -0.25f));
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int n = 256;
    auto init = tt::random_vector<int64_t>(n, 51, -1e15, 1e15);
    auto data = be.upload<int64_t>(init);
    auto olds = be.alloc_poisoned<int64_t>(n);
    k[{n / 64}](data.ptr(), olds.ptr(), 64, be.options());
    tt::host_vector<int64_t> ref = init;
    for (int i = 0; i < n; i += 2) ref[i] = int64_t(i) * 1000000007ll;
    tt::check_equal<int64_t>(data.download(), ref, "i64 data");
    tt::check_equal<int64_t>(olds.download(), init, "i64 returned old values");

    auto finit = tt::random_vector<float>(n, 52, -10, 10);
    auto fdata = be.upload<float>(finit);
    auto folds = be.alloc_poisoned<float>(n);
    kf[{n / 64}](fdata.ptr(), folds.ptr(), 64, be.options());
    tt::host_vector<float> fref = finit;
    for (int i = 0; i < n; i += 2) fref[i] = float(i) * -0.25f;
    tt::check_equal<float>(fdata.download(), fref, "f32 data");
    tt::check_equal<float>(folds.download(), finit, "f32 returned old values");
  });
}

// Split-K matmul: programs (tile, k-slice) atomically add [BM, BN] partial products into C under a
// 2-D mask. Inputs are small integers, so every order of the float additions is exact.
BOOST_AUTO_TEST_CASE(split_k_matmul_atomic_add) {
  auto k = tritium::kernel("split_k", [](tl::ptr<float> a, tl::ptr<float> b, tl::ptr<float> c, tl::i32 M, tl::i32 N, tl::i32 K,
                                         int BM, int BN, int BK, int SPLIT_K) {
    auto tiles_n = tl::cdiv(N, BN);
    auto pid = tl::program_id(0), ks = tl::program_id(1);
    auto rm = (pid / tiles_n) * BM + tl::arange(0, BM), rn = (pid % tiles_n) * BN + tl::arange(0, BN);
    auto rk = tl::arange(0, BK);
    auto acc = tl::zeros({BM, BN}, tl::float32);
    for (auto k0 : tl::range(ks * BK, K, BK * SPLIT_K)) {
      auto kk = k0 + rk;
      auto av = tl::load(a + rm(tl::_, tl::None) * K + kk(tl::None, tl::_), (rm(tl::_, tl::None) < M) & (kk(tl::None, tl::_) < K), 0.0f);
      auto bv = tl::load(b + kk(tl::_, tl::None) * N + rn(tl::None, tl::_), (kk(tl::_, tl::None) < K) & (rn(tl::None, tl::_) < N), 0.0f);
      acc = tl::dot(av, bv, acc);
    }
    auto mask = (rm(tl::_, tl::None) < M) & (rn(tl::None, tl::_) < N);
    tl::atomic_add(c + rm(tl::_, tl::None) * N + rn(tl::None, tl::_), acc, mask);
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int M = 50, N = 40, K = 300, BM = 16, BN = 32, BK = 16, SPLIT_K = 4;
    auto ai = tt::random_vector<int32_t>(M * K, 71, -4, 4), bi = tt::random_vector<int32_t>(K * N, 72, -4, 4);
    tt::host_vector<float> a(ai.begin(), ai.end()), b(bi.begin(), bi.end());
    tt::host_vector<float> ref(M * N, 0.0f);
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        int64_t s = 0;
        for (int kk = 0; kk < K; ++kk) s += int64_t(ai[i * K + kk]) * bi[kk * N + j];
        ref[i * N + j] = float(s);
      }
    auto da = be.upload<float>(a), db = be.upload<float>(b);
    auto dc = be.upload<float>(tt::host_vector<float>(M * N, 0.0f));
    tritium::Grid grid(tritium::cdiv(M, BM) * tritium::cdiv(N, BN), SPLIT_K);
    k[grid](da.ptr(), db.ptr(), dc.ptr(), M, N, K, BM, BN, BK, SPLIT_K, be.options());
    tt::check_equal<float>(dc.download(), ref, "split-K C");
  });
}

// Relaxed 16-bit float adds (Triton's sem="relaxed"; the indexing ops' scatters): on the GPU each
// is a red or atom of the element's aligned 32-bit pair that adds -0.0 to the other half, so the
// neighbours of every target hold -0.0 (which any other identity would turn into +0.0) and
// must come back bit for bit; targets collide (red, old values unused: exact sums of halves) or
// are hit once with their old values stored (atom: the initial values). f32 takes the same code.
template <class T> void half_pairs_case(const tt::Backend& be, bool old, int parity) {
  namespace tl = tritium::tl;
  static tritium::Kernel k = tritium::kernel("half_pairs", [](tl::ptr<T> table, tl::ptr<T> src, tl::ptr<int64_t> idx, tl::ptr<T> out,
                                                              tl::i32 n, int BLOCK, bool OLD) {
    auto offs = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    auto mask = offs < n;
    auto prev = tl::atomic_add(table + tl::load(idx + offs, mask, 0), tl::load(src + offs, mask, 0), mask, "relaxed");
    if (OLD) tl::store(out + offs, prev, mask);
  });
  const int slots = 300, n = old ? slots : 2000;  // old: one add a target
  auto pick = tt::random_vector<int64_t>(size_t(n), 40 + parity, 0, slots - 1);
  tt::host_vector<int64_t> idx(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) idx[size_t(i)] = 2 * (old ? i : pick[size_t(i)]) + parity;
  auto src = random_steps<T>(size_t(n), 41 + parity, 4, 0.5), init = random_steps<T>(size_t(2 * slots), 42 + parity, 4, 0.5);
  std::vector<double> ref(init.size());
  for (size_t i = 0; i < ref.size(); ++i) ref[i] = i % 2 == size_t(parity) ? tt::to_double(init[i]) : -0.0;
  tt::host_vector<T> start(init.size());
  for (size_t i = 0; i < ref.size(); ++i) start[i] = tt::from_double<T>(ref[i]);
  for (int i = 0; i < n; ++i) ref[size_t(idx[size_t(i)])] += tt::to_double(src[size_t(i)]);
  auto table = be.upload<T>(start), dsrc = be.upload<T>(src), out = be.upload<T>(tt::host_vector<T>(size_t(n), tt::from_double<T>(7.0)));
  auto didx = be.upload<int64_t>(idx);
  k[{tritium::cdiv(n, 256)}](table.ptr(), dsrc.ptr(), didx.ptr(), out.ptr(), n, 256, old, be.options());
  const tt::host_vector<T> got = table.download();
  const std::string what = fmt::format("{} {} halves{}", tritium::dtype_name(tritium::dtype_of<T>()), parity ? "high" : "low",
                                       old ? ", old values" : ", colliding");
  tt::host_vector<T> want(ref.size());
  for (size_t i = 0; i < ref.size(); ++i) want[i] = tt::from_double<T>(ref[i]);
  tt::check_equal<T>(got, want, what);
  size_t flipped = 0;  // the untouched halves: still -0.0
  for (size_t i = 0; i < got.size(); ++i)
    if (i % 2 != size_t(parity) && !(tt::to_double(got[i]) == 0 && std::signbit(tt::to_double(got[i])))) ++flipped;
  BOOST_TEST(flipped == 0u, what << ": neighbours changed");
  if (old) {
    tt::host_vector<T> first(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) first[size_t(i)] = start[size_t(idx[size_t(i)])];
    tt::check_equal<T>(out.download(), first, what + " (old values)");
  }
}

BOOST_AUTO_TEST_CASE(relaxed_and_half_atomics) {
  tt::for_each_backend([](const tt::Backend& be) {
    for (bool old : {false, true})
      for (int parity : {0, 1}) {
        half_pairs_case<f16_t>(be, old, parity);
        half_pairs_case<bf16_t>(be, old, parity);
        half_pairs_case<float>(be, old, parity);
      }
  });
}

BOOST_AUTO_TEST_SUITE_END()
