// ops/sampling.cpp (random sampling ops) and nn/sampling_inplace.cpp: distributions checked
// statistically with fixed seeds, counter layouts checked exactly against a host Philox
// (which is what makes the numbers the same on every backend), edge cases and bad inputs.
//
// Statistical bounds, chosen to pass a correct sampler and fail a wrong one at these sizes:
// - a sample mean within 6 standard errors (a correct sampler fails with probability < 2e-9;
//   the wrong parameters tried while writing these tests, e.g. a rate off by 5% at n = 2e5, are
//   tens of standard errors off);
// - a Kolmogorov-Smirnov statistic sqrt(n) * D below 2.2 (P < 2e-4 for a correct continuous
//   sampler; a 5% scale error at n = 1e5 gives about 6);
// - a chi-square over bins of expected count >= 5, below dof + 6 sqrt(2 dof) + 10 (for 3 to 50
//   degrees of freedom, P < 1e-5 for a correct sampler; a wrong pmf at these n gives n times its
//   divergence, thousands).
// The seeds are fixed, so each check is deterministic; the margins say they are not tuned.
#include "test_support.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "nn/autograd.h"
#include "nn/functional.h"
#include "nn/sampling_inplace.h"
#include "ops/ops.h"
#include "ops/rng_state.h"
#include "ops/sampling.h"
#include "ops/shape.h"
#include "runtime/views.h"

namespace tt = tritium::test;
namespace ops = tritium::ops;
using tritium::DType;
using tritium::Tensor;
using Shape = std::vector<int64_t>;

namespace {

// Random123's Philox4x32-10 on the host (as tests/test_creation_random.cpp), and the op
// library's counter layout: counter (offset lo, offset hi, subsequence, 0), key (seed lo, hi).
std::array<uint32_t, 4> philox_host(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  for (int r = 0; r < 10; ++r) {
    if (r > 0) k[0] += 0x9E3779B9u, k[1] += 0xBB67AE85u;
    uint64_t p0 = uint64_t(0xD2511F53u) * c[0], p1 = uint64_t(0xCD9E8D57u) * c[2];
    c = {uint32_t(p1 >> 32) ^ c[1] ^ k[0], uint32_t(p1), uint32_t(p0 >> 32) ^ c[3] ^ k[1], uint32_t(p0)};
  }
  return c;
}
std::array<uint32_t, 4> words(uint64_t seed, uint64_t counter, uint32_t sub = 0) {
  return philox_host({uint32_t(counter), uint32_t(counter >> 32), sub, 0}, {uint32_t(seed), uint32_t(seed >> 32)});
}
uint64_t bits53(uint32_t hi, uint32_t lo) { return ((uint64_t(hi) << 32) | lo) >> 11; }
double u53(uint32_t hi, uint32_t lo) { return double(bits53(hi, lo)) * 0x1p-53; }
double open_u53(uint32_t hi, uint32_t lo) { return (double(bits53(hi, lo)) + 0.5) * 0x1p-53; }

std::vector<double> f64_values(const Tensor& t) { return ops::to_dtype(t, DType::f64).to_vector<double>(); }

double mean_of(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / double(v.size()); }
double var_of(const std::vector<double>& v) {
  double m = mean_of(v), s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / double(v.size() - 1);
}

// sqrt(n) * sup |F_n - F|.
double ks_statistic(std::vector<double> v, const std::function<double(double)>& cdf) {
  std::sort(v.begin(), v.end());
  double n = double(v.size()), d = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    double f = cdf(v[i]);
    d = std::max({d, std::fabs(f - double(i) / n), std::fabs(double(i + 1) / n - f)});
  }
  return d * std::sqrt(n);
}
constexpr double kKsBound = 2.2;

// Chi-square of integer samples against pmf(k) for k in [0, kmax], bins with expected count < 5
// merged into their neighbour (the tail above kmax joins the last bin). Returns {chi2, dof}.
std::pair<double, int> chi_square(const std::vector<double>& samples, const std::function<double(int64_t)>& pmf,
                                  int64_t kmin, int64_t kmax) {
  const double n = double(samples.size());
  std::map<int64_t, double> counts;
  for (double s : samples) counts[std::clamp<int64_t>(int64_t(s), kmin, kmax)] += 1;
  std::vector<double> obs, expect;
  double acc_o = 0, acc_e = 0, mass = 0;
  for (int64_t k = kmin; k <= kmax; ++k) {
    double p = pmf(k);
    mass += p;
    if (k == kmax) p += std::max(0.0, 1.0 - mass);  // the tail
    acc_o += counts[k];
    acc_e += n * p;
    if (acc_e >= 5 || k == kmax) obs.push_back(acc_o), expect.push_back(acc_e), acc_o = acc_e = 0;
  }
  if (expect.size() > 1 && expect.back() < 5) {  // a small tail joins the bin before it
    obs[obs.size() - 2] += obs.back(), expect[expect.size() - 2] += expect.back();
    obs.pop_back(), expect.pop_back();
  }
  double chi2 = 0;
  for (size_t i = 0; i < obs.size(); ++i) chi2 += (obs[i] - expect[i]) * (obs[i] - expect[i]) / expect[i];
  return {chi2, int(obs.size()) - 1};
}
double chi2_bound(int dof) { return dof + 6 * std::sqrt(2.0 * dof) + 10; }

