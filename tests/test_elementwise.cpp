// Elementwise, shape and memory ops against float64 (or exact integer) host references, for every
// dtype each op accepts, on sizes that leave masked tails; type promotion checked on traced IR.
#include "test_support.h"

#include <cmath>
#include <limits>
#include <numeric>
#include <tuple>

namespace tl = tritium::tl;
namespace tt = tritium::test;
using tritium::bf16_t;
using tritium::DType;
using tritium::f16_t;

namespace {

constexpr int BLOCK = 128;
// 1000: masked tail, n % 16 != 0; 1024: no tail, n divisible by 16 (another specialisation).
const std::vector<int> kSizes = {1000, 1024};

template <class... Ts> struct types {};
template <class... Ts, class F> void for_each_type(types<Ts...>, F&& f) { (f.template operator()<Ts>(), ...); }

using int_types = types<int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t>;
using float_types = types<f16_t, bf16_t, float, double>;
using num_types = types<int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t, f16_t, bf16_t,
                        float, double>;

template <class T> constexpr DType dt() { return tritium::dtype_of<T>(); }
template <class T> std::string tname() { return tritium::dtype_name(dt<T>()); }
template <class T> constexpr bool is_fp = tt::is_float_v<T>;

// Relative error bounds of DESIGN.md.
template <class T> double tol() {
  if constexpr (std::is_same_v<T, f16_t>) return 1e-3;
  else if constexpr (std::is_same_v<T, bf16_t>) return 1e-2;
  else if constexpr (std::is_same_v<T, float>) return 1e-6;
  else return 1e-13;
}

template <class T> double dbl(const tt::storage_t<T>& v) { return tt::to_double<tt::storage_t<T>>(v); }

// Inputs: full range for integers (wrap-around tested), [-1, 1] for floats.
template <class T> tt::host_vector<T> inputs(size_t n, uint32_t seed) {
  if constexpr (is_fp<T>) return tt::random_vector<T>(n, seed, -1, 1);
  else return tt::random_vector<T>(n, seed, -1e300, 1e300);
}

// Integer arithmetic with wrap-around (computed unsigned: no UB in the reference).
template <class T> T wrap_add(T a, T b) { using U = std::make_unsigned_t<T>; return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b))); }
template <class T> T wrap_sub(T a, T b) { using U = std::make_unsigned_t<T>; return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b))); }
template <class T> T wrap_mul(T a, T b) {
  using U = std::make_unsigned_t<T>;
  using W = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, U>;  // avoid int promotion overflow
  return static_cast<T>(static_cast<U>(static_cast<W>(static_cast<U>(a)) * static_cast<W>(static_cast<U>(b))));
}
template <class T> T wrap_neg(T a) { return wrap_sub<T>(T(0), a); }

template <class T, class F> tt::host_vector<T> map2(const tt::host_vector<T>& a, const tt::host_vector<T>& b, F f) {
  tt::host_vector<T> r(a.size());
  for (size_t i = 0; i < a.size(); ++i) r[i] = f(a[i], b[i]);
  return r;
}
template <class T, class F> std::vector<double> ref2(const tt::host_vector<T>& a, const tt::host_vector<T>& b, F f) {
  std::vector<double> r(a.size());
  for (size_t i = 0; i < a.size(); ++i) r[i] = tt::round_to<T>(f(dbl<T>(a[i]), dbl<T>(b[i])));
  return r;
}
template <class T, class F> std::vector<double> ref1(const tt::host_vector<T>& a, F f) {
  std::vector<double> r(a.size());
  for (size_t i = 0; i < a.size(); ++i) r[i] = tt::round_to<T>(f(dbl<T>(a[i])));
  return r;
}

int grid1(int n) { return static_cast<int>(tritium::cdiv(n, BLOCK)); }

}  // namespace

BOOST_AUTO_TEST_SUITE(test_elementwise)

namespace {

// ---- kernels (one per dtype, reused across sizes and backends) ----------------------------------

template <class T> tritium::Kernel& arith_kernel() {
  static tritium::Kernel k = tritium::kernel(
      "arith_" + tname<T>(), [](tl::ptr<T> x, tl::ptr<T> y, tl::ptr<T> o_add, tl::ptr<T> o_sub, tl::ptr<T> o_mul,
                                tl::ptr<T> o_neg, tl::ptr<T> o_min, tl::ptr<T> o_max, tl::ptr<T> o_clamp, tl::i32 n,
                                int B) {
        auto offs = tl::program_id(0) * B + tl::arange(0, B);
        auto m = offs < n;
        auto a = tl::load(x + offs, m);
        auto b = tl::load(y + offs, m);
        tl::store(o_add + offs, a + b, m);
        tl::store(o_sub + offs, a - b, m);
        tl::store(o_mul + offs, a * b, m);
        tl::store(o_neg + offs, -a, m);
        tl::store(o_min + offs, tl::minimum(a, b), m);
        tl::store(o_max + offs, tl::maximum(a, b), m);
        if constexpr (is_fp<T>) tl::store(o_clamp + offs, tl::clamp(a, -0.5, 0.5), m);
        else tl::store(o_clamp + offs, tl::clamp(a, 10, 100), m);
      });
  return k;
}

template <class T> tritium::Kernel& divmod_kernel() {
  static tritium::Kernel k = tritium::kernel(
      "divmod_" + tname<T>(), [](tl::ptr<T> x, tl::ptr<T> y, tl::ptr<T> o_div, tl::ptr<T> o_rem, tl::ptr<T> o_div7,
                                 tl::ptr<T> o_rem7, tl::i32 n, int B) {
        auto offs = tl::program_id(0) * B + tl::arange(0, B);
        auto m = offs < n;
        auto a = tl::load(x + offs, m);
        auto b = tl::load(y + offs, m, 1);
        tl::store(o_div + offs, a / b, m);
        tl::store(o_rem + offs, a % b, m);
        tl::store(o_div7 + offs, a / 7, m);
        tl::store(o_rem7 + offs, a % 7, m);
      });
  return k;
}

template <class T> tritium::Kernel& compare_kernel() {
  static tritium::Kernel k = tritium::kernel(
      "compare_" + tname<T>(), [](tl::ptr<T> x, tl::ptr<T> y, tl::ptr<bool> o_eq, tl::ptr<bool> o_ne, tl::ptr<bool> o_lt,
                                  tl::ptr<bool> o_le, tl::ptr<bool> o_gt, tl::ptr<bool> o_ge, tl::ptr<bool> o_lit,
                                  tl::i32 n, int B) {
        auto offs = tl::program_id(0) * B + tl::arange(0, B);
        auto m = offs < n;
        auto a = tl::load(x + offs, m);
        auto b = tl::load(y + offs, m);
        tl::store(o_eq + offs, a == b, m);
        tl::store(o_ne + offs, a != b, m);
        tl::store(o_lt + offs, a < b, m);
        tl::store(o_le + offs, a <= b, m);
        tl::store(o_gt + offs, a > b, m);
        tl::store(o_ge + offs, a >= b, m);
        tl::store(o_lit + offs, a >= 2, m);  // weak literal takes a's type
      });
  return k;
}

template <class T> tritium::Kernel& bitwise_kernel() {
  static tritium::Kernel k = tritium::kernel(
      "bitwise_" + tname<T>(), [](tl::ptr<T> x, tl::ptr<T> y, tl::ptr<T> s, tl::ptr<T> o_and, tl::ptr<T> o_or,
                                  tl::ptr<T> o_xor, tl::ptr<T> o_not, tl::ptr<T> o_shl, tl::ptr<T> o_shr, tl::i32 n, int B) {
        auto offs = tl::program_id(0) * B + tl::arange(0, B);
        auto m = offs < n;
        auto a = tl::load(x + offs, m);
        auto b = tl::load(y + offs, m);
        auto sh = tl::load(s + offs, m);
        tl::store(o_and + offs, a & b, m);
        tl::store(o_or + offs, a | b, m);
        tl::store(o_xor + offs, a ^ b, m);
        tl::store(o_not + offs, ~a, m);
        tl::store(o_shl + offs, a << sh, m);
        tl::store(o_shr + offs, a >> sh, m);
      });
  return k;
}

template <class T> tritium::Kernel& where_kernel() {
  static tritium::Kernel k = tritium::kernel(
      "where_" + tname<T>(), [](tl::ptr<bool> c, tl::ptr<T> x, tl::ptr<T> y, tl::ptr<T> o, tl::ptr<T> o_lit, tl::i32 n, int B) {
        auto offs = tl::program_id(0) * B + tl::arange(0, B);
        auto m = offs < n;
        auto cond = tl::load(c + offs, m);
        auto a = tl::load(x + offs, m);
        tl::store(o + offs, tl::where(cond, a, tl::load(y + offs, m)), m);
        tl::store(o_lit + offs, tl::where(cond, a, 3), m);
      });
  return k;
}

// ---- arithmetic ---------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(arithmetic_all_dtypes) {
  tt::for_each_backend([&](const tt::Backend& be) {
    for_each_type(num_types{}, [&]<class T>() {
      for (int n : kSizes) {
        BOOST_TEST_CONTEXT("dtype " << tname<T>() << ", n " << n) {
          auto x = inputs<T>(n, 1), y = inputs<T>(n, 2);
          auto dx = be.upload<T>(x), dy = be.upload<T>(y);
          std::vector<tt::DeviceArray<T>> outs;
          for (int i = 0; i < 7; ++i) outs.push_back(be.alloc_poisoned<T>(n));
          arith_kernel<T>()[{grid1(n)}](dx.ptr(), dy.ptr(), outs[0].ptr(), outs[1].ptr(), outs[2].ptr(), outs[3].ptr(),
                                        outs[4].ptr(), outs[5].ptr(), outs[6].ptr(), n, BLOCK, be.options());
          if constexpr (is_fp<T>) {
            tt::check_close<T>(outs[0].download(), ref2<T>(x, y, [](double a, double b) { return a + b; }), tol<T>(), "add");
            tt::check_close<T>(outs[1].download(), ref2<T>(x, y, [](double a, double b) { return a - b; }), tol<T>(), "sub");
            tt::check_close<T>(outs[2].download(), ref2<T>(x, y, [](double a, double b) { return a * b; }), tol<T>(), "mul");
            tt::check_close<T>(outs[3].download(), ref1<T>(x, [](double a) { return -a; }), 0, "neg");
            tt::check_close<T>(outs[4].download(), ref2<T>(x, y, [](double a, double b) { return std::min(a, b); }), 0, "minimum");
            tt::check_close<T>(outs[5].download(), ref2<T>(x, y, [](double a, double b) { return std::max(a, b); }), 0, "maximum");
            tt::check_close<T>(outs[6].download(), ref1<T>(x, [](double a) { return std::clamp(a, -0.5, 0.5); }), 0, "clamp");
          } else {
            tt::check_equal<T>(outs[0].download(), map2<T>(x, y, wrap_add<T>), "add");
            tt::check_equal<T>(outs[1].download(), map2<T>(x, y, wrap_sub<T>), "sub");
            tt::check_equal<T>(outs[2].download(), map2<T>(x, y, wrap_mul<T>), "mul");
            tt::check_equal<T>(outs[3].download(), map2<T>(x, y, [](T a, T) { return wrap_neg<T>(a); }), "neg");
            tt::check_equal<T>(outs[4].download(), map2<T>(x, y, [](T a, T b) { return std::min(a, b); }), "minimum");
            tt::check_equal<T>(outs[5].download(), map2<T>(x, y, [](T a, T b) { return std::max(a, b); }), "maximum");
            tt::check_equal<T>(outs[6].download(), map2<T>(x, y, [](T a, T) { return std::clamp<T>(a, 10, 100); }), "clamp");
          }
        }
      }
    });
  });
}

