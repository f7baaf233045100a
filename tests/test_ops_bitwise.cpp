// Bitwise and logical ops (ops/bitwise.h): exact results against host references for every
// integer width, signed and unsigned, and bool; broadcasting and strided inputs; PyTorch's shift
// rule past the width; the logical ops on floats (NaN is true); the errors on floats.
#include <cstdint>
#include <limits>
#include <random>

#include "nn/functional.h"
#include "ops_test_helpers.h"
#include "ew_test_support.h"

namespace tt = tritium::test;
namespace ou = tritium::test::ops_util;
namespace ew = tritium::test::ew;
namespace ops = tritium::ops;
using tritium::DType;
using tritium::Tensor;
using ops::Scalar;

BOOST_AUTO_TEST_SUITE(test_ops_bitwise)

namespace {

template <class T>
std::vector<T> random_ints(size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(rng());
  v[0] = std::numeric_limits<T>::min();
  v[1] = std::numeric_limits<T>::max();
  v[2] = 0;
  return v;
}

template <class T>
void check_integer_type() {
  const size_t n = 1031;
  auto a = random_ints<T>(n, 1), b = random_ints<T>(n, 2);
  Tensor ta = Tensor::from_vector<T>(a, {static_cast<int64_t>(n)}), tb = Tensor::from_vector<T>(b, {static_cast<int64_t>(n)});
  const int bits = 8 * sizeof(T);
  std::vector<T> rand_, ror, rxor, rnot, rshl, rshr;
  std::vector<T> amount(n);
  std::mt19937 rng(3);
  for (size_t i = 0; i < n; ++i) {
    // Shift amounts in [-2, bits + 2]: negative and past the width included (unsigned types skip negatives).
    int s = static_cast<int>(rng() % (bits + 5)) - (std::is_signed_v<T> ? 2 : 0);
    amount[i] = static_cast<T>(s);
    rand_.push_back(a[i] & b[i]);
    ror.push_back(a[i] | b[i]);
    rxor.push_back(a[i] ^ b[i]);
    rnot.push_back(static_cast<T>(~a[i]));
    bool out = s < 0 || s >= bits;
    using U = std::make_unsigned_t<T>;
    rshl.push_back(out ? T(0) : static_cast<T>(static_cast<U>(a[i]) << s));
    rshr.push_back(out ? (a[i] < 0 ? T(-1) : T(0)) : static_cast<T>(a[i] >> s));
  }
  Tensor ts = Tensor::from_vector<T>(amount, {static_cast<int64_t>(n)});
  std::string dn = tritium::dtype_name(ta.dtype());
  BOOST_TEST((ops::bitwise_and(ta, tb).to_vector<T>() == rand_), "and " << dn);
  BOOST_TEST((ops::bitwise_or(ta, tb).to_vector<T>() == ror), "or " << dn);
  BOOST_TEST((ops::bitwise_xor(ta, tb).to_vector<T>() == rxor), "xor " << dn);
  BOOST_TEST((ops::bitwise_not(ta).to_vector<T>() == rnot), "not " << dn);
  BOOST_TEST((ops::bitwise_left_shift(ta, ts).to_vector<T>() == rshl), "left shift " << dn);
  BOOST_TEST((ops::bitwise_right_shift(ta, ts).to_vector<T>() == rshr), "right shift " << dn);
  BOOST_TEST((ops::bitwise_and(ta, tb).dtype() == ta.dtype()));
}

}  // namespace

BOOST_AUTO_TEST_CASE(integer_types_exact) {
  tt::for_each_backend([&](const tt::Backend&) {
    check_integer_type<int8_t>();
    check_integer_type<int16_t>();
    check_integer_type<int32_t>();
    check_integer_type<int64_t>();
    check_integer_type<uint8_t>();
  });
}