void check_chi2(const std::vector<double>& samples, const std::function<double(int64_t)>& pmf, int64_t kmin,
                int64_t kmax, const std::string& what) {
  auto [chi2, dof] = chi_square(samples, pmf, kmin, kmax);
  BOOST_TEST_MESSAGE(what << ": chi2 " << chi2 << " on " << dof << " dof");
  BOOST_TEST(dof >= 1, what);
  BOOST_TEST(chi2 < chi2_bound(dof), what << ": chi2 " << chi2 << " on " << dof << " dof");
}

void check_mean(const std::vector<double>& v, double mean, double sd, const std::string& what) {
  double m = mean_of(v), se = sd / std::sqrt(double(v.size()));
  BOOST_TEST(std::fabs(m - mean) < 6 * se, what << ": mean " << m << ", expected " << mean << " +- " << 6 * se);
}

double poisson_pmf(double lam, int64_t k) { return std::exp(-lam + double(k) * std::log(lam) - std::lgamma(double(k) + 1)); }

Tensor poisoned(const Shape& shape, DType d) { return ops::full(shape, std::nan(""), d); }

}  // namespace

BOOST_AUTO_TEST_SUITE(test_sampling)

BOOST_AUTO_TEST_CASE(like_factories) {
  tt::for_each_backend([&](const tt::Backend& be) {
    ops::Generator gen(11);
    Tensor x = ops::zeros({3, 333}, DType::f64);
    Tensor r = ops::rand_like(x, gen), n = ops::randn_like(x, gen);
    BOOST_TEST(r.shape() == x.shape());
    BOOST_TEST((r.dtype() == DType::f64 && n.dtype() == DType::f64 && n.device() == be.device));
    auto rv = r.to_vector<double>();
    BOOST_TEST(std::all_of(rv.begin(), rv.end(), [](double v) { return v >= 0 && v < 1; }));
    check_mean(n.to_vector<double>(), 0, 1, "randn_like");
    Tensor xi = ops::zeros({1001}, DType::i16);
    auto ri = f64_values(ops::randint_like(xi, 7, gen));
    BOOST_TEST((ops::randint_like(xi, 7, gen).dtype() == DType::i16));
    BOOST_TEST(*std::min_element(ri.begin(), ri.end()) == 0);
    BOOST_TEST(*std::max_element(ri.begin(), ri.end()) == 6);
    auto rl = f64_values(ops::randint_like(ops::zeros({1001}, DType::f32), -3, 2, gen));
    BOOST_TEST(*std::min_element(rl.begin(), rl.end()) == -3);
    BOOST_TEST(*std::max_element(rl.begin(), rl.end()) == 1);
    tt::check_throws([&] { ops::rand_like(xi, gen); }, {"rand_like", "floating-point", "i16"}, "rand_like of ints");
    tt::check_throws([&] { ops::randint_like(xi, 5, 5, gen); }, {"randint", "low=5 >= high=5"}, "empty range");
  });
}

// The counter layout (docs/ops.md): element e of a draw uses counter offset + e. Checked exactly
// against the host Philox, whatever the backend, the dtype and the destination's strides.
BOOST_AUTO_TEST_CASE(counter_layout_matches_host_reference) {
  tt::for_each_backend([&](const tt::Backend&) {
    const uint64_t seed = 0x1234abcd5678ull;
    ops::Generator gen(seed);
    gen.advance(uint64_t(5) << 32);  // counters past 2^32: the high word is used
    const uint64_t base = gen.offset();
    const int64_t n = 3001;
    Tensor x = poisoned({n}, DType::f64);
    ops::normal_(x, 2.0, 3.0, gen);
    auto v = x.to_vector<double>();
    double err = 0;
    for (int64_t i = 0; i < n; ++i) {
      auto w = words(seed, base + uint64_t(i));
      double u1 = double(bits53(w[0], w[1]) + 1) * 0x1p-53, u2 = u53(w[2], w[3]);
      double ref = 2.0 + 3.0 * std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * u2);
      err = std::max(err, std::fabs(v[size_t(i)] - ref) / (1 + std::fabs(ref)));
    }
    BOOST_TEST(err < 1e-12);
    BOOST_TEST(gen.offset() == base + uint64_t(n));

    // bernoulli_ (u53 < p), exponential_ in f64 (-log(1 - u53) / lambda), geometric_ (ceil(log(open u) / log1p(-p))).
    const uint64_t b2 = gen.offset();
    Tensor bern = poisoned({n}, DType::f32);
    ops::bernoulli_(bern, 0.3, gen);
    Tensor expo = poisoned({n}, DType::f64);
    ops::exponential_(expo, 2.5, gen);
    Tensor geo = ops::zeros({n}, DType::i32);
    ops::geometric_(geo, 0.2, gen);
    auto bv = bern.to_vector<float>();
    auto ev = expo.to_vector<double>();
    auto gv = geo.to_vector<int32_t>();
    int bad_b = 0, bad_g = 0;
    double err_e = 0;
    for (int64_t i = 0; i < n; ++i) {
      auto wb = words(seed, b2 + uint64_t(i));
      bad_b += bv[size_t(i)] != (u53(wb[0], wb[1]) < 0.3 ? 1.0f : 0.0f);
      auto we = words(seed, b2 + uint64_t(n + i));
      double ref = -std::log(1 - u53(we[0], we[1])) / 2.5;
      err_e = std::max(err_e, std::fabs(ev[size_t(i)] - ref) / (1e-300 + ref));
      auto wg = words(seed, b2 + uint64_t(2 * n + i));
      bad_g += gv[size_t(i)] != int32_t(std::ceil(std::log(open_u53(wg[0], wg[1])) / std::log1p(-0.2)));
    }
    BOOST_TEST(bad_b == 0);
    BOOST_TEST(err_e < 1e-12);
    BOOST_TEST(bad_g == 0);

    // A strided destination gets the values a contiguous one gets: counters follow the row-major
    // index, not memory order.
    ops::Generator g1(99), g2(99);
    Tensor dense = ops::zeros({37, 29}, DType::f32);
    ops::cauchy_(dense, 1.0, 2.0, g1);
    Tensor backing = ops::zeros({29, 37}, DType::f32);
    Tensor strided = tritium::runtime::t_of(backing);
    ops::cauchy_(strided, 1.0, 2.0, g2);
    BOOST_TEST(dense.to_vector<float>() == strided.to_vector<float>());
  });
}