// Stores that overwrite their own inputs, several in a row (the CUDA generator's store groups: one
// loop nest, every element's values before its stores): a bf16 row and a f32 row updated in place
// from both old values, a third output from a second load of the old bf16 row, and a fourth
// through a mask of its own. Liger's swiglu backward writes da over a and db over b this way.
BOOST_AUTO_TEST_CASE(stores_overwriting_their_inputs) {
  static tritium::Kernel k = tritium::kernel(
      "stores_in_place", [](tl::ptr<bf16_t> A, tl::ptr<float> B, tl::ptr<float> C, tl::ptr<float> D, tl::i32 n, int BLK) {
        auto offs = tl::program_id(0) * BLK + tl::arange(0, BLK);
        auto m = offs < n;
        auto a = tl::load(A + offs, m).to(tl::float32);
        auto b = tl::load(B + offs, m);
        auto a_again = tl::load(A + offs, m);
        auto s = tl::sigmoid(a * b);
        tl::store(A + offs, (a * s).to(tl::bfloat16), m);
        tl::store(B + offs, b * s + a, m);
        tl::store(C + offs, a_again.to(tl::float32) * 2.0f, m);
        tl::store(D + offs, s, m && (offs % 3 != 0));
      });
  tt::for_each_backend([&](const tt::Backend& be) {
    for (int n : {1000, 1024}) {
      BOOST_TEST_CONTEXT("n " << n) {
        auto a = inputs<bf16_t>(n, 5);
        auto b = inputs<float>(n, 6);
        auto da = be.upload<bf16_t>(a);
        auto db = be.upload<float>(b);
        auto d_before = inputs<float>(n, 7);
        auto dc = be.alloc_poisoned<float>(n);
        auto dd = be.upload<float>(d_before);
        k[{(n + 255) / 256}](da.ptr(), db.ptr(), dc.ptr(), dd.ptr(), n, 256, be.options());
        std::vector<double> ra(n), rb(n), rc(n), rd(n);
        for (int i = 0; i < n; ++i) {
          const double x = dbl<bf16_t>(a[i]), y = b[i], sg = 1.0 / (1.0 + std::exp(-x * y));
          ra[i] = x * sg, rb[i] = y * sg + x, rc[i] = 2 * x, rd[i] = i % 3 != 0 ? sg : d_before[i];
        }
        tt::check_close<bf16_t>(da.download(), ra, tol<bf16_t>(), "a overwritten");
        tt::check_close<float>(db.download(), rb, 1e-5, "b overwritten");
        tt::check_close<float>(dc.download(), rc, 0, "the old a, loaded again");
        tt::check_close<float>(dd.download(), rd, 1e-5, "a mask of its own");
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(division_and_remainder) {
  tt::for_each_backend([&](const tt::Backend& be) {
    for_each_type(num_types{}, [&]<class T>() {
      const int n = 1000;
      BOOST_TEST_CONTEXT("dtype " << tname<T>()) {
        tt::host_vector<T> x, y;
        if constexpr (is_fp<T>) {
          x = tt::random_vector<T>(n, 3, -10, 10);
          y = tt::random_nonzero<T>(n, 4, -3, 3, 0.25);
        } else {
          // No INT_MIN dividend (INT_MIN / -1 overflows); divisors never 0, both signs.
          double lo = static_cast<double>(std::numeric_limits<T>::min()) + (std::is_signed_v<T> ? 1 : 0);
          x = tt::random_vector<T>(n, 3, lo, 1e300);
          y = tt::random_nonzero<T>(n, 4, std::is_signed_v<T> ? -300 : 0, 300, 1);
          for (int i = 0; i < 8; ++i) y[i] = std::is_signed_v<T> ? static_cast<T>(-1 - i) : static_cast<T>(1 + i);
        }
        auto dx = be.upload<T>(x), dy = be.upload<T>(y);
        auto o_div = be.alloc_poisoned<T>(n), o_rem = be.alloc_poisoned<T>(n);
        auto o_div7 = be.alloc_poisoned<T>(n), o_rem7 = be.alloc_poisoned<T>(n);
        divmod_kernel<T>()[{grid1(n)}](dx.ptr(), dy.ptr(), o_div.ptr(), o_rem.ptr(), o_div7.ptr(), o_rem7.ptr(), n, BLOCK,
                                       be.options());
        if constexpr (is_fp<T>) {
          // f16/bf16 compute / and % in fp32, then round to the stored type.
          auto via = [](double v) { return std::is_same_v<T, double> ? v : double(float(v)); };
          tt::check_close<T>(o_div.download(), ref2<T>(x, y, [&](double a, double b) { return via(a / b); }), tol<T>(), "div");
          tt::check_close<T>(o_rem.download(), ref2<T>(x, y, [](double a, double b) { return std::fmod(a, b); }), tol<T>(), "rem (fmod)");
          tt::check_close<T>(o_div7.download(), ref1<T>(x, [&](double a) { return via(a / 7); }), tol<T>(), "div by 7");
          tt::check_close<T>(o_rem7.download(), ref1<T>(x, [](double a) { return std::fmod(a, 7.0); }), tol<T>(), "rem 7");
        } else {
          // C semantics: truncation toward zero, remainder has the dividend's sign.
          tt::check_equal<T>(o_div.download(), map2<T>(x, y, [](T a, T b) { return static_cast<T>(a / b); }), "div");
          tt::check_equal<T>(o_rem.download(), map2<T>(x, y, [](T a, T b) { return static_cast<T>(a % b); }), "rem");
          tt::check_equal<T>(o_div7.download(), map2<T>(x, y, [](T a, T) { return static_cast<T>(a / 7); }), "div by 7");
          tt::check_equal<T>(o_rem7.download(), map2<T>(x, y, [](T a, T) { return static_cast<T>(a % 7); }), "rem 7");
        }
      }
    });
  });
}

BOOST_AUTO_TEST_CASE(comparisons) {
  tt::for_each_backend([&](const tt::Backend& be) {
    for_each_type(num_types{}, [&]<class T>() {
      const int n = 1000;
      BOOST_TEST_CONTEXT("dtype " << tname<T>()) {
        // Small whole numbers so that equal pairs are frequent.
        double lo = std::is_unsigned_v<T> ? 0 : -3;
        auto x = tt::random_vector<T>(n, 5, lo, 3), y = tt::random_vector<T>(n, 6, lo, 3);
        if constexpr (is_fp<T>)
          for (auto* v : {&x, &y})
            for (auto& e : *v) e = tt::from_double<T>(std::round(dbl<T>(e)));
        auto dx = be.upload<T>(x), dy = be.upload<T>(y);
        std::vector<tt::DeviceArray<bool>> o;
        for (int i = 0; i < 7; ++i) o.push_back(be.alloc_poisoned<bool>(n));
        compare_kernel<T>()[{grid1(n)}](dx.ptr(), dy.ptr(), o[0].ptr(), o[1].ptr(), o[2].ptr(), o[3].ptr(), o[4].ptr(),
                                        o[5].ptr(), o[6].ptr(), n, BLOCK, be.options());
        auto cmp = [&](auto f) {
          tt::host_vector<bool> r(n);
          for (int i = 0; i < n; ++i) r[i] = f(dbl<T>(x[i]), dbl<T>(y[i])) ? 1 : 0;
          return r;
        };
        tt::check_equal<bool>(o[0].download(), cmp(std::equal_to<>{}), "==");
        tt::check_equal<bool>(o[1].download(), cmp(std::not_equal_to<>{}), "!=");
        tt::check_equal<bool>(o[2].download(), cmp(std::less<>{}), "<");
        tt::check_equal<bool>(o[3].download(), cmp(std::less_equal<>{}), "<=");
        tt::check_equal<bool>(o[4].download(), cmp(std::greater<>{}), ">");
        tt::check_equal<bool>(o[5].download(), cmp(std::greater_equal<>{}), ">=");
        tt::check_equal<bool>(o[6].download(), cmp([](double a, double) { return a >= 2; }), ">= literal 2");
      }
    });
  });
}

BOOST_AUTO_TEST_CASE(bitwise_and_shifts) {
  tt::for_each_backend([&](const tt::Backend& be) {
    for_each_type(int_types{}, [&]<class T>() {
      const int n = 1000;
      BOOST_TEST_CONTEXT("dtype " << tname<T>()) {
        using U = std::make_unsigned_t<T>;
        constexpr int bits = 8 * sizeof(T);
        auto x = inputs<T>(n, 7), y = inputs<T>(n, 8);
        auto s = tt::random_vector<T>(n, 9, 0, bits - 1);
        auto dx = be.upload<T>(x), dy = be.upload<T>(y), ds = be.upload<T>(s);
        std::vector<tt::DeviceArray<T>> o;
        for (int i = 0; i < 6; ++i) o.push_back(be.alloc_poisoned<T>(n));
        bitwise_kernel<T>()[{grid1(n)}](dx.ptr(), dy.ptr(), ds.ptr(), o[0].ptr(), o[1].ptr(), o[2].ptr(), o[3].ptr(),
                                        o[4].ptr(), o[5].ptr(), n, BLOCK, be.options());
        tt::check_equal<T>(o[0].download(), map2<T>(x, y, [](T a, T b) { return static_cast<T>(a & b); }), "&");
        tt::check_equal<T>(o[1].download(), map2<T>(x, y, [](T a, T b) { return static_cast<T>(a | b); }), "|");
        tt::check_equal<T>(o[2].download(), map2<T>(x, y, [](T a, T b) { return static_cast<T>(a ^ b); }), "^");
        tt::check_equal<T>(o[3].download(), map2<T>(x, y, [](T a, T) { return static_cast<T>(~a); }), "~");
        tt::check_equal<T>(o[4].download(), map2<T>(x, s, [](T a, T b) { return static_cast<T>(static_cast<U>(static_cast<U>(a) << b)); }), "<<");
        // >> is arithmetic on signed types, logical on unsigned ones.
        tt::check_equal<T>(o[5].download(), map2<T>(x, s, [](T a, T b) { return static_cast<T>(a >> b); }), ">>");
      }
    });
  });
}

BOOST_AUTO_TEST_CASE(logical_ops_on_bool) {
  static tritium::Kernel k = tritium::kernel(
      "logical", [](tl::ptr<bool> x, tl::ptr<bool> y, tl::ptr<bool> o_and, tl::ptr<bool> o_or, tl::ptr<bool> o_not,
                    tl::ptr<bool> o_band, tl::ptr<bool> o_bor, tl::ptr<bool> o_bxor, tl::ptr<bool> o_lnot_int, tl::i32 n, int B) {
        auto offs = tl::program_id(0) * B + tl::arange(0, B);
        auto m = offs < n;
        auto a = tl::load(x + offs, m);
        auto b = tl::load(y + offs, m);
        tl::store(o_and + offs, a && b, m);
        tl::store(o_or + offs, a || b, m);
        tl::store(o_not + offs, !a, m);
        tl::store(o_band + offs, a & b, m);
        tl::store(o_bor + offs, a | b, m);
        tl::store(o_bxor + offs, a ^ b, m);
        tl::store(o_lnot_int + offs, !(offs % 3), m);  // ! on an integer: x == 0
      });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int n = 1000;
    auto x = tt::random_vector<bool>(n, 10), y = tt::random_vector<bool>(n, 11);
    auto dx = be.upload<bool>(x), dy = be.upload<bool>(y);
    std::vector<tt::DeviceArray<bool>> o;
    for (int i = 0; i < 7; ++i) o.push_back(be.alloc_poisoned<bool>(n));
    k[{grid1(n)}](dx.ptr(), dy.ptr(), o[0].ptr(), o[1].ptr(), o[2].ptr(), o[3].ptr(), o[4].ptr(), o[5].ptr(), o[6].ptr(),
                  n, BLOCK, be.options());
    auto f = [&](auto g) {
      tt::host_vector<bool> r(n);
      for (int i = 0; i < n; ++i) r[i] = g(x[i] != 0, y[i] != 0, i) ? 1 : 0;
      return r;
    };
    tt::check_equal<bool>(o[0].download(), f([](bool a, bool b, int) { return a && b; }), "&&");
    tt::check_equal<bool>(o[1].download(), f([](bool a, bool b, int) { return a || b; }), "||");
    tt::check_equal<bool>(o[2].download(), f([](bool a, bool, int) { return !a; }), "!");
    tt::check_equal<bool>(o[3].download(), f([](bool a, bool b, int) { return a & b; }), "& on i1");
    tt::check_equal<bool>(o[4].download(), f([](bool a, bool b, int) { return a | b; }), "| on i1");
    tt::check_equal<bool>(o[5].download(), f([](bool a, bool b, int) { return a ^ b; }), "^ on i1");
    tt::check_equal<bool>(o[6].download(), f([](bool, bool, int i) { return i % 3 == 0; }), "! on i32");
  });
}

BOOST_AUTO_TEST_CASE(where_all_dtypes) {
  tt::for_each_backend([&](const tt::Backend& be) {
    auto run = [&]<class T>() {
      const int n = 1000;
      BOOST_TEST_CONTEXT("dtype " << tname<T>()) {
        auto c = tt::random_vector<bool>(n, 12);
        auto x = tt::random_vector<T>(n, 13, 0, 100), y = tt::random_vector<T>(n, 14, 0, 100);
        auto dc = be.upload<bool>(c);
        auto dx = be.upload<T>(x), dy = be.upload<T>(y);
        auto o = be.alloc_poisoned<T>(n), o_lit = be.alloc_poisoned<T>(n);
        where_kernel<T>()[{grid1(n)}](dc.ptr(), dx.ptr(), dy.ptr(), o.ptr(), o_lit.ptr(), n, BLOCK, be.options());
        tt::host_vector<T> r(n), r_lit(n);
        for (int i = 0; i < n; ++i) {
          r[i] = c[i] ? x[i] : y[i];
          if constexpr (std::is_same_v<T, bool>) r_lit[i] = c[i] ? x[i] : 1;  // 3 -> i1 is true
          else r_lit[i] = c[i] ? x[i] : tt::from_double<T>(3);
        }
        tt::check_equal<T>(o.download(), r, "where");
        tt::check_equal<T>(o_lit.download(), r_lit, "where with a literal");
      }
    };
    for_each_type(num_types{}, run);
    run.template operator()<bool>();
  });
}

// ---- math functions -------------------------------------------------------------------------------

template <class T> tritium::Kernel& math_kernel() {
  static tritium::Kernel k = tritium::kernel(
      "math_" + tname<T>(),
      [](tl::ptr<T> x, tl::ptr<T> p, tl::ptr<T> y, tl::ptr<T> z, tl::ptr<T> o, tl::i32 n, int B) {
        auto offs = tl::program_id(0) * B + tl::arange(0, B);
        auto m = offs < n;
        auto a = tl::load(x + offs, m);
        auto pos = tl::load(p + offs, m, 1);
        auto out = [&](int i, const tl::tensor& v) { tl::store(o + i * n + offs, v, m); };
        out(0, tl::exp(a));
        out(1, tl::exp2(a));
        out(2, tl::log(pos));
        out(3, tl::log2(pos));
        out(4, tl::sqrt(pos));
        out(5, tl::rsqrt(pos));
        out(6, tl::abs(a));
        out(7, tl::floor(a));
        out(8, tl::ceil(a));
        out(9, tl::sin(a));
        out(10, tl::cos(a));
        out(11, tl::tanh(a));
        out(12, tl::erf(a));
        out(13, tl::sigmoid(a));
        out(14, tl::fma(a, tl::load(y + offs, m), tl::load(z + offs, m)));
      });
  return k;
}

BOOST_AUTO_TEST_CASE(math_functions) {
  using fn = double (*)(double);
  const std::vector<std::pair<const char*, fn>> unary = {
      {"exp", [](double v) { return std::exp(v); }},
      {"exp2", [](double v) { return std::exp2(v); }},
      {"log", [](double v) { return std::log(v); }},
      {"log2", [](double v) { return std::log2(v); }},
      {"sqrt", [](double v) { return std::sqrt(v); }},
      {"rsqrt", [](double v) { return 1 / std::sqrt(v); }},
      {"abs", [](double v) { return std::abs(v); }},
      {"floor", [](double v) { return std::floor(v); }},
      {"ceil", [](double v) { return std::ceil(v); }},
      {"sin", [](double v) { return std::sin(v); }},
      {"cos", [](double v) { return std::cos(v); }},
      {"tanh", [](double v) { return std::tanh(v); }},
      {"erf", [](double v) { return std::erf(v); }},
      {"sigmoid", [](double v) { return 1 / (1 + std::exp(-v)); }},
  };
  tt::for_each_backend([&](const tt::Backend& be) {
    for_each_type(float_types{}, [&]<class T>() {
      for (int n : kSizes) {
        BOOST_TEST_CONTEXT("dtype " << tname<T>() << ", n " << n) {
          auto x = tt::random_vector<T>(n, 20, -3, 3), p = tt::random_vector<T>(n, 21, 0.05, 5);
          auto y = tt::random_vector<T>(n, 22, -2, 2), z = tt::random_vector<T>(n, 23, -2, 2);
          auto dx = be.upload<T>(x), dp = be.upload<T>(p), dy = be.upload<T>(y), dz = be.upload<T>(z);
          auto o = be.alloc_poisoned<T>(15 * n);
          math_kernel<T>()[{grid1(n)}](dx.ptr(), dp.ptr(), dy.ptr(), dz.ptr(), o.ptr(), n, BLOCK, be.options());
          auto out = o.download();
          for (int f = 0; f < 15; ++f) {
            tt::host_vector<T> got(out.begin() + f * n, out.begin() + (f + 1) * n);
            std::vector<double> ref(n);
            for (int i = 0; i < n; ++i) {
              if (f == 14) ref[i] = tt::round_to<T>(std::fma(dbl<T>(x[i]), dbl<T>(y[i]), dbl<T>(z[i])));
              else ref[i] = tt::round_to<T>(unary[f].second(dbl<T>(f >= 2 && f <= 5 ? p[i] : x[i])));
            }
            // Libm-grade float functions: a few ulp (exact ones are still checked under the bound).
            double bound = std::is_same_v<T, double> ? 1e-12 : std::is_same_v<T, float> ? 2e-6 : tol<T>();
            tt::check_close<T>(got, ref, bound, f == 14 ? "fma" : unary[f].first);
          }
        }
      }
    });
  });
}

// tanh and erf in f32 element by element, over their whole range (the CPU backend evaluates both
// inline by polynomials; CUDA's tanhf / erff are within 2 ulp): a few ulp of the float64 value at
// every point, the thresholds between the polynomials, signed zeros, infinities and NaN.
BOOST_AUTO_TEST_CASE(tanh_and_erf_to_a_few_ulp) {
  static tritium::Kernel k = tritium::kernel("tanh_erf_f32", [](tl::ptr<float> x, tl::ptr<float> o, tl::i32 n, int B) {
    auto offs = tl::program_id(0) * B + tl::arange(0, B);
    auto m = offs < n;
    auto a = tl::load(x + offs, m);
    tl::store(o + offs, tl::tanh(a), m);
    tl::store(o + n + offs, tl::erf(a), m);
  });
  std::vector<float> x = {0.0f, -0.0f, 1e-30f, -1e-20f, 1e-8f, 0.625f, 0.62500006f, -0.625f, 0.921875f, 0.92187506f,
                          -0.921875f, 3.9f, 3.92f, 4.0f, -4.0f, 4.5f, 9.0f, 10.0f, 44.0f, 100.0f, -100.0f,
                          std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN()};
  auto r = tt::random_vector<float>(4000, 40, -12, 12);
  x.insert(x.end(), r.begin(), r.end());
  auto small = tt::random_vector<float>(1000, 41, -1, 1);
  x.insert(x.end(), small.begin(), small.end());
  const int n = static_cast<int>(x.size());
  tt::for_each_backend([&](const tt::Backend& be) {
    auto dx = be.upload<float>(x);
    auto o = be.alloc_poisoned<float>(2 * n);
    k[{grid1(n)}](dx.ptr(), o.ptr(), n, BLOCK, be.options());
    auto out = o.download();
    int bad = 0;
    for (int f = 0; f < 2; ++f)
      for (int i = 0; i < n; ++i) {
        double v = x[static_cast<size_t>(i)], got = out[static_cast<size_t>(f * n + i)];
        double ref = f == 0 ? std::tanh(v) : std::erf(v);
        bool ok;
        if (std::isnan(ref)) ok = std::isnan(got);
        else if (ref == 0) ok = got == 0 && std::signbit(got) == std::signbit(ref);
        else {
          double ulp = std::ldexp(1.0, std::ilogb(static_cast<float>(ref)) - 23);
          ok = std::abs(got - ref) <= 4 * ulp;
        }
        if (!ok && ++bad <= 5)
          BOOST_ERROR((f == 0 ? "tanh(" : "erf(") << v << ") = " << got << ", float64 gives " << ref);
      }
    BOOST_TEST(bad == 0);
  });
}

// Runs f32 kernel k(x, o, n, BLOCK) on the CPU over x and checks each result against ref(x) in
// float64: within 2 ulp (subnormal results at their fixed ulp of 2^-149), inf past float's max,
// 0 or the smallest subnormal below 2^-150, NaN for NaN.
template <class Ref> void check_f32_to_2_ulp(tritium::Kernel& k, const std::vector<float>& x, const char* name, Ref ref_of) {
  const int n = static_cast<int>(x.size());
  const tt::Backend be{"cpu", tritium::Device::cpu()};
  auto dx = be.upload<float>(x);
  auto o = be.alloc_poisoned<float>(n);
  k[{grid1(n)}](dx.ptr(), o.ptr(), n, BLOCK, be.options());
  auto out = o.download();
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    double v = x[static_cast<size_t>(i)], got = out[static_cast<size_t>(i)], ref = ref_of(v);
    bool ok;
    if (std::isnan(ref)) ok = std::isnan(got);
    else if (ref > std::numeric_limits<float>::max() * (1 + 0x1p-25)) ok = std::isinf(got) && got > 0;
    else if (ref < 0x1p-150) ok = got == 0 || got == 0x1p-149;  // rounds to 0 or the smallest subnormal
    else {
      double ulp = std::ldexp(1.0, std::max(std::ilogb(static_cast<float>(ref)), -126) - 23);
      ok = std::abs(got - ref) <= 2 * ulp;
    }
    if (!ok && ++bad <= 5) BOOST_ERROR(name << "(" << v << ") = " << got << ", float64 gives " << ref);
  }
  BOOST_TEST(bad == 0);
}

// exp2 in f32 on the CPU backend, which evaluates it inline (round to an integer n, e^((x - n) ln 2)
// by exp's polynomial, times 2^n - one VSCALEFPS on AVX-512 hosts, two exponent-bit factors
// elsewhere; a GPU's ex2.approx flushes subnormals): within 2 ulp of the float64 value over its
// whole range, subnormal results, the overflow and underflow thresholds, infinities and NaN.
BOOST_AUTO_TEST_CASE(exp2_to_a_few_ulp, *tt::needs_cpu_backend()) {
  static tritium::Kernel k = tritium::kernel("exp2_f32", [](tl::ptr<float> x, tl::ptr<float> o, tl::i32 n, int B) {
    auto offs = tl::program_id(0) * B + tl::arange(0, B);
    auto m = offs < n;
    tl::store(o + offs, tl::exp2(tl::load(x + offs, m)), m);
  });
  std::vector<float> x = {0.0f, -0.0f, 0.5f, -0.5f, 1.0f, 127.0f, 127.99999f, 128.0f, 128.5f, -126.0f, -127.5f,
                          -149.0f, -149.5f, -150.0f, -150.5f, -200.0f, 1e-8f, -1e-8f,
                          std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN()};
  auto r = tt::random_vector<float>(6000, 42, -155, 130);
  x.insert(x.end(), r.begin(), r.end());
  auto small = tt::random_vector<float>(2000, 43, -1, 1);
  x.insert(x.end(), small.begin(), small.end());
  check_f32_to_2_ulp(k, x, "exp2", [](double v) { return std::exp2(v); });
}

// exp in f32 on the CPU backend (n = round(x log2 e), the remainder in two parts of ln 2, the same
// polynomial and scaling): within 2 ulp of float64 over [-110, 95], at the overflow threshold
// (88.7228...) and the subnormal range down to the underflow (-103.97), infinities and NaN.
BOOST_AUTO_TEST_CASE(exp_to_a_few_ulp, *tt::needs_cpu_backend()) {
  static tritium::Kernel k = tritium::kernel("exp_f32", [](tl::ptr<float> x, tl::ptr<float> o, tl::i32 n, int B) {
    auto offs = tl::program_id(0) * B + tl::arange(0, B);
    auto m = offs < n;
    tl::store(o + offs, tl::exp(tl::load(x + offs, m)), m);
  });
  std::vector<float> x = {0.0f, -0.0f, 1.0f, -1.0f, 88.0f, 88.72283935546875f, 88.7228394f, 88.8f, 89.0f, -87.33654f,
                          -87.5f, -100.0f, -103.0f, -103.97208f, -103.98f, -104.0f, -110.0f,
                          std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN()};
  auto r = tt::random_vector<float>(6000, 44, -110, 95);
  x.insert(x.end(), r.begin(), r.end());
  auto sub = tt::random_vector<float>(2000, 45, -104, -87);  // subnormal and tiny normal results
  x.insert(x.end(), sub.begin(), sub.end());
  check_f32_to_2_ulp(k, x, "exp", [](double v) { return std::exp(v); });
}

BOOST_AUTO_TEST_CASE(integer_abs_cdiv_umulhi) {
  tt::for_each_backend([&](const tt::Backend& be) {
    for_each_type(int_types{}, [&]<class T>() {
      const int n = 1000;
      BOOST_TEST_CONTEXT("dtype " << tname<T>()) {
        static tritium::Kernel k = tritium::kernel(
            "intmisc_" + tname<T>(), [](tl::ptr<T> x, tl::ptr<T> a, tl::ptr<T> b, tl::ptr<T> o_abs, tl::ptr<T> o_cdiv,
                                        tl::ptr<T> o_mulhi, tl::i32 n, int B) {
              auto offs = tl::program_id(0) * B + tl::arange(0, B);
              auto m = offs < n;
              tl::store(o_abs + offs, tl::abs(tl::load(x + offs, m)), m);
              auto va = tl::load(a + offs, m), vb = tl::load(b + offs, m, 1);
              tl::store(o_cdiv + offs, tl::cdiv(va, vb), m);
              if constexpr (sizeof(T) >= 4) tl::store(o_mulhi + offs, tl::umulhi(tl::load(x + offs, m), va), m);
            });
        auto x = inputs<T>(n, 30);
        double hi = std::min<double>(1e6, static_cast<double>(std::numeric_limits<T>::max()) / 2);
        auto a = tt::random_vector<T>(n, 31, 0, hi), b = tt::random_vector<T>(n, 32, 1, std::min(hi, 300.0));
        auto dx = be.upload<T>(x), da = be.upload<T>(a), db = be.upload<T>(b);
        auto o_abs = be.alloc_poisoned<T>(n), o_cdiv = be.alloc_poisoned<T>(n), o_mulhi = be.alloc_poisoned<T>(n);
        k[{grid1(n)}](dx.ptr(), da.ptr(), db.ptr(), o_abs.ptr(), o_cdiv.ptr(), o_mulhi.ptr(), n, BLOCK, be.options());
        tt::check_equal<T>(o_abs.download(), map2<T>(x, x, [](T v, T) { return v < 0 ? wrap_neg<T>(v) : v; }), "abs");
        tt::check_equal<T>(o_cdiv.download(), map2<T>(a, b, [](T p, T q) { return static_cast<T>((p + q - 1) / q); }), "cdiv");
        if constexpr (sizeof(T) >= 4) {
          // umulhi: the high half of the unsigned product (Triton's tt.mulhiui).
          using U = std::make_unsigned_t<T>;
          tt::check_equal<T>(o_mulhi.download(), map2<T>(x, a, [](T p, T q) {
                               constexpr int bits = 8 * sizeof(T);
                               unsigned __int128 prod = static_cast<unsigned __int128>(static_cast<U>(p)) * static_cast<U>(q);
                               return static_cast<T>(static_cast<U>(prod >> bits));
                             }), "umulhi");
        }
      }
    });
  });
}

// ---- casts --------------------------------------------------------------------------------------------

// The reference conversion S -> D (C++ semantics: integers wrap, floats truncate toward zero,
// floats round to nearest even, anything -> bool is != 0).
template <class D, class S> tt::storage_t<D> convert(const tt::storage_t<S>& v) {
  long double exact;
  if constexpr (tt::is_half_v<S>) exact = tt::to_float(v);
  else exact = static_cast<long double>(v);
  if constexpr (std::is_same_v<D, bool>) return exact != 0 ? 1 : 0;
  else if constexpr (std::is_same_v<D, f16_t>) return tt::to_f16_exact(exact);
  else if constexpr (std::is_same_v<D, bf16_t>) return tt::to_bf16_exact(exact);
  else if constexpr (is_fp<S> || std::is_same_v<S, bool>) return static_cast<D>(exact);
  else return static_cast<D>(v);  // integer -> integer wraps, integer -> float rounds
}

template <class S> tritium::Kernel& cast_kernel() {
  static tritium::Kernel k = tritium::kernel(
      "cast_" + tname<S>(),
      [](tl::ptr<S> x, tl::ptr<bool> o_b, tl::ptr<int8_t> o_i8, tl::ptr<int16_t> o_i16, tl::ptr<int32_t> o_i32,
         tl::ptr<int64_t> o_i64, tl::ptr<uint8_t> o_u8, tl::ptr<uint16_t> o_u16, tl::ptr<uint32_t> o_u32,
         tl::ptr<uint64_t> o_u64, tl::ptr<f16_t> o_f16, tl::ptr<bf16_t> o_bf16, tl::ptr<float> o_f32,
         tl::ptr<double> o_f64, tl::i32 n, int B) {
        auto offs = tl::program_id(0) * B + tl::arange(0, B);
        auto m = offs < n;
        auto a = tl::load(x + offs, m);
        tl::store(o_b + offs, a.to(tl::int1), m);
        tl::store(o_i8 + offs, a.to(tl::int8), m);
        tl::store(o_i16 + offs, a.to(tl::int16), m);
        tl::store(o_i32 + offs, a.to(tl::int32), m);
        tl::store(o_i64 + offs, a.to(tl::int64), m);
        tl::store(o_u8 + offs, a.to(tl::uint8), m);
        tl::store(o_u16 + offs, a.to(tl::uint16), m);
        tl::store(o_u32 + offs, a.to(tl::uint32), m);
        tl::store(o_u64 + offs, a.to(tl::uint64), m);
        tl::store(o_f16 + offs, a.to(tl::float16), m);
        tl::store(o_bf16 + offs, a.to(tl::bfloat16), m);
        tl::store(o_f32 + offs, tl::cast(a, tl::float32), m);
        tl::store(o_f64 + offs, tl::cast(a, tl::float64), m);
      });
  return k;
}

// Which targets a run checks: float -> integer is undefined out of the target's range.
enum class Targets { all, no_unsigned_from_float, floats_and_bool_only };

template <class S> void run_cast(const tt::Backend& be, const tt::host_vector<S>& x, Targets targets,
                                 const std::string& what) {
  int n = static_cast<int>(x.size());
  auto dx = be.upload<S>(x);
  auto o_b = be.alloc_poisoned<bool>(n);
  auto o_i8 = be.alloc_poisoned<int8_t>(n);
  auto o_i16 = be.alloc_poisoned<int16_t>(n);
  auto o_i32 = be.alloc_poisoned<int32_t>(n);
  auto o_i64 = be.alloc_poisoned<int64_t>(n);
  auto o_u8 = be.alloc_poisoned<uint8_t>(n);
  auto o_u16 = be.alloc_poisoned<uint16_t>(n);
  auto o_u32 = be.alloc_poisoned<uint32_t>(n);
  auto o_u64 = be.alloc_poisoned<uint64_t>(n);
  auto o_f16 = be.alloc_poisoned<f16_t>(n);
  auto o_bf16 = be.alloc_poisoned<bf16_t>(n);
  auto o_f32 = be.alloc_poisoned<float>(n);
  auto o_f64 = be.alloc_poisoned<double>(n);
  cast_kernel<S>()[{grid1(n)}](dx.ptr(), o_b.ptr(), o_i8.ptr(), o_i16.ptr(), o_i32.ptr(), o_i64.ptr(), o_u8.ptr(),
                               o_u16.ptr(), o_u32.ptr(), o_u64.ptr(), o_f16.ptr(), o_bf16.ptr(), o_f32.ptr(),
                               o_f64.ptr(), n, BLOCK, be.options());
  auto check = [&]<class D>(const tt::DeviceArray<D>& o) {
    if (targets == Targets::no_unsigned_from_float && is_fp<S> && std::is_unsigned_v<D>) return;
    if (targets == Targets::floats_and_bool_only && !is_fp<D> && !std::is_same_v<D, bool>) return;
    tt::host_vector<D> ref(n);
    for (int i = 0; i < n; ++i) ref[i] = convert<D, S>(x[i]);
    tt::check_equal<D>(o.download(), ref, what + " " + tname<S>() + " -> " + tname<D>());
  };
  check(o_b); check(o_i8); check(o_i16); check(o_i32); check(o_i64); check(o_u8); check(o_u16);
  check(o_u32); check(o_u64); check(o_f16); check(o_bf16); check(o_f32); check(o_f64);
}

BOOST_AUTO_TEST_CASE(casts_between_all_dtypes) {
  tt::for_each_backend([&](const tt::Backend& be) {
    auto run = [&]<class S>() {
      const int n = 1000;
      // Values every type holds (fractions for float sources: truncation toward zero).
      run_cast<S>(be, tt::random_vector<S>(n, 40, 0, 100), Targets::all, "in range [0, 100]");
      if constexpr (!std::is_same_v<S, bool> && !std::is_unsigned_v<S>)  // negative values
        run_cast<S>(be, tt::random_vector<S>(n, 41, -100, 100), Targets::no_unsigned_from_float, "in range [-100, 100]");
      if constexpr (std::is_integral_v<S> && !std::is_same_v<S, bool>)  // narrowing wraps
        run_cast<S>(be, tt::random_vector<S>(n, 42, -1e300, 1e300), Targets::all, "full range");
      if constexpr (std::is_same_v<S, float> || std::is_same_v<S, double>)  // rounding to f16/bf16
        run_cast<S>(be, tt::random_vector<S>(n, 43, -60000, 60000), Targets::floats_and_bool_only, "wide range");
    };
    for_each_type(num_types{}, run);
    run.template operator()<bool>();
  });
}

BOOST_AUTO_TEST_CASE(bitcasts) {
  static tritium::Kernel k = tritium::kernel(
      "bitcasts", [](tl::ptr<float> x32, tl::ptr<double> x64, tl::ptr<f16_t> x16, tl::ptr<int32_t> o_i32,
                     tl::ptr<uint32_t> o_u32, tl::ptr<int64_t> o_i64, tl::ptr<int16_t> o_i16, tl::ptr<bf16_t> o_bf16,
                     tl::ptr<float> o_back, tl::i32 n, int B) {
        auto offs = tl::program_id(0) * B + tl::arange(0, B);
        auto m = offs < n;
        auto a = tl::load(x32 + offs, m);
        tl::store(o_i32 + offs, a.to(tl::int32, true), m);
        tl::store(o_u32 + offs, tl::cast(a, tl::uint32, true), m);
        tl::store(o_i64 + offs, tl::load(x64 + offs, m).to(tl::int64, true), m);
        auto h = tl::load(x16 + offs, m);
        tl::store(o_i16 + offs, h.to(tl::int16, true), m);
        tl::store(o_bf16 + offs, h.to(tl::bfloat16, true), m);
        tl::store(o_back + offs, a.to(tl::int32, true).to(tl::float32, true), m);
      });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int n = 1000;
    auto x32 = tt::random_vector<float>(n, 50, -1e3, 1e3);
    auto x64 = tt::random_vector<double>(n, 51, -1e3, 1e3);
    auto x16 = tt::random_vector<f16_t>(n, 52, -1e3, 1e3);
    auto d32 = be.upload<float>(x32);
    auto d64 = be.upload<double>(x64);
    auto d16 = be.upload<f16_t>(x16);
    auto o_i32 = be.alloc_poisoned<int32_t>(n);
    auto o_u32 = be.alloc_poisoned<uint32_t>(n);
    auto o_i64 = be.alloc_poisoned<int64_t>(n);
    auto o_i16 = be.alloc_poisoned<int16_t>(n);
    auto o_bf16 = be.alloc_poisoned<bf16_t>(n);
    auto o_back = be.alloc_poisoned<float>(n);
    k[{grid1(n)}](d32.ptr(), d64.ptr(), d16.ptr(), o_i32.ptr(), o_u32.ptr(), o_i64.ptr(), o_i16.ptr(), o_bf16.ptr(),
                  o_back.ptr(), n, BLOCK, be.options());
    auto bits = [&]<class D, class S>(const std::vector<S>& src) {
      tt::host_vector<D> r(src.size());
      static_assert(sizeof(D) == sizeof(S));
      std::memcpy(r.data(), src.data(), src.size() * sizeof(S));
      return r;
    };
    tt::check_equal<int32_t>(o_i32.download(), bits.template operator()<int32_t>(x32), "f32 -> i32 bitcast");
    tt::check_equal<uint32_t>(o_u32.download(), bits.template operator()<uint32_t>(x32), "f32 -> u32 bitcast");
    tt::check_equal<int64_t>(o_i64.download(), bits.template operator()<int64_t>(x64), "f64 -> i64 bitcast");
    tt::check_equal<int16_t>(o_i16.download(), bits.template operator()<int16_t>(x16), "f16 -> i16 bitcast");
    tt::check_equal<bf16_t>(o_bf16.download(), bits.template operator()<bf16_t>(x16), "f16 -> bf16 bitcast");
    tt::check_equal<float>(o_back.download(), x32, "f32 -> i32 -> f32 bitcast round trip");
  });
}

