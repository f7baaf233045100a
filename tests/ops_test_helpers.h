// Helpers for the op-library tests (test_ops_*.cpp): random tensors, host float64 views of any
// tensor (read with Tensor::to_vector, independent of the op kernels) and index arithmetic for
// references. Include after test_support.h.
#pragma once
#include "ops/ops.h"
#include "test_support.h"

namespace tritium::test::ops_util {

using Shape = std::vector<int64_t>;

// A contiguous tensor of random values in [lo, hi] (see random_vector).
template <class T>
Tensor random_tensor(const Shape& shape, uint32_t seed, double lo = -1, double hi = 1) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  auto v = random_vector<T>(static_cast<size_t>(n), seed, lo, hi);
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<bool> b(v.begin(), v.end());
    return Tensor::from_vector<bool>(b, shape);
  } else {
    return Tensor::from_vector<T>(std::vector<T>(v.begin(), v.end()), shape);
  }
}

// Every element (row-major) as double, read on the host without any op kernel.
inline std::vector<double> values(const Tensor& t) {
  auto conv = [](const auto& v) {
    std::vector<double> out;
    out.reserve(v.size());
    for (const auto& x : v) out.push_back(to_double(x));
    return out;
  };
  switch (t.dtype()) {
    case DType::i1: {
      auto v = t.to_vector<bool>();
      return std::vector<double>(v.begin(), v.end());
    }
    case DType::i8: return conv(t.to_vector<int8_t>());
    case DType::i16: return conv(t.to_vector<int16_t>());
    case DType::i32: return conv(t.to_vector<int32_t>());
    case DType::i64: return conv(t.to_vector<int64_t>());
    case DType::u8: return conv(t.to_vector<uint8_t>());
    case DType::u16: return conv(t.to_vector<uint16_t>());
    case DType::u32: return conv(t.to_vector<uint32_t>());
    case DType::u64: return conv(t.to_vector<uint64_t>());
    case DType::f16: return conv(t.to_vector<f16_t>());
    case DType::bf16: return conv(t.to_vector<bf16_t>());
    case DType::f32: return conv(t.to_vector<float>());
    case DType::f64: return t.to_vector<double>();
    default: BOOST_FAIL("values: unsupported dtype"); return {};
  }
}

// host_vector<double> for check_close (which wants host_vector<T> of the output type).
inline host_vector<double> as_host(const std::vector<double>& v) { return host_vector<double>(v.begin(), v.end()); }

inline int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// Row-major multi-index of flat index i in `shape`.
inline Shape unravel(int64_t i, const Shape& shape) {
  Shape idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? i % shape[d] : 0;
    i = shape[d] ? i / shape[d] : 0;
  }
  return idx;
}

// Flat row-major index into `shape` of the broadcast multi-index `idx` (of a larger rank).
inline int64_t broadcast_index(const Shape& idx, const Shape& shape) {
  int64_t off = 0;
  size_t lead = idx.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d) off = off * shape[d] + (shape[d] == 1 ? 0 : idx[lead + d]);
  return off;
}

// Reference of a broadcasting binary op on host values.
template <class F>
std::vector<double> broadcast_ref(const std::vector<double>& a, const Shape& sa, const std::vector<double>& b,
                                  const Shape& sb, const Shape& out, F f) {
  std::vector<double> r(static_cast<size_t>(numel(out)));
  for (int64_t i = 0; i < numel(out); ++i) {
    Shape idx = unravel(i, out);
    r[i] = f(a[broadcast_index(idx, sa)], b[broadcast_index(idx, sb)]);
  }
  return r;
}

// Checks a float result: every element finite where the reference is, rel error <= tol.
inline void check_values(const Tensor& out, const std::vector<double>& ref, double tol, const std::string& what) {
  check_close<double>(as_host(values(out)), ref, tol, what);
}

}  // namespace tritium::test::ops_util