BOOST_AUTO_TEST_CASE(normal_overloads) {
  tt::for_each_backend([&](const tt::Backend& be) {
    ops::Generator gen(3);
    const int64_t n = 60000;
    // Tensor mean and std, broadcast: [2, 1] x [n] -> [2, n].
    Tensor mean = Tensor::from_vector<double>({-5.0, 40.0}, {2, 1});
    Tensor sd = ops::full({n}, 0.5, DType::f32);
    Tensor out = ops::normal(mean, sd, gen);
    BOOST_TEST(out.shape() == (Shape{2, n}));
    BOOST_TEST((out.dtype() == DType::f64 && out.device() == be.device));  // promoted
    auto v = out.to_vector<double>();
    std::vector<double> row0(v.begin(), v.begin() + n), row1(v.begin() + n, v.end());
    check_mean(row0, -5, 0.5, "normal(tensor, tensor) row 0");
    check_mean(row1, 40, 0.5, "normal(tensor, tensor) row 1");
    BOOST_TEST(std::fabs(std::sqrt(var_of(row1)) - 0.5) < 6 * 0.5 / std::sqrt(2.0 * n));
    // Tensor mean, float std.
    auto a = f64_values(ops::normal(ops::full({n}, 1.5, DType::f32), 2.0, gen));
    check_mean(a, 1.5, 2.0, "normal(tensor, float)");
    BOOST_TEST(std::fabs(std::sqrt(var_of(a)) - 2.0) < 6 * 2.0 / std::sqrt(2.0 * n));
    // Float mean, tensor std with a zero entry: exactly the mean there.
    Tensor sd2 = Tensor::from_vector<float>({0.0f, 1.0f, 0.0f}, {3});
    auto b = ops::normal(7.0, sd2, gen).to_vector<float>();
    BOOST_TEST(b[0] == 7.0f);
    BOOST_TEST(b[2] == 7.0f);
    BOOST_TEST(b[1] != 7.0f);
    // Both floats, with a size; KS against the normal CDF.
    Tensor c = ops::normal(-1.0, 3.0, {n}, gen, DType::f32);
    BOOST_TEST((c.dtype() == DType::f32 && c.device() == be.device));
    double ks = ks_statistic(f64_values(c), [](double x) { return 0.5 * std::erfc(-(x + 1.0) / 3.0 / std::sqrt(2.0)); });
    BOOST_TEST(ks < kKsBound);
    // f16 output stays finite and near the mean.
    auto h = f64_values(ops::normal(10.0, 1.0, {4097}, gen, DType::f16));
    check_mean(h, 10, 1, "normal f16");

    tt::check_throws([&] { ops::normal(0.0, -1.0, {3}, gen); }, {"normal expects std >= 0.0", "-1"}, "negative std");
    tt::check_throws([&] { ops::normal(ops::zeros({3}), -0.5, gen); }, {"normal expects std >= 0.0"}, "negative std");
    tt::check_throws([&] { ops::normal(0.0, Tensor::from_vector<float>({1, -1, 1}), gen); },
                     {"normal expects all elements of std >= 0.0"}, "a negative std element");
    tt::check_throws([&] { ops::normal(ops::zeros({4}), ops::ones({2, 3}), gen); }, {"normal"}, "shapes that do not broadcast");
    tt::check_throws([&] { ops::normal(ops::zeros({4}, DType::i32), 1.0, gen); }, {"normal", "floating-point"}, "integer mean");
  });
}