// Pointers made from integer addresses (Triton's x.to(tl.pointer_type(tl.float16)), as tutorial
// 08's grouped GEMM reads each group's matrices from a device array of int64 addresses): a scalar
// address per program, a block of addresses (one pointer per lane, a gather), and a pointer viewed
// as another element type of the same width.
BOOST_AUTO_TEST_CASE(pointers_from_integer_addresses) {
  constexpr int G = 4, B = 64;
  static tritium::Kernel k = tritium::kernel(
      "pointer_casts", [](tl::ptr<int64_t> addrs, tl::ptr<int32_t> sizes, tl::ptr<f16_t> out, tl::ptr<int16_t> out_bits,
                          tl::ptr<f16_t> firsts) {
        auto g = tl::program_id(0);
        auto src = tl::load(addrs + g).to(tl::pointer_type(tl::float16));
        auto offs = tl::arange(0, B);
        auto m = offs < tl::load(sizes + g);
        tl::store(out + g * B + offs, tl::load(src + offs, m) * 2, m);
        tl::store(out_bits + g * B + offs, tl::load(src.to(tl::pointer_type(tl::int16)) + offs, m), m);
        auto lanes = tl::arange(0, G);
        auto each = tl::load(addrs + lanes).to(tl::pointer_type(tl::float16));  // [G] pointers
        tl::store(firsts + g * G + lanes, tl::load(each));
      });
  tt::for_each_backend([&](const tt::Backend& be) {
    std::vector<tt::DeviceArray<f16_t>> arrays;
    tt::host_vector<int64_t> addrs;
    tt::host_vector<int32_t> sizes = {64, 37, 1, 50};
    std::vector<tt::host_vector<f16_t>> data;
    for (int g = 0; g < G; ++g) {
      data.push_back(tt::random_vector<f16_t>(size_t(sizes[size_t(g)]), 60 + uint32_t(g), -100, 100));
      arrays.push_back(be.upload<f16_t>(data.back()));
      addrs.push_back(reinterpret_cast<int64_t>(arrays.back().ptr()));
    }
    auto daddrs = be.upload<int64_t>(addrs);
    auto dsizes = be.upload<int32_t>(sizes);
    auto out = be.alloc_poisoned<f16_t>(G * B);
    auto bits = be.alloc_poisoned<int16_t>(G * B);
    auto firsts = be.alloc_poisoned<f16_t>(G * G);
    k[{G}](daddrs.ptr(), dsizes.ptr(), out.ptr(), bits.ptr(), firsts.ptr(), be.options());
    tt::host_vector<f16_t> ref_out = tt::poisoned<f16_t>(G * B), ref_firsts(G * G);
    tt::host_vector<int16_t> ref_bits = tt::poisoned<int16_t>(G * B);
    for (int g = 0; g < G; ++g) {
      for (int i = 0; i < sizes[size_t(g)]; ++i) {
        f16_t x = data[size_t(g)][size_t(i)];
        ref_out[size_t(g * B + i)] = tt::from_double<f16_t>(2 * tt::to_double(x));
        std::memcpy(&ref_bits[size_t(g * B + i)], &x, 2);
      }
      for (int j = 0; j < G; ++j) ref_firsts[size_t(g * G + j)] = data[size_t(j)][0];
    }
    tt::check_equal<f16_t>(out.download(), ref_out, "f16 through an address loaded per program");
    tt::check_equal<int16_t>(bits.download(), ref_bits, "the same memory through ptr<i16>");
    tt::check_equal<f16_t>(firsts.download(), ref_firsts, "a gather through a block of loaded addresses");
  });
}