BOOST_AUTO_TEST_CASE(bool_promotion_broadcast_strided) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor p = Tensor::from_vector<bool>({true, true, false, false}, {4});
    Tensor q = Tensor::from_vector<bool>({true, false, true, false}, {4});
    BOOST_TEST((ops::bitwise_and(p, q).dtype() == DType::i1));
    BOOST_TEST((ops::bitwise_and(p, q).to_vector<bool>() == std::vector<bool>{true, false, false, false}));
    BOOST_TEST((ops::bitwise_or(p, q).to_vector<bool>() == std::vector<bool>{true, true, true, false}));
    BOOST_TEST((ops::bitwise_xor(p, q).to_vector<bool>() == std::vector<bool>{false, true, true, false}));
    BOOST_TEST((ops::bitwise_not(p).to_vector<bool>() == std::vector<bool>{false, false, true, true}));
    // Promotion: u8 with i8 is i16; bool with i32 is i32; a Scalar keeps the tensor's type.
    Tensor u = Tensor::from_vector<uint8_t>({200, 15}, {2});
    Tensor s = Tensor::from_vector<int8_t>({-1, 3}, {2});
    Tensor r = ops::bitwise_or(u, s);
    BOOST_TEST((r.dtype() == DType::i16));
    BOOST_TEST((r.to_vector<int16_t>() == std::vector<int16_t>{-1, 15}));
    BOOST_TEST((ops::bitwise_and(u, Scalar(0x0F)).dtype() == DType::u8));
    BOOST_TEST((ops::bitwise_and(u, Scalar(0x0F)).to_vector<uint8_t>() == std::vector<uint8_t>{8, 15}));
    BOOST_TEST((ops::bitwise_left_shift(u, Scalar(3)).to_vector<uint8_t>() == std::vector<uint8_t>{64, 120}));
    // Broadcast [3,1] with [4] and a transposed view.
    Tensor a = Tensor::from_vector<int32_t>({1, 2, 4}, {3, 1});
    Tensor b = Tensor::from_vector<int32_t>({8, 3, 5, 7, 1, 2, 4, 6}, {2, 4}).t();  // [4, 2] strided
    Tensor c = ops::bitwise_xor(a, b.select(1, 0));                             // [3, 4]
    std::vector<int32_t> ref;
    for (int32_t x : {1, 2, 4})
      for (int32_t y : {8, 3, 5, 7}) ref.push_back(x ^ y);
    BOOST_TEST((c.to_vector<int32_t>() == ref));
  });
}

BOOST_AUTO_TEST_CASE(logical_ops_any_dtype) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor f = Tensor::from_vector<float>({0.0f, -0.0f, NAN, 2.5f, INFINITY, 0.0f}, {6});
    Tensor i = Tensor::from_vector<int64_t>({3, 0, 0, 0, -1, 0}, {6});
    auto truth = [](double v) { return v != 0 || std::isnan(v); };
    auto fv = ou::values(f), iv = ou::values(i);
    std::vector<bool> land, lor, lxor, lnot;
    for (size_t k = 0; k < fv.size(); ++k) {
      land.push_back(truth(fv[k]) && truth(iv[k]));
      lor.push_back(truth(fv[k]) || truth(iv[k]));
      lxor.push_back(truth(fv[k]) != truth(iv[k]));
      lnot.push_back(!truth(fv[k]));
    }
    BOOST_TEST((ops::logical_and(f, i).dtype() == DType::i1));
    BOOST_TEST((ops::logical_and(f, i).to_vector<bool>() == land));
    BOOST_TEST((ops::logical_or(f, i).to_vector<bool>() == lor));
    BOOST_TEST((ops::logical_xor(f, i).to_vector<bool>() == lxor));
    BOOST_TEST((ops::logical_not(f).to_vector<bool>() == lnot));
    BOOST_TEST((tritium::logical_not(i).to_vector<bool>() == std::vector<bool>{false, true, true, true, false, true}));
    // Empty.
    Tensor e = Tensor::from_vector<int32_t>({}, {0});
    BOOST_TEST(ops::logical_or(e, e).numel() == 0);
  });
}

BOOST_AUTO_TEST_CASE(errors_on_floats) {
  tt::for_each_backend([&](const tt::Backend&) {
    Tensor f = ou::random_tensor<float>({3}, 5);
    Tensor i = Tensor::from_vector<int32_t>({1, 2, 3}, {3});
    Tensor b = Tensor::from_vector<bool>({true, false, true}, {3});
    EW_CHECK_ERROR(ops::bitwise_and(f, i), "bitwise_and: not implemented for f32 tensors");
    EW_CHECK_ERROR(ops::bitwise_or(i, f), "bitwise_or: not implemented for f32 tensors");
    EW_CHECK_ERROR(ops::bitwise_not(f), "bitwise_not: not implemented for f32 tensors");
    EW_CHECK_ERROR(ops::bitwise_xor(i, Scalar(1.5)), "bitwise_xor: not implemented for f64 tensors");
    EW_CHECK_ERROR(ops::bitwise_left_shift(f, i), "bitwise_left_shift: not implemented for f32 tensors");
    EW_CHECK_ERROR(ops::bitwise_right_shift(b, b), "bitwise_right_shift: not implemented for bool tensors");
    EW_CHECK_ERROR(ops::bitwise_and(i, Tensor::from_vector<int32_t>({1, 2}, {2})), "bitwise_and: shapes [3] and [2] cannot be broadcast");
    if (tritium::runtime::device_available(tritium::Device::cuda()) &&
        tritium::runtime::device_available(tritium::Device::cpu())) {
      EW_CHECK_ERROR(ops::bitwise_and(i.to(tritium::Device::cpu()), i.to(tritium::Device::cuda())),
                     "bitwise_and: tensors are on different devices");
    }
  });
}

BOOST_AUTO_TEST_SUITE_END()