BOOST_AUTO_TEST_CASE(continuous_inplace_distributions) {
  tt::for_each_backend([&](const tt::Backend&) {
    ops::Generator gen(2024);
    const int64_t n = 100003;
    for (DType d : {DType::f32, DType::f64}) {
      BOOST_TEST_CONTEXT(tritium::dtype_name(d)) {
        Tensor x = poisoned({n}, d);
        ops::exponential_(x, 2.5, gen);
        auto e = f64_values(x);
        BOOST_TEST(*std::min_element(e.begin(), e.end()) >= 0.0);
        BOOST_TEST(ks_statistic(e, [](double v) { return 1 - std::exp(-2.5 * v); }) < kKsBound);

        ops::log_normal_(x, 0.5, 0.75, gen);
        auto l = f64_values(x);
        for (double& v : l) v = std::log(v);
        BOOST_TEST(ks_statistic(l, [](double v) { return 0.5 * std::erfc(-(v - 0.5) / 0.75 / std::sqrt(2.0)); }) < kKsBound);

        ops::cauchy_(x, -2.0, 0.5, gen);
        auto c = f64_values(x);
        BOOST_TEST(ks_statistic(c, [](double v) { return 0.5 + std::atan((v + 2.0) / 0.5) / M_PI; }) < kKsBound);

        ops::normal_(x, 3.0, 0.25, gen);
        auto g = f64_values(x);
        BOOST_TEST(ks_statistic(g, [](double v) { return 0.5 * std::erfc(-(v - 3.0) / 0.25 / std::sqrt(2.0)); }) < kKsBound);
      }
    }
    Tensor h = poisoned({4096}, DType::bf16);
    ops::exponential_(h, 1.0, gen);
    auto hv = f64_values(h);
    BOOST_TEST(std::all_of(hv.begin(), hv.end(), [](double v) { return std::isfinite(v) && v >= 0; }));
    check_mean(hv, 1.0, 1.0, "exponential bf16");

    Tensor y = ops::zeros({3}, DType::f32);
    tt::check_throws([&] { ops::exponential_(y, 0.0, gen); }, {"exponential_ expects lambda > 0.0", "lambda=0"}, "lambda 0");
    tt::check_throws([&] { ops::log_normal_(y, 0.0, -1.0, gen); }, {"log_normal_ expects std > 0.0"}, "log_normal std");
    tt::check_throws([&] { ops::cauchy_(y, 0.0, -1.0, gen); }, {"cauchy_ expects sigma > 0.0"}, "cauchy sigma");
    tt::check_throws([&] { ops::normal_(y, 0.0, -1.0, gen); }, {"normal_ expects std >= 0.0"}, "normal_ std");
    Tensor yi = ops::zeros({3}, DType::i32);
    tt::check_throws([&] { ops::exponential_(yi, 1.0, gen); }, {"exponential_", "floating-point", "i32"}, "integer tensor");
  });
}

BOOST_AUTO_TEST_CASE(discrete_inplace_distributions) {
  tt::for_each_backend([&](const tt::Backend&) {
    ops::Generator gen(77);
    const int64_t n = 100000;
    // geometric_: P(k) = (1 - p)^(k - 1) p for k >= 1, on an integer and a float tensor.
    for (DType d : {DType::i64, DType::f32}) {
      Tensor g = ops::zeros({n}, d);
      ops::geometric_(g, 0.3, gen);
      auto v = f64_values(g);
      BOOST_TEST(*std::min_element(v.begin(), v.end()) == 1.0);
      check_chi2(v, [](int64_t k) { return k < 1 ? 0.0 : std::pow(0.7, double(k - 1)) * 0.3; }, 1, 40,
                 "geometric_ " + std::string(tritium::dtype_name(d)));
    }
    // random_: uniform over each range; the default range of a float is [0, 2^24] for f32.
    Tensor r = ops::zeros({n}, DType::i32);
    ops::random_(r, -3, 7, gen);
    check_chi2(f64_values(r), [](int64_t k) { return k >= -3 && k < 7 ? 0.1 : 0.0; }, -3, 6, "random_(-3, 7)");
    ops::random_(r, 5, gen);
    check_chi2(f64_values(r), [](int64_t k) { return k >= 0 && k < 5 ? 0.2 : 0.0; }, 0, 4, "random_(5)");
    Tensor u8 = ops::zeros({n}, DType::u8);
    ops::random_(u8, gen);
    check_chi2(f64_values(u8), [](int64_t) { return 1.0 / 256; }, 0, 255, "random_() u8");
    Tensor f = ops::zeros({n}, DType::f32);
    ops::random_(f, gen);
    auto fv = f64_values(f);
    BOOST_TEST(*std::max_element(fv.begin(), fv.end()) <= 16777216.0);
    check_mean(fv, 16777216.0 / 2, 16777217.0 / std::sqrt(12.0), "random_() f32");
    Tensor bits = ops::zeros({n}, DType::i1);
    ops::random_(bits, gen);
    check_mean(f64_values(bits), 0.5, 0.5, "random_() bool");
    Tensor big = ops::zeros({n}, DType::i64);
    ops::random_(big, gen);
    auto bv = big.to_vector<int64_t>();
    BOOST_TEST(*std::min_element(bv.begin(), bv.end()) >= 0);
    BOOST_TEST(*std::max_element(bv.begin(), bv.end()) > (int64_t(1) << 62));  // 64-bit draws reach the top
    Tensor all_bits = ops::zeros({n}, DType::u64);
    ops::random_(all_bits, gen);  // the range is 2^64
    auto uv = all_bits.to_vector<uint64_t>();
    BOOST_TEST(*std::max_element(uv.begin(), uv.end()) > (uint64_t(1) << 63));
    check_mean(f64_values(all_bits), 0x1p63, 0x1p64 / std::sqrt(12.0), "random_() u64");

    Tensor y = ops::zeros({3}, DType::f32);
    tt::check_throws([&] { ops::geometric_(y, 0.0, gen); }, {"geometric_ expects p to be in (0, 1)", "p=0"}, "p = 0");
    tt::check_throws([&] { ops::geometric_(y, 1.0, gen); }, {"geometric_ expects p to be in (0, 1)"}, "p = 1");
    tt::check_throws([&] { ops::random_(y, 5, 3, gen); }, {"random_ expects 'from' to be less than 'to'", "from=5 >= to=3"}, "from >= to");
    Tensor yu = ops::zeros({3}, DType::u8);
    tt::check_throws([&] { ops::random_(yu, 300, gen); }, {"random_", "does not fit dtype u8"}, "to out of range");
  });
}