// A pointer is made from a 64-bit integer or a pointer; anything else names the user's line.
BOOST_AUTO_TEST_CASE(pointer_casts_that_are_refused) {
  auto trace = [](auto body) {
    auto kern = tritium::kernel("bad_pointer_cast", body);
    kern.ir(static_cast<int32_t*>(nullptr), static_cast<float*>(nullptr));
  };
  unsigned line = 0;
  tt::check_throws_at([&] {
    trace([&](tl::ptr<int32_t> p, tl::ptr<float>) { line = __LINE__; auto q = tl::load(p).to(tl::pointer_type(tl::float16)); (void)q; });
  }, __FILE__, line, {"tl::cast", "i32", "ptr<f16>", "64-bit integer"}, "i32 -> pointer");
  tt::check_throws_at([&] {
    trace([&](tl::ptr<int32_t>, tl::ptr<float> p) { line = __LINE__; auto q = tl::load(p).to(tl::pointer_type(tl::float32)); (void)q; });
  }, __FILE__, line, {"tl::cast", "f32", "ptr<f32>"}, "f32 -> pointer");
  tt::check_throws_at([&] {
    trace([&](tl::ptr<int32_t>, tl::ptr<float> p) { line = __LINE__; auto q = tl::load(p + tl::arange(0, 16)) < 0; (void)q.to(tl::pointer_type(tl::int8)); });
  }, __FILE__, line, {"tl::cast", "[16]i1", "64-bit integer"}, "bool block -> pointer");
  tt::check_throws_at([&] {
    trace([&](tl::ptr<int32_t> p, tl::ptr<float>) { line = __LINE__; auto q = p.to(tl::pointer_type(tritium::DType::ptr)); (void)q; });
  }, __FILE__, line, {"tl::pointer_type", "number element type"}, "pointer to pointer");
}