BOOST_AUTO_TEST_CASE(bernoulli_forms) {
  tt::for_each_backend([&](const tt::Backend& be) {
    ops::Generator gen(5);
    // Probabilities 0 and 1 are exact; 0.25 and 0.9 are checked by their frequencies.
    const int64_t m = 20001;
    std::vector<float> probs;
    for (int64_t i = 0; i < m; ++i) probs.insert(probs.end(), {0.0f, 1.0f, 0.25f, 0.9f});
    Tensor p = Tensor::from_vector(probs, {m, 4});
    Tensor b = ops::bernoulli(p, gen);
    BOOST_TEST((b.dtype() == DType::f32 && b.device() == be.device && b.shape() == p.shape()));
    auto v = b.to_vector<float>();
    std::array<double, 4> ones{};
    bool binary = true;
    for (size_t i = 0; i < v.size(); ++i) ones[i % 4] += v[i], binary = binary && (v[i] == 0 || v[i] == 1);
    BOOST_TEST(binary);
    BOOST_TEST(ones[0] == 0);
    BOOST_TEST(ones[1] == double(m));
    BOOST_TEST(std::fabs(ones[2] / m - 0.25) < 6 * std::sqrt(0.25 * 0.75 / m));
    BOOST_TEST(std::fabs(ones[3] / m - 0.9) < 6 * std::sqrt(0.9 * 0.1 / m));
    // bernoulli(x, p): x's shape and dtype.
    Tensor bx = ops::bernoulli(ops::zeros({1000, 7}, DType::i32), 0.6, gen);
    BOOST_TEST((bx.dtype() == DType::i32 && bx.shape() == Shape{1000, 7}));
    check_mean(f64_values(bx), 0.6, std::sqrt(0.24), "bernoulli(x, 0.6)");
    // bernoulli_ with a broadcast p tensor, on a strided view.
    Tensor base = ops::full({50, 2000}, 7.0, DType::f64);
    Tensor view = tritium::runtime::slice_of(base, 1, 0, 2000, 2);  // [50, 1000]
    Tensor pcol = Tensor::from_vector<double>(std::vector<double>(50, 0.0), {50, 1});
    ops::bernoulli_(view, ops::full({1000}, 0.5, DType::f64), gen);
    auto bv = base.to_vector<double>();
    double kept = 0;
    for (size_t i = 0; i < bv.size(); ++i) {
      if (i % 2) BOOST_TEST_REQUIRE(bv[i] == 7.0);  // columns outside the view untouched
      else kept += bv[i];
    }
    BOOST_TEST(std::fabs(kept / 50000 - 0.5) < 6 * 0.5 / std::sqrt(50000.0));
    ops::bernoulli_(view, pcol, gen);
    auto zv = f64_values(view);
    BOOST_TEST(std::all_of(zv.begin(), zv.end(), [](double x) { return x == 0; }));

    tt::check_throws([&] { ops::bernoulli(Tensor::from_vector<float>({0.5f, 1.5f}), gen); },
                     {"bernoulli expects all elements of p to be in [0, 1]"}, "p > 1");
    tt::check_throws([&] { ops::bernoulli(Tensor::from_vector<float>({-0.1f}), gen); }, {"bernoulli", "[0, 1]"}, "p < 0");
    tt::check_throws([&] { ops::bernoulli(Tensor::from_vector<float>({std::nanf("")}), gen); }, {"bernoulli", "[0, 1]"}, "p NaN");
    tt::check_throws([&] { ops::bernoulli(ops::zeros({3}), 2.0, gen); }, {"bernoulli_ expects p to be in [0, 1]", "p=2"}, "scalar p");
    tt::check_throws([&] { ops::bernoulli(ops::zeros({3}, DType::i64), gen); }, {"bernoulli", "floating-point"}, "integer p");
    Tensor y = ops::zeros({4, 3});
    tt::check_throws([&] { ops::bernoulli_(y, ops::full({4}, 0.5, DType::f32), gen); }, {"bernoulli_"}, "p not broadcastable");
  });
}

BOOST_AUTO_TEST_CASE(poisson_small_and_large_rates) {
  tt::for_each_backend([&](const tt::Backend& be) {
    ops::Generator gen(31337);
    const int64_t n = 60001;
    // Rates across the inversion / PTRS switch at 10, and far into PTRS.
    for (double lam : {0.5, 3.0, 9.99, 10.0, 15.0, 37.5, 1000.0, 123456.0}) {
      BOOST_TEST_CONTEXT("rate " << lam) {
        Tensor r = ops::full({n}, lam, DType::f32);
        Tensor k = ops::poisson(r, gen);
        BOOST_TEST((k.dtype() == DType::f32 && k.device() == be.device));
        auto v = f64_values(k);
        BOOST_TEST(std::all_of(v.begin(), v.end(), [](double x) { return x >= 0 && x == std::floor(x); }));
        check_mean(v, lam, std::sqrt(lam), "poisson mean");
        // var of the sample variance of a Poisson: lam / n * (2 lam + 1) roughly.
        BOOST_TEST(std::fabs(var_of(v) - lam) < 6 * std::sqrt(lam * (2 * lam + 1) / n));
        const int64_t lo = std::max<int64_t>(0, int64_t(lam - 6 * std::sqrt(lam))), hi = int64_t(lam + 8 * std::sqrt(lam) + 10);
        check_chi2(v, [&](int64_t kk) { return poisson_pmf(lam, kk); }, lo, hi, "poisson pmf");
      }
    }
    // Rate 0 gives 0; mixed rates per element, f64.
    auto z = f64_values(ops::poisson(ops::zeros({1000}), gen));
    BOOST_TEST(std::all_of(z.begin(), z.end(), [](double x) { return x == 0; }));
    std::vector<double> rates;
    for (int i = 0; i < 20000; ++i) rates.insert(rates.end(), {0.0, 2.0, 50.0});
    auto mixed = ops::poisson(Tensor::from_vector(rates, {20000, 3}), gen).to_vector<double>();
    std::array<std::vector<double>, 3> cols;
    for (size_t i = 0; i < mixed.size(); ++i) cols[i % 3].push_back(mixed[i]);
    BOOST_TEST(*std::max_element(cols[0].begin(), cols[0].end()) == 0);
    check_mean(cols[1], 2.0, std::sqrt(2.0), "mixed rate 2");
    check_mean(cols[2], 50.0, std::sqrt(50.0), "mixed rate 50");

    tt::check_throws([&] { ops::poisson(Tensor::from_vector<float>({1.0f, -1.0f}), gen); },
                     {"invalid Poisson rate", "non-negative"}, "negative rate");
    tt::check_throws([&] { ops::poisson(Tensor::from_vector<float>({INFINITY}), gen); }, {"invalid Poisson rate"}, "infinite rate");
    tt::check_throws([&] { ops::poisson(ops::zeros({2}, DType::i64), gen); }, {"poisson", "floating-point"}, "integer rates");
  });
}

BOOST_AUTO_TEST_CASE(multinomial_with_replacement) {
  tt::for_each_backend([&](const tt::Backend& be) {
    ops::Generator gen(8);
    // Unnormalised weights with zeros; 2 rows.
    std::vector<float> w = {0.0f, 1.0f, 3.0f, 0.0f, 6.0f, 0.0f, 0.0f, 5.0f, 5.0f, 0.0f, 0.0f, 0.0f};
    Tensor probs = Tensor::from_vector(w, {2, 6});
    const int64_t S = 50001;
    Tensor s = ops::multinomial(probs, S, true, gen);
    BOOST_TEST((s.dtype() == DType::i64 && s.shape() == Shape{2, S} && s.device() == be.device));
    auto v = f64_values(s);
    std::vector<double> r0(v.begin(), v.begin() + S), r1(v.begin() + S, v.end());
    check_chi2(r0, [&](int64_t k) { return w[size_t(k)] / 10.0; }, 0, 5, "row 0");
    check_chi2(r1, [&](int64_t k) { return w[size_t(6 + k)] / 10.0; }, 0, 5, "row 1");
    for (double x : r0) BOOST_TEST_REQUIRE((w[size_t(x)] > 0));  // zero weights never drawn
    for (double x : r1) BOOST_TEST_REQUIRE((w[size_t(6 + x)] > 0));
    // 1-D input, many categories (more than one block of the running sums), f64.
    const int64_t C = 1500;
    std::vector<double> lin(C);
    for (int64_t i = 0; i < C; ++i) lin[size_t(i)] = double(i % 3 == 0 ? 0 : i);
    double tot = std::accumulate(lin.begin(), lin.end(), 0.0);
    auto big = f64_values(ops::multinomial(Tensor::from_vector(lin, {C}), 200000, true, gen));
    BOOST_TEST(big.size() == 200000u);
    for (double x : big) BOOST_TEST_REQUIRE(lin[size_t(x)] > 0);
    check_chi2(big, [&](int64_t k) { return lin[size_t(k)] / tot; }, 0, C - 1, "1500 categories");
    // One category.
    auto one = f64_values(ops::multinomial(ops::ones({1}), 10, true, gen));
    BOOST_TEST(std::all_of(one.begin(), one.end(), [](double x) { return x == 0; }));
  });
}

BOOST_AUTO_TEST_CASE(multinomial_without_replacement) {
  tt::for_each_backend([&](const tt::Backend&) {
    ops::Generator gen(9);
    // Ordered pairs (first, second) of 2 draws from 4 categories: P = p_i p_j / (1 - p_i).
    const std::array<double, 4> p = {0.1, 0.2, 0.3, 0.4};
    const int64_t R = 40000;
    std::vector<float> rows;
    for (int64_t r = 0; r < R; ++r) rows.insert(rows.end(), {1.0f, 2.0f, 3.0f, 4.0f});  // unnormalised
    auto s = ops::multinomial(Tensor::from_vector(rows, {R, 4}), 2, false, gen).to_vector<int64_t>();
    std::vector<double> pair_codes;
    for (int64_t r = 0; r < R; ++r) {
      BOOST_TEST_REQUIRE(s[size_t(2 * r)] != s[size_t(2 * r + 1)]);
      pair_codes.push_back(double(s[size_t(2 * r)] * 4 + s[size_t(2 * r + 1)]));
    }
    check_chi2(pair_codes,
               [&](int64_t code) {
                 int64_t i = code / 4, j = code % 4;
                 return i == j ? 0.0 : p[size_t(i)] * p[size_t(j)] / (1 - p[size_t(i)]);
               },
               0, 15, "ordered pairs");
    // All categories: a permutation each row; zero weights only after the positive ones.
    std::vector<float> w = {0.0f, 2.0f, 0.0f, 1.0f, 5.0f};
    auto all = ops::multinomial(Tensor::from_vector(w, {5}), 5, false, gen).to_vector<int64_t>();
    BOOST_TEST((std::set<int64_t>(all.begin(), all.end()).size() == 5u));
    for (int i = 0; i < 3; ++i) BOOST_TEST(w[size_t(all[size_t(i)])] > 0);
    BOOST_TEST((all[3] == 0 && all[4] == 2));  // the zero weights, by index, as PyTorch
    // Many categories (the multi-block sort): never repeats, zero weights never drawn.
    const int64_t C = 5000;
    std::vector<float> lin(C);
    for (int64_t i = 0; i < C; ++i) lin[size_t(i)] = i % 2 ? 1.0f + float(i % 7) : 0.0f;
    Tensor lp = Tensor::from_vector(lin, {1, C});
    auto many = ops::multinomial(ops::cat({lp, lp, lp}, 0), 2000, false, gen).to_vector<int64_t>();
    for (int r = 0; r < 3; ++r) {
      std::set<int64_t> seen(many.begin() + r * 2000, many.begin() + (r + 1) * 2000);
      BOOST_TEST(seen.size() == 2000u);
      BOOST_TEST(std::all_of(seen.begin(), seen.end(), [&](int64_t j) { return lin[size_t(j)] > 0; }));
    }
  });
}