// ---- type promotion (traced, not compiled) --------------------------------------------------------------

// The dtype of op(a, b) for a: A block, b: B block.
template <class A, class B, class F> DType promoted(F op) {
  DType result = DType::invalid;
  auto k = tritium::kernel("promote", [&](tl::ptr<A> pa, tl::ptr<B> pb) {
    auto offs = tl::arange(0, 16);
    result = op(tl::load(pa + offs), tl::load(pb + offs)).dtype();
  });
  k.ir(static_cast<A*>(nullptr), static_cast<B*>(nullptr));
  return result;
}
template <class A, class F> DType promoted1(F op) {
  DType result = DType::invalid;
  auto k = tritium::kernel("promote1", [&](tl::ptr<A> pa) { result = op(tl::load(pa + tl::arange(0, 16))).dtype(); });
  k.ir(static_cast<A*>(nullptr));
  return result;
}

#define CHECK_PROMOTE(A, B, OP, EXPECTED)                                                                          \
  BOOST_TEST(std::string(tritium::dtype_name(promoted<A, B>([](tl::tensor a, tl::tensor b) { return OP; }))) ==    \
                 std::string(tritium::dtype_name(EXPECTED)),                                                        \
             #A " " #OP " " #B)
#define CHECK_PROMOTE1(A, OP, EXPECTED)                                                                            \
  BOOST_TEST(std::string(tritium::dtype_name(promoted1<A>([](tl::tensor a) { return OP; }))) ==                    \
                 std::string(tritium::dtype_name(EXPECTED)),                                                        \
             #A ": " #OP)

BOOST_AUTO_TEST_CASE(type_promotion) {
  using i8 = int8_t; using i16 = int16_t; using i32 = int32_t; using i64 = int64_t;
  using u8 = uint8_t; using u16 = uint16_t; using u32 = uint32_t; using u64 = uint64_t;
  using f32 = float; using f64 = double; using f16 = f16_t; using bf16 = bf16_t;
  // Integers: the wider wins; with mixed signedness the unsigned one wins if at least as wide.
  CHECK_PROMOTE(i8, i16, a + b, DType::i16);
  CHECK_PROMOTE(i32, i64, a * b, DType::i64);
  CHECK_PROMOTE(i32, u32, a + b, DType::u32);
  CHECK_PROMOTE(i8, u32, a - b, DType::u32);
  CHECK_PROMOTE(u8, i32, a + b, DType::i32);
  CHECK_PROMOTE(u16, i16, a & b, DType::u16);
  CHECK_PROMOTE(u64, i64, a | b, DType::u64);
  CHECK_PROMOTE(bool, i8, a + b, DType::i8);
  CHECK_PROMOTE(bool, bool, a & b, DType::i1);
  // Floats (Triton's computation_type_impl): f64, then f32, then f16 win; bf16 survives only
  // with bf16 (bf16 with an integer is f32, f16 with bf16 is f16); f16 beats any integer.
  CHECK_PROMOTE(f16, f32, a + b, DType::f32);
  CHECK_PROMOTE(f32, f64, a + b, DType::f64);
  CHECK_PROMOTE(f16, bf16, a + b, DType::f16);
  CHECK_PROMOTE(bf16, f16, a * b, DType::f16);
  CHECK_PROMOTE(bf16, bf16, a * b, DType::bf16);
  CHECK_PROMOTE(f16, f16, a - b, DType::f16);
  CHECK_PROMOTE(i64, f16, a + b, DType::f16);
  CHECK_PROMOTE(u8, bf16, a * b, DType::f32);
  CHECK_PROMOTE(bf16, f32, a - b, DType::f32);
  CHECK_PROMOTE(i32, f32, tl::maximum(a, b), DType::f32);
  CHECK_PROMOTE(i8, f64, tl::where(a > 0, a, b), DType::f64);
  // Division and remainder of half types compute in f32; integer division stays integer.
  CHECK_PROMOTE(f16, f16, a / b, DType::f32);
  CHECK_PROMOTE(bf16, bf16, a % b, DType::f32);
  CHECK_PROMOTE(i16, i16, a / b, DType::i16);
  CHECK_PROMOTE(i32, i32, tl::fdiv(a, b), DType::f32);
  // Comparisons are i1.
  CHECK_PROMOTE(f32, i32, a < b, DType::i1);
  CHECK_PROMOTE(u8, u8, a == b, DType::i1);
  // Weak literals: a number of a kind not above the tensor's takes the tensor's type.
  CHECK_PROMOTE1(i8, a + 1, DType::i8);
  CHECK_PROMOTE1(u8, a * 200, DType::u8);
  CHECK_PROMOTE1(i16, a - int64_t(5), DType::i16);
  CHECK_PROMOTE1(f16, a + 1.5, DType::f16);
  CHECK_PROMOTE1(bf16, a * 2, DType::bf16);
  CHECK_PROMOTE1(f16, a / 2, DType::f32);
  CHECK_PROMOTE1(f64, a + 1.5f, DType::f64);
  CHECK_PROMOTE1(i32, a + 1.5, DType::f32);  // a float literal is above an integer tensor: f32
  CHECK_PROMOTE1(u8, a + 0.5, DType::f32);
  CHECK_PROMOTE1(bool, a + 1, DType::i32);   // an int literal is above bool: i32
  CHECK_PROMOTE1(i64, tl::where(a > 0, a, 0), DType::i64);
  CHECK_PROMOTE1(i8, tl::minimum(a, 3), DType::i8);
  // Casts and bitcasts have the asked-for dtype; ops on the result keep it.
  CHECK_PROMOTE1(f32, a.to(tl::float16) + 1, DType::f16);
  CHECK_PROMOTE1(f32, a.to(tl::int32, true) >> 3, DType::i32);
}

BOOST_AUTO_TEST_CASE(promotion_shows_in_ir) {
  auto k = tritium::kernel("promote_ir", [](tl::ptr<int8_t> x, tl::ptr<f16_t> y, tl::ptr<float> out) {
    auto offs = tl::arange(0, 16);
    tl::store(out + offs, tl::load(x + offs) + tl::load(y + offs));
  });
  std::string ir = k.ir(static_cast<int8_t*>(nullptr), static_cast<f16_t*>(nullptr), static_cast<float*>(nullptr));
  BOOST_TEST_MESSAGE(ir);
  // i8 is converted to f16, added in f16, then converted to f32 by the store.
  BOOST_TEST(ir.find("[16]f16") != std::string::npos, ir);
  BOOST_TEST(ir.find("[16]f32") != std::string::npos, ir);
}

BOOST_AUTO_TEST_CASE(mixed_dtype_arithmetic_runs) {
  // Promotion at run time: i8 + u32 -> u32; f16 * i32 -> f16; bf16 + f16 -> f16; i32 / f32 -> f32.
  static tritium::Kernel k = tritium::kernel(
      "mixed", [](tl::ptr<int8_t> a8, tl::ptr<uint32_t> b32, tl::ptr<f16_t> h, tl::ptr<int32_t> i, tl::ptr<bf16_t> bh,
                  tl::ptr<uint32_t> o1, tl::ptr<f16_t> o2, tl::ptr<float> o3, tl::ptr<float> o4, tl::i32 n, int B) {
        auto offs = tl::program_id(0) * B + tl::arange(0, B);
        auto m = offs < n;
        auto va = tl::load(a8 + offs, m);
        auto vh = tl::load(h + offs, m);
        auto vi = tl::load(i + offs, m);
        tl::store(o1 + offs, va + tl::load(b32 + offs, m), m);
        tl::store(o2 + offs, vh * vi, m);
        tl::store(o3 + offs, tl::load(bh + offs, m) + vh, m);
        tl::store(o4 + offs, vi / tl::load(h + offs, m, 1).to(tl::float32), m);
      });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int n = 1000;
    auto a8 = tt::random_vector<int8_t>(n, 60, -128, 127);
    auto b32 = tt::random_vector<uint32_t>(n, 61, 0, 4e9);
    auto h = tt::random_nonzero<f16_t>(n, 62, -2, 2, 0.1);
    auto i = tt::random_vector<int32_t>(n, 63, -20, 20);
    auto bh = tt::random_vector<bf16_t>(n, 64, -2, 2);
    auto da = be.upload<int8_t>(a8);
    auto db = be.upload<uint32_t>(b32);
    auto dh = be.upload<f16_t>(h);
    auto di = be.upload<int32_t>(i);
    auto dbh = be.upload<bf16_t>(bh);
    auto o1 = be.alloc_poisoned<uint32_t>(n);
    auto o2 = be.alloc_poisoned<f16_t>(n);
    auto o3 = be.alloc_poisoned<float>(n);
    auto o4 = be.alloc_poisoned<float>(n);
    k[{grid1(n)}](da.ptr(), db.ptr(), dh.ptr(), di.ptr(), dbh.ptr(), o1.ptr(), o2.ptr(), o3.ptr(), o4.ptr(), n, BLOCK,
                  be.options());
    tt::host_vector<uint32_t> r1(n);
    std::vector<double> r2(n), r3(n), r4(n);
    for (int j = 0; j < n; ++j) {
      r1[j] = static_cast<uint32_t>(static_cast<uint32_t>(a8[j]) + b32[j]);  // i8 sign-extends to u32
      r2[j] = tt::round_to<f16_t>(tt::to_float(h[j]) * tt::to_float(tt::to_f16(static_cast<float>(i[j]))));
      r3[j] = tt::round_to<f16_t>(tt::to_float(bh[j]) + tt::to_float(h[j]));  // bf16 + f16 computes in f16
      r4[j] = static_cast<float>(static_cast<float>(i[j]) / tt::to_float(h[j]));
    }
    tt::check_equal<uint32_t>(o1.download(), r1, "i8 + u32");
    tt::check_close<f16_t>(o2.download(), r2, 1e-3, "f16 * i32");
    tt::check_close<float>(o3.download(), r3, 1e-3, "bf16 + f16");
    tt::check_close<float>(o4.download(), r4, 1e-6, "i32 / f32");
  });
}

// ---- shapes ---------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(broadcasting_2d) {
  // out[i, j] = x[i] * 1000 + y[j], from [BM,1] and [1,BN] blocks made three ways.
  static tritium::Kernel k = tritium::kernel(
      "outer", [](tl::ptr<float> x, tl::ptr<float> y, tl::ptr<float> o1, tl::ptr<float> o2, tl::ptr<float> o3,
                  tl::i32 M, tl::i32 N, int BM, int BN) {
        auto rm = tl::program_id(0) * BM + tl::arange(0, BM);
        auto rn = tl::program_id(1) * BN + tl::arange(0, BN);
        auto vx = tl::load(x + rm, rm < M);
        auto vy = tl::load(y + rn, rn < N);
        auto mask = (rm < M)(tl::_, tl::None) && (rn < N)(tl::None, tl::_);
        auto offs = rm(tl::_, tl::None) * N + rn(tl::None, tl::_);
        // x[:, None] * 1000 + y[None, :]
        tl::store(o1 + offs, vx(tl::_, tl::None) * 1000 + vy(tl::None, tl::_), mask);
        // expand_dims + broadcast_to
        auto bx = tl::broadcast_to(tl::expand_dims(vx, 1), {BM, BN});
        auto by = tl::broadcast_to(tl::expand_dims(vy, 0), {BM, BN});
        tl::store(o2 + offs, bx * 1000 + by, mask);
        // tl::broadcast of the pair, masks broadcast too
        auto [px, py] = tl::broadcast(tl::expand_dims(vx, -1), tl::expand_dims(vy, 0));
        tl::store(o3 + offs, px * 1000.0f + py, (rm < M)(tl::_, tl::None) & (rn < N)(tl::None, tl::_));
      });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int M = 37, N = 50, BM = 16, BN = 32;
    auto x = tt::random_vector<float>(M, 70), y = tt::random_vector<float>(N, 71);
    auto dx = be.upload<float>(x), dy = be.upload<float>(y);
    auto o1 = be.alloc_poisoned<float>(M * N), o2 = be.alloc_poisoned<float>(M * N), o3 = be.alloc_poisoned<float>(M * N);
    k[{tritium::cdiv(M, BM), tritium::cdiv(N, BN)}](dx.ptr(), dy.ptr(), o1.ptr(), o2.ptr(), o3.ptr(), M, N, BM, BN,
                                                    be.options());
    std::vector<double> ref(M * N);
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) ref[i * N + j] = static_cast<float>(x[i] * 1000.0f + y[j]);
    tt::check_close<float>(o1.download(), ref, 1e-7, "x[:, None] * 1000 + y[None, :]");
    tt::check_close<float>(o2.download(), ref, 1e-7, "expand_dims + broadcast_to");
    tt::check_close<float>(o3.download(), ref, 1e-7, "tl::broadcast");
  });
}

BOOST_AUTO_TEST_CASE(reshape_trans_permute) {
  constexpr int R = 8, C = 16;
  static tritium::Kernel k = tritium::kernel(
      "shapes", [](tl::ptr<int32_t> x, tl::ptr<int32_t> o_trans, tl::ptr<int32_t> o_T, tl::ptr<int32_t> o_reshape,
                   tl::ptr<int32_t> o_perm, tl::ptr<int32_t> o_trans3, tl::ptr<int32_t> o_view) {
        auto r = tl::arange(0, R), c = tl::arange(0, C);
        auto tile = tl::load(x + r(tl::_, tl::None) * C + c(tl::None, tl::_));  // [R, C]
        // trans: [C, R], out[j, i] = x[i, j]
        auto rc = tl::arange(0, C)(tl::_, tl::None) * R + tl::arange(0, R)(tl::None, tl::_);
        tl::store(o_trans + rc, tl::trans(tile));
        tl::store(o_T + rc, tile.T());
        // reshape keeps row-major order: [C, R] view of the same 128 elements
        tl::store(o_reshape + rc, tl::reshape(tile, {C, R}));
        tl::store(o_view + tl::arange(0, R * C), tl::view(tile, {R * C}));
        // 3-D: [2, 4, 16] permuted (2, 0, 1) -> [16, 2, 4]
        auto t3 = tl::reshape(tile, {2, 4, 16});
        auto p = tl::permute(t3, {2, 0, 1});
        auto i0 = tl::arange(0, 16)(tl::_, tl::None, tl::None), i1 = tl::arange(0, 2)(tl::None, tl::_, tl::None),
             i2 = tl::arange(0, 4)(tl::None, tl::None, tl::_);
        tl::store(o_perm + i0 * 8 + i1 * 4 + i2, p);
        tl::store(o_trans3 + i0 * 8 + i1 * 4 + i2, tl::trans(t3, {2, 0, 1}));
      });
  tt::for_each_backend([&](const tt::Backend& be) {
    auto x = tt::random_vector<int32_t>(R * C, 80, -1000, 1000);
    auto dx = be.upload<int32_t>(x);
    std::vector<tt::DeviceArray<int32_t>> o;
    for (int i = 0; i < 6; ++i) o.push_back(be.alloc_poisoned<int32_t>(R * C));
    k[{1}](dx.ptr(), o[0].ptr(), o[1].ptr(), o[2].ptr(), o[3].ptr(), o[4].ptr(), o[5].ptr(), be.options());
    tt::host_vector<int32_t> t(R * C), perm(R * C);
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < C; ++j) t[j * R + i] = x[i * C + j];
    // t3[a][b][c] = x[a*64 + b*16 + c]; p[c][a][b] = t3[a][b][c]
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 4; ++b)
        for (int c = 0; c < 16; ++c) perm[c * 8 + a * 4 + b] = x[a * 64 + b * 16 + c];
    tt::check_equal<int32_t>(o[0].download(), t, "trans");
    tt::check_equal<int32_t>(o[1].download(), t, ".T()");
    tt::check_equal<int32_t>(o[2].download(), x, "reshape");
    tt::check_equal<int32_t>(o[3].download(), perm, "permute 3-D");
    tt::check_equal<int32_t>(o[4].download(), perm, "trans with dims");
    tt::check_equal<int32_t>(o[5].download(), x, "view");
  });
}