BOOST_AUTO_TEST_CASE(multinomial_bad_inputs) {
  tt::for_each_backend([&](const tt::Backend&) {
    ops::Generator gen(1);
    tt::check_throws([&] { ops::multinomial(ops::zeros({2}), 1, false, gen); }, {"sum of probabilities <= 0"}, "zero row");
    tt::check_throws([&] { ops::multinomial(Tensor::from_vector<float>({1, 1, 0, 0}, {2, 2}), 1, true, gen); },
                     {"sum of probabilities <= 0", "row 1"}, "a zero second row");
    tt::check_throws([&] { ops::multinomial(ops::ones({2}), 3, false, gen); },
                     {"cannot sample n_sample > prob_dist.size(-1) samples without replacement"}, "too many samples");
    tt::check_throws([&] { ops::multinomial(Tensor::from_vector<float>({1, -1}), 1, true, gen); },
                     {"probability tensor contains either `inf`, `nan` or element < 0"}, "negative weight");
    tt::check_throws([&] { ops::multinomial(Tensor::from_vector<float>({1, std::nanf("")}), 1, false, gen); },
                     {"`inf`, `nan` or element < 0"}, "NaN weight");
    tt::check_throws([&] { ops::multinomial(ops::ones({2}), 0, true, gen); }, {"cannot sample n_sample <= 0 samples"}, "0 samples");
    tt::check_throws([&] { ops::multinomial(ops::ones({2, 2, 2}), 1, true, gen); }, {"prob_dist must be 1 or 2 dim"}, "3-D");
    tt::check_throws([&] { ops::multinomial(ops::ones({2}, DType::i32), 1, true, gen); }, {"multinomial", "floating-point"}, "ints");
  });
}

BOOST_AUTO_TEST_CASE(randperm_is_a_permutation) {
  tt::for_each_backend([&](const tt::Backend& be) {
    ops::Generator gen(4242);
    for (int64_t n : {0, 1, 2, 1000, 1024, 100003}) {
      BOOST_TEST_CONTEXT("n " << n) {
        const uint64_t seed = gen.seed(), base = gen.offset();
        Tensor p = ops::randperm(n, gen);
        BOOST_TEST((p.dtype() == DType::i64 && p.device() == be.device && p.shape() == Shape{n}));
        auto v = p.to_vector<int64_t>();
        std::vector<int64_t> sorted = v;
        std::sort(sorted.begin(), sorted.end());
        bool perm = true;
        for (int64_t i = 0; i < n; ++i) perm = perm && sorted[size_t(i)] == i;
        BOOST_TEST(perm);
        // The host reference of the layout: key i = 64 bits of counter base + i with the low
        // bit-width(n) bits replaced by i, sorted.
        int ib = std::bit_width(uint64_t(n));
        uint64_t mask = (uint64_t(1) << ib) - 1;
        std::vector<uint64_t> keys(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
          auto w = words(seed, base + uint64_t(i));
          keys[size_t(i)] = ((((uint64_t(w[0]) << 32) | w[1])) & ~mask) | uint64_t(i);
        }
        std::sort(keys.begin(), keys.end());
        bool same = true;
        for (int64_t i = 0; i < n; ++i) same = same && int64_t(keys[size_t(i)] & mask) == v[size_t(i)];
        BOOST_TEST(same, "randperm differs from the host reference of its counter layout");
      }
    }
    // Uniform over the 24 permutations of 4 (chi-square on the permutation's rank).
    std::vector<double> codes;
    for (int t = 0; t < 6000; ++t) {
      auto v = ops::randperm(4, gen).to_vector<int64_t>();
      int code = 0;
      std::vector<int64_t> rest = {0, 1, 2, 3};
      for (int i = 0; i < 4; ++i) {
        auto it = std::find(rest.begin(), rest.end(), v[size_t(i)]);
        code = code * (4 - i) + int(it - rest.begin());
        rest.erase(it);
      }
      codes.push_back(code);
    }
    check_chi2(codes, [](int64_t) { return 1.0 / 24; }, 0, 23, "randperm(4)");
    // Other dtypes.
    auto f = ops::randperm(300, gen, DType::f32).to_vector<float>();
    BOOST_TEST(std::accumulate(f.begin(), f.end(), 0.0) == 299.0 * 300 / 2);
    BOOST_TEST(ops::randperm(256, gen, DType::u8).numel() == 256);
    tt::check_throws([&] { ops::randperm(-1, gen); }, {"randperm", "non-negative", "-1"}, "negative n");
    tt::check_throws([&] { ops::randperm(300, gen, DType::u8); }, {"randperm", "too large for dtype u8"}, "n vs dtype");
    tt::check_throws([&] { ops::randperm(3, gen, DType::i1); }, {"randperm", "i1"}, "bool");
  });
}