BOOST_AUTO_TEST_CASE(arange_full_zeros) {
  static tritium::Kernel k = tritium::kernel(
      "factories", [](tl::ptr<int32_t> o_ar, tl::ptr<int32_t> o_ar2, tl::ptr<float> o_full, tl::ptr<f16_t> o_full16,
                      tl::ptr<int64_t> o_zeros, tl::ptr<double> o_zl, tl::ptr<uint8_t> o_full2d, tl::f32 v, int B) {
        auto offs = tl::arange(0, B);
        tl::store(o_ar + offs, offs);
        tl::store(o_ar2 + offs, tl::arange(16, 16 + B));  // start != 0
        tl::store(o_full + offs, tl::full({B}, 2.5, tl::float32) + tl::full({B}, v, tl::float32));
        tl::store(o_full16 + offs, tl::full({B}, -3, tl::float16));
        auto z = tl::zeros({B}, tl::int64);
        tl::store(o_zeros + offs, z + 7);
        tl::store(o_zl + offs, tl::zeros_like(tl::load(o_zl + offs)) - 1);
        auto o2 = offs(tl::_, tl::None) * 4 + tl::arange(0, 4)(tl::None, tl::_);
        tl::store(o_full2d + (o2 % B), tl::full({B, 4}, 200, tl::uint8), (o2 < B));
      });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int B = 64;
    auto o_ar = be.alloc_poisoned<int32_t>(B), o_ar2 = be.alloc_poisoned<int32_t>(B);
    auto o_full = be.alloc_poisoned<float>(B);
    auto o_full16 = be.alloc_poisoned<f16_t>(B);
    auto o_zeros = be.alloc_poisoned<int64_t>(B);
    auto o_zl = be.upload<double>(tt::random_vector<double>(B, 90));
    auto o_full2d = be.alloc_poisoned<uint8_t>(B);
    k[{1}](o_ar.ptr(), o_ar2.ptr(), o_full.ptr(), o_full16.ptr(), o_zeros.ptr(), o_zl.ptr(), o_full2d.ptr(), 0.25f, B,
           be.options());
    tt::host_vector<int32_t> ar(B), ar2(B);
    std::iota(ar.begin(), ar.end(), 0);
    std::iota(ar2.begin(), ar2.end(), 16);
    tt::check_equal<int32_t>(o_ar.download(), ar, "arange(0, B)");
    tt::check_equal<int32_t>(o_ar2.download(), ar2, "arange(16, 16 + B)");
    tt::check_equal<float>(o_full.download(), tt::host_vector<float>(B, 2.75f), "full f32");
    tt::check_equal<f16_t>(o_full16.download(), tt::host_vector<f16_t>(B, tt::to_f16(-3)), "full f16");
    tt::check_equal<int64_t>(o_zeros.download(), tt::host_vector<int64_t>(B, 7), "zeros i64");
    tt::check_equal<double>(o_zl.download(), tt::host_vector<double>(B, -1.0), "zeros_like f64");
    tt::check_equal<uint8_t>(o_full2d.download(), tt::host_vector<uint8_t>(B, 200), "full 2-D u8");
  });
}

BOOST_AUTO_TEST_CASE(program_id_and_num_programs) {
  static tritium::Kernel k = tritium::kernel("pids", [](tl::ptr<int32_t> o_pid, tl::ptr<int32_t> o_np) {
    auto p0 = tl::program_id(0), p1 = tl::program_id(1), p2 = tl::program_id(2);
    auto n0 = tl::num_programs(0), n1 = tl::num_programs(1), n2 = tl::num_programs(2);
    auto lin = p0 + n0 * (p1 + n1 * p2);
    tl::store(o_pid + lin, p0 + 100 * p1 + 10000 * p2);
    tl::store(o_np + lin, n0 + 100 * n1 + 10000 * n2);
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    for (auto g : {tritium::Grid(7), tritium::Grid(3, 4), tritium::Grid(3, 4, 5), tritium::Grid(1, 1, 6)}) {
      BOOST_TEST_CONTEXT("grid " << g.x << "x" << g.y << "x" << g.z) {
        int total = static_cast<int>(g.x * g.y * g.z);
        auto o_pid = be.alloc_poisoned<int32_t>(total), o_np = be.alloc_poisoned<int32_t>(total);
        k[g](o_pid.ptr(), o_np.ptr(), be.options());
        tt::host_vector<int32_t> rp(total), rn(total, static_cast<int32_t>(g.x + 100 * g.y + 10000 * g.z));
        for (int z = 0; z < g.z; ++z)
          for (int y = 0; y < g.y; ++y)
            for (int x = 0; x < g.x; ++x) rp[x + g.x * (y + g.y * z)] = x + 100 * y + 10000 * z;
        tt::check_equal<int32_t>(o_pid.download(), rp, "program_id");
        tt::check_equal<int32_t>(o_np.download(), rn, "num_programs");
      }
    }
  });
}

// ---- memory ----------------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(vector_add_sizes_and_hints) {
  // The same kernel with and without contiguity/divisibility hints: results must not change.
  auto make = [](bool hints) {
    return tritium::kernel(hints ? "add_hints" : "add_plain",
                           [hints](tl::ptr<float> x, tl::ptr<float> y, tl::ptr<float> out, tl::i32 n, int B) {
                             auto offs = tl::program_id(0) * B + tl::arange(0, B);
                             if (hints) offs = tl::max_contiguous(tl::multiple_of(offs, B), B);
                             auto m = offs < n;
                             tl::store(out + offs, tl::load(x + offs, m) + tl::load(y + offs, m), m);
                           });
  };
  static tritium::Kernel plain = make(false), hinted = make(true);
  tt::for_each_backend([&](const tt::Backend& be) {
    for (int n : {1, 16, 77, 1000, 1024, 4099}) {
      BOOST_TEST_CONTEXT("n " << n) {
        auto x = tt::random_vector<float>(n, 100 + n), y = tt::random_vector<float>(n, 200 + n);
        auto dx = be.upload<float>(x), dy = be.upload<float>(y);
        std::vector<double> ref(n);
        for (int i = 0; i < n; ++i) ref[i] = x[i] + y[i];
        for (auto* k : {&plain, &hinted}) {
          auto out = be.alloc_poisoned<float>(n);
          (*k)[{grid1(n)}](dx.ptr(), dy.ptr(), out.ptr(), n, BLOCK, be.options());
          tt::check_close<float>(out.download(), ref, 0, k->name());
        }
      }
    }
  });
}

BOOST_AUTO_TEST_CASE(pointer_arithmetic_and_int64_offsets) {
  static tritium::Kernel k = tritium::kernel(
      "ptr_arith", [](tl::ptr<float> x, tl::ptr<float> o1, tl::ptr<float> o2, tl::ptr<float> o3, tl::ptr<float> o4,
                      tl::i64 big, tl::i32 n, int B) {
        auto pid = tl::program_id(0);
        auto r = tl::arange(0, B);
        auto offs = pid * B + r;
        auto m = offs < n;
        // scalar pointer + scalar, then + block; literal + pointer; pointer - literal
        auto base = x + pid * B;
        tl::store(o1 + offs, tl::load((3 + base) + r - 3, m), m);
        // int64 offsets, including a huge one that cancels out (would be wrong if truncated to 32 bits)
        auto offs64 = offs.to(tl::int64);
        tl::store(o2 + offs64, tl::load((x - big) + (offs64 + big), m), m);
        // unsigned and i16 offsets
        tl::store(o3 + offs.to(tl::uint32), tl::load(x + offs.to(tl::uint32), m) * 2, m);
        auto ptrs = o4 + pid * B;
        ptrs += r.to(tl::int16);
        tl::store(ptrs, tl::load(x + offs, m) + 1, m);
      });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int n = 1000;
    auto x = tt::random_vector<float>(n, 110);
    auto dx = be.upload<float>(x);
    auto o1 = be.alloc_poisoned<float>(n), o2 = be.alloc_poisoned<float>(n), o3 = be.alloc_poisoned<float>(n),
         o4 = be.alloc_poisoned<float>(n);
    k[{grid1(n)}](dx.ptr(), o1.ptr(), o2.ptr(), o3.ptr(), o4.ptr(), int64_t(5'000'000'000), n, BLOCK, be.options());
    std::vector<double> r1(n), r3(n), r4(n);
    for (int i = 0; i < n; ++i) r1[i] = x[i], r3[i] = x[i] * 2.0f, r4[i] = x[i] + 1.0f;
    tt::check_close<float>(o1.download(), r1, 0, "scalar and block pointer arithmetic");
    tt::check_close<float>(o2.download(), r1, 0, "int64 offsets");
    tt::check_close<float>(o3.download(), r3, 0, "u32 offsets");
    tt::check_close<float>(o4.download(), r4, 0, "i16 offsets, +=");
  });
}

BOOST_AUTO_TEST_CASE(scalar_loads_and_stores) {
  static tritium::Kernel k = tritium::kernel(
      "scalars", [](tl::ptr<float> x, tl::ptr<int32_t> iv, tl::ptr<float> o, tl::ptr<int32_t> oi, tl::ptr<double> od,
                    tl::f32 s, tl::i32 limit) {
        auto pid = tl::program_id(0);
        auto v = tl::load(x + pid);                 // scalar load
        tl::store(o + pid, v * s + 1);              // scalar store
        auto i = tl::load(iv + pid, pid < limit, -5);  // scalar mask and other
        tl::store(oi + pid, i);
        tl::store(od + pid, 0.5, pid < limit);      // literal through a scalar pointer, masked
      });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int n = 37, limit = 20;
    auto x = tt::random_vector<float>(n, 120);
    auto iv = tt::random_vector<int32_t>(n, 121, -100, 100);
    auto dx = be.upload<float>(x);
    auto div = be.upload<int32_t>(iv);
    auto o = be.alloc_poisoned<float>(n);
    auto oi = be.alloc_poisoned<int32_t>(n);
    auto od = be.alloc_poisoned<double>(n);
    k[{n}](dx.ptr(), div.ptr(), o.ptr(), oi.ptr(), od.ptr(), 3.0f, limit, be.options());
    std::vector<double> ro(n);
    tt::host_vector<int32_t> ri(n);
    tt::host_vector<double> rd(n, tt::poison_value<double>());
    for (int i = 0; i < n; ++i) {
      ro[i] = static_cast<float>(x[i] * 3.0f + 1.0f);
      ri[i] = i < limit ? iv[i] : -5;
      if (i < limit) rd[i] = 0.5;
    }
    tt::check_close<float>(o.download(), ro, 1e-7, "scalar load/store");
    tt::check_equal<int32_t>(oi.download(), ri, "scalar masked load with other");
    tt::check_equal<double>(od.download(), rd, "scalar masked store (masked-off lanes untouched)");
  });
}

BOOST_AUTO_TEST_CASE(masked_loads_with_other) {
  // Every lane of every block is stored: masked-off lanes must hold `other`.
  static tritium::Kernel k = tritium::kernel(
      "other", [](tl::ptr<float> x, tl::ptr<int16_t> xi, tl::ptr<float> o1, tl::ptr<int16_t> o2, tl::ptr<float> o3,
                  tl::ptr<float> o4, tl::i32 n, int B) {
        auto offs = tl::program_id(0) * B + tl::arange(0, B);
        auto m = offs < n;
        tl::store(o1 + offs, tl::load(x + offs, m, -7.5));
        tl::store(o2 + offs, tl::load(xi + offs, m, -3));
        tl::store(o3 + offs, tl::load(x + offs, m, offs.to(tl::float32)));  // a block as `other`
        // 2-D mask broadcast from [B, 1] against [B, 2] pointers
        auto offs2 = offs(tl::_, tl::None) * 2 + tl::arange(0, 2)(tl::None, tl::_);
        tl::store(o4 + offs2, tl::load(x + offs2, m(tl::_, tl::None), 0.0f));
      });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int n = 300, grid = grid1(n), total = grid * BLOCK;
    auto x = tt::random_vector<float>(2 * total, 130);  // o4 reads up to 2n; the rest is masked
    auto xi = tt::random_vector<int16_t>(n, 131, -1000, 1000);
    auto dx = be.upload<float>(x);
    auto dxi = be.upload<int16_t>(xi);
    auto o1 = be.alloc_poisoned<float>(total), o3 = be.alloc_poisoned<float>(total), o4 = be.alloc_poisoned<float>(2 * total);
    auto o2 = be.alloc_poisoned<int16_t>(total);
    k[{grid}](dx.ptr(), dxi.ptr(), o1.ptr(), o2.ptr(), o3.ptr(), o4.ptr(), n, BLOCK, be.options());
    std::vector<double> r1(total), r3(total), r4(2 * total);
    tt::host_vector<int16_t> r2(total);
    for (int i = 0; i < total; ++i) {
      r1[i] = i < n ? x[i] : -7.5;
      r2[i] = i < n ? xi[i] : -3;
      r3[i] = i < n ? x[i] : i;
      r4[2 * i] = i < n ? x[2 * i] : 0, r4[2 * i + 1] = i < n ? x[2 * i + 1] : 0;
    }
    tt::check_close<float>(o1.download(), r1, 0, "other = -7.5");
    tt::check_equal<int16_t>(o2.download(), r2, "other = -3 (i16)");
    tt::check_close<float>(o3.download(), r3, 0, "other = block");
    tt::check_close<float>(o4.download(), r4, 0, "2-D load with a broadcast mask");
  });
}

BOOST_AUTO_TEST_CASE(float_literals_through_integer_pointers) {
  // Triton casts load's `other` and stored values to the pointee: a float literal through an
  // integer pointer is an f32 constant converted (toward zero), as bitsandbytes' int8 matmul
  // loads int8 tiles with other=0.0.
  static tritium::Kernel k = tritium::kernel(
      "float_literal_int_ptr", [](tl::ptr<int8_t> x, tl::ptr<int8_t> o1, tl::ptr<int32_t> o2, tl::i32 n, int B) {
        auto offs = tl::program_id(0) * B + tl::arange(0, B);
        auto m = offs < n;
        tl::store(o1 + offs, tl::load(x + offs, m, 0.0));
        tl::store(o2 + offs, -2.75);  // every lane, unmasked
      });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int n = 300, total = grid1(n) * BLOCK;
    auto x = tt::random_vector<int8_t>(n, 132, -128, 127);
    auto dx = be.upload<int8_t>(x);
    auto o1 = be.alloc_poisoned<int8_t>(total);
    auto o2 = be.alloc_poisoned<int32_t>(total);
    k[{grid1(n)}](dx.ptr(), o1.ptr(), o2.ptr(), n, BLOCK, be.options());
    tt::host_vector<int8_t> r1(total, 0);
    std::copy(x.begin(), x.end(), r1.begin());
    tt::check_equal<int8_t>(o1.download(), r1, "int8 load with other = 0.0");
    tt::check_equal<int32_t>(o2.download(), tt::host_vector<int32_t>(total, -2), "i32 store of -2.75");
  });
  // A literal that cannot be the pointee names the user's line, not <optional>'s.
  static unsigned line = 0;
  static tritium::Kernel bad = tritium::kernel("int8_other_too_large", [](tl::ptr<int8_t> x, tl::ptr<int8_t> o, int B) {
    auto offs = tl::arange(0, B);
    line = __LINE__; tl::store(o + offs, tl::load(x + offs, offs < 3, 300));
  });
  tt::for_each_backend([&](const tt::Backend& be) {
    auto dx = be.upload<int8_t>(tt::host_vector<int8_t>(BLOCK, 1));
    auto o = be.alloc_poisoned<int8_t>(BLOCK);
    tt::check_throws_at([&] { bad[{1}](dx.ptr(), o.ptr(), BLOCK, be.options()); }, __FILE__, line,
                        {"tl::load", "300 does not fit in i8"}, "int8 other = 300");
  });
}

BOOST_AUTO_TEST_CASE(compound_assignment_and_literal_operands) {
  static tritium::Kernel k = tritium::kernel(
      "compound", [](tl::ptr<int32_t> x, tl::ptr<int32_t> o, tl::ptr<float> of, tl::i32 n, int B) {
        auto offs = tl::program_id(0) * B + tl::arange(0, B);
        auto m = offs < n;
        auto a = tl::load(x + offs, m);
        auto t = a;
        t += 5; t *= 3; t -= a; t /= 2; t %= 1000; t <<= 2; t >>= 1; t &= 0xfff; t |= 1; t ^= 0x10;
        tl::store(o + offs, t, m);
        auto f = 10 - a.to(tl::float32) * 0.5f;  // literal on the left
        tl::store(of + offs, 2 / (1 + f * f), m);
      });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int n = 1000;
    auto x = tt::random_vector<int32_t>(n, 140, -100000, 100000);
    auto dx = be.upload<int32_t>(x);
    auto o = be.alloc_poisoned<int32_t>(n);
    auto of = be.alloc_poisoned<float>(n);
    k[{grid1(n)}](dx.ptr(), o.ptr(), of.ptr(), n, BLOCK, be.options());
    tt::host_vector<int32_t> r(n);
    std::vector<double> rf(n);
    for (int i = 0; i < n; ++i) {
      int32_t a = x[i], t = a;
      t += 5; t *= 3; t -= a; t /= 2; t %= 1000; t = static_cast<int32_t>(static_cast<uint32_t>(t) << 2); t >>= 1;
      t &= 0xfff; t |= 1; t ^= 0x10;
      r[i] = t;
      double f = 10 - static_cast<double>(a) * 0.5;
      rf[i] = 2 / (1 + f * f);
    }
    tt::check_equal<int32_t>(o.download(), r, "compound assignments");
    tt::check_close<float>(of.download(), rf, 1e-6, "literal operands");
  });
}

BOOST_AUTO_TEST_CASE(load_store_all_dtypes_with_other) {
  // Masked loads of every dtype (bool included) with `other`, stored unmasked over whole blocks.
  tt::for_each_backend([&](const tt::Backend& be) {
    auto run = [&]<class T>() {
      static tritium::Kernel k = tritium::kernel("copy_" + tname<T>(), [](tl::ptr<T> x, tl::ptr<T> o, tl::i32 n, int B) {
        auto offs = tl::program_id(0) * B + tl::arange(0, B);
        tl::store(o + offs, tl::load(x + offs, offs < n, 1));
      });
      const int n = 1000, total = grid1(n) * BLOCK;
      BOOST_TEST_CONTEXT("dtype " << tname<T>()) {
        auto x = std::is_same_v<T, bool> ? tt::random_vector<T>(n, 150) : inputs<T>(n, 150);
        auto dx = be.upload<T>(x);
        auto o = be.alloc_poisoned<T>(total);
        k[{grid1(n)}](dx.ptr(), o.ptr(), n, BLOCK, be.options());
        tt::host_vector<T> ref(total, tt::from_double<tt::storage_t<T>>(1));
        std::copy(x.begin(), x.end(), ref.begin());
        tt::check_equal<T>(o.download(), ref, "copy with other = 1");
      }
    };
    for_each_type(num_types{}, run);
    run.template operator()<bool>();
  });
}

BOOST_AUTO_TEST_CASE(integer_division_by_zero_does_not_crash) {
  // x / 0 and x % 0 give unspecified values (as on a GPU) but never kill the process; INT_MIN / -1
  // wraps to INT_MIN and INT_MIN % -1 is 0. Shifts by >= the width give 0 (>> of a negative: -1).
  static tritium::Kernel k = tritium::kernel(
      "div_zero", [](tl::ptr<int32_t> x, tl::ptr<int32_t> y, tl::ptr<int32_t> o_div, tl::ptr<int32_t> o_rem,
                     tl::ptr<uint32_t> o_udiv, tl::ptr<int32_t> o_shl, tl::ptr<int32_t> o_shr, tl::i32 n, int B) {
        auto offs = tl::program_id(0) * B + tl::arange(0, B);
        auto m = offs < n;
        auto a = tl::load(x + offs, m), b = tl::load(y + offs, m);
        tl::store(o_div + offs, a / b, m);
        tl::store(o_rem + offs, a % b, m);
        tl::store(o_udiv + offs, a.to(tl::uint32) / b.to(tl::uint32), m);
        tl::store(o_shl + offs, a << 40, m);
        tl::store(o_shr + offs, a >> (b + 100), m);
      });
  tt::for_each_backend([&](const tt::Backend& be) {
    const int n = 200;
    auto x = tt::random_vector<int32_t>(n, 160, -1000, 1000);
    tt::host_vector<int32_t> y(n, 0);
    for (int i = 0; i < n; i += 2) { x[i] = std::numeric_limits<int32_t>::min(); y[i] = -1; }
    auto dx = be.upload<int32_t>(x), dy = be.upload<int32_t>(y);
    auto o_div = be.alloc_poisoned<int32_t>(n), o_rem = be.alloc_poisoned<int32_t>(n), o_shl = be.alloc_poisoned<int32_t>(n),
         o_shr = be.alloc_poisoned<int32_t>(n);
    auto o_udiv = be.alloc_poisoned<uint32_t>(n);
    BOOST_REQUIRE_NO_THROW(k[{tritium::cdiv(n, BLOCK)}](dx.ptr(), dy.ptr(), o_div.ptr(), o_rem.ptr(), o_udiv.ptr(),
                                                        o_shl.ptr(), o_shr.ptr(), n, BLOCK, be.options()));
    auto div = o_div.download(), rem = o_rem.download(), shl = o_shl.download(), shr = o_shr.download();
    bool min_ok = true, shift_ok = true;
    for (int i = 0; i < n; ++i) {
      if (i % 2 == 0) min_ok &= div[i] == std::numeric_limits<int32_t>::min() && rem[i] == 0;
      shift_ok &= shl[i] == 0 && shr[i] == (x[i] < 0 ? -1 : 0);
    }
    BOOST_TEST(min_ok, "INT_MIN / -1 and INT_MIN % -1");
    BOOST_TEST(shift_ok, "shifts by >= the bit width");
  });
}

}  // namespace

BOOST_AUTO_TEST_SUITE_END()