BOOST_AUTO_TEST_CASE(randperm_millions) {
  tt::for_each_backend([&](const tt::Backend&) {
    ops::Generator gen(5);
    const int64_t n = 1000000 - 17;  // a million: 2^20 padded, 10 merge stages over 1024-element blocks
    auto v = ops::randperm(n + 17, gen, DType::i32).to_vector<int32_t>();
    std::vector<char> seen(size_t(n + 17), 0);
    bool ok = true;
    int64_t fixed = 0;
    for (size_t i = 0; i < v.size(); ++i) {
      ok = ok && v[i] >= 0 && v[i] < n + 17 && !seen[size_t(v[i])];
      if (ok) seen[size_t(v[i])] = 1;
      fixed += v[i] == int32_t(i);
    }
    BOOST_TEST(ok);
    BOOST_TEST(fixed < 10);  // fixed points of a random permutation: Poisson(1)
  });
}

// Autograd's in-place rules for the samplers (nn/sampling_inplace.h).
BOOST_AUTO_TEST_CASE(inplace_samplers_version_counter_and_autograd) {
  tt::for_each_backend([&](const tt::Backend&) {
    ops::Generator gen(6);
    Tensor x = ops::zeros({5, 7}, DType::f32);
    uint64_t v0 = x._version();
    tritium::normal_(x, 0.0, 1.0, gen);
    BOOST_TEST(x._version() == v0 + 1);
    tritium::exponential_(x, 1.0, gen);
    tritium::geometric_(x, 0.5, gen);
    tritium::log_normal_(x, 0.0, 1.0, gen);
    tritium::cauchy_(x, 0.0, 1.0, gen);
    tritium::bernoulli_(x, 0.5, gen);
    tritium::bernoulli_(x, ops::full({7}, 0.5, DType::f32), gen);
    tritium::random_(x, 3, gen);
    tritium::uniform_(x, -1.0, 1.0, gen);
    BOOST_TEST(x._version() == v0 + 9);
    // The same numbers as the raw op with the same generator state.
    ops::Generator a(12), b(12);
    Tensor y = ops::zeros({100});
    tritium::exponential_(y, 3.0, a);
    Tensor z = ops::zeros({100});
    ops::exponential_(z, 3.0, b);
    BOOST_TEST(y.to_vector<float>() == z.to_vector<float>());

    Tensor leaf = ops::zeros({3});
    leaf.requires_grad_();
    tt::check_throws([&] { tritium::normal_(leaf, 0.0, 1.0, gen); }, {"a leaf Variable that requires grad"}, "leaf");
    {
      tritium::nn::NoGradGuard no_grad;
      tritium::normal_(leaf, 0.0, 1.0, gen);  // as initialisers do
    }
    // A non-leaf: the sample cuts the gradient to what it overwrote.
    Tensor w = ops::ones({3});
    w.requires_grad_();
    Tensor h = tritium::mul(w, Tensor::from_vector<float>({2, 2, 2}));
    tritium::uniform_(h, 0.0, 1.0, gen);
    Tensor loss = tritium::sum(tritium::mul(h, w));
    loss.backward();
    auto g = w.grad().to_vector<float>();
    auto hv = h.detach().to_vector<float>();
    for (int i = 0; i < 3; ++i) BOOST_TEST(g[size_t(i)] == hv[size_t(i)]);  // d(h*w)/dw = h, nothing through h
    tt::check_throws([&] { tritium::geometric_(x, 1.5, gen); }, {"geometric_ expects p to be in (0, 1)"}, "bad p");
  });
}

// Same seed, same numbers on every backend: each backend's values against the CPU's.
BOOST_AUTO_TEST_CASE(identical_across_backends) {
  if (!tritium::runtime::device_available(tritium::Device::cpu()) ||
      !tritium::runtime::device_available(tritium::Device::cuda())) {
    BOOST_TEST_MESSAGE("one backend only: the host references above pin the layout instead");
    return;
  }
  auto draw = [](tritium::Device dev) {
    ops::Generator gen(123);
    std::vector<double> out;
    auto put = [&](const Tensor& t) {
      auto v = f64_values(t);
      out.insert(out.end(), v.begin(), v.end());
    };
    put(ops::normal(1.0, 2.0, {1000}, gen, DType::f64, dev));
    put(ops::poisson(ops::full({1000}, 25.0, DType::f64, dev), gen));
    put(ops::multinomial(ops::ones({3, 50}, DType::f32, dev), 20, false, gen));
    put(ops::multinomial(ops::ones({3, 50}, DType::f32, dev), 20, true, gen));
    put(ops::randperm(5000, gen, DType::i64, dev));
    Tensor e = ops::zeros({999}, DType::f64, dev);
    ops::exponential_(e, 2.0, gen);
    put(e);
    return out;
  };
  auto cpu = draw(tritium::Device::cpu()), cuda = draw(tritium::Device::cuda());
  BOOST_TEST_REQUIRE(cpu.size() == cuda.size());
  double worst = 0;
  for (size_t i = 0; i < cpu.size(); ++i) worst = std::max(worst, std::fabs(cpu[i] - cuda[i]) / (1 + std::fabs(cpu[i])));
  BOOST_TEST(worst < 1e-12);  // integers exactly; f64 transcendental functions to rounding
}

BOOST_AUTO_TEST_SUITE_END()
