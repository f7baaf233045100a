// Factory functions: full, zeros, ones, zeros_like, ones_like, arange, fill_. Every element is
// written by a Tritium store kernel (no host loops over tensor data).
#include <cmath>
#include <limits>
#include <type_traits>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <tritium/tritium.h>

#include "ops/elementwise_kernels.h"
#include "ops/ops.h"
#include "runtime/dtype_dispatch.h"
#include "runtime/views.h"

namespace tritium::ops {
namespace {

namespace tl = tritium::tl;
using runtime::Tensor;

constexpr int kBlock = 1024;

// The scalar value of a fill in dtype T, from the two run-time scalars every fill kernel takes:
// fv (used by float dtypes) and iv (integers, as 64-bit patterns; bool: iv != 0).
template <class T> tl::tensor fill_value(const tl::tensor& fv, const tl::tensor& iv) {
  constexpr DType d = dtype_of<T>();
  if constexpr (d == DType::i1) return iv != 0;
  else if constexpr (d == DType::f16 || d == DType::bf16 || d == DType::f32 || d == DType::f64) return fv.to(d);
  else return iv.to(d);
}

// out[i] = value for i < n, contiguous.
template <class T> Kernel& fill_kernel() {
  static Kernel k = kernel(
      "fill",
      [](tl::ptr<T> out, tl::i64 n, tl::f64 fv, tl::i64 iv, int BLOCK) {
        auto offs = tl::program_id(0).to(tl::int64) * BLOCK + tl::arange(0, BLOCK);
        auto v = tl::broadcast_to(fill_value<T>(fv, iv), {BLOCK});
        tl::store(out + offs, v, offs < n);
      },
      {"out", "n", "fv", "iv", "BLOCK"});
  return k;
}

// The same on a strided tensor of rank <= 4 (sizes s0..s3, strides t0..t3 in elements).
template <class T> Kernel& fill_strided_kernel() {
  static Kernel k = kernel(
      "fill_strided",
      [](tl::ptr<T> out, tl::i64 n, tl::f64 fv, tl::i64 iv, tl::i64 s1, tl::i64 s2, tl::i64 s3, tl::i64 t0,
         tl::i64 t1, tl::i64 t2, tl::i64 t3, int BLOCK) {
        auto offs = tl::program_id(0).to(tl::int64) * BLOCK + tl::arange(0, BLOCK);
        auto v = tl::broadcast_to(fill_value<T>(fv, iv), {BLOCK});
        tl::store(out + detail::strided_offset(offs, s1, s2, s3, t0, t1, t2, t3), v, offs < n);
      },
      {"out", "n", "fv", "iv", "s1", "s2", "s3", "t0", "t1", "t2", "t3", "BLOCK"});
  return k;
}

// out[i] = start + i * step (computed in i64, then converted to T).
template <class T> Kernel& arange_kernel() {
  static Kernel k = kernel(
      "arange",
      [](tl::ptr<T> out, tl::i64 n, tl::i64 start, tl::i64 step, int BLOCK) {
        auto offs = tl::program_id(0).to(tl::int64) * BLOCK + tl::arange(0, BLOCK);
        tl::store(out + offs, (start + offs * step).to(dtype_of<T>()), offs < n);
      },
      {"out", "n", "start", "step", "BLOCK"});
  return k;
}

struct FillScalars {
  double f = 0;
  int64_t i = 0;
};

FillScalars fill_scalars(const Scalar& value, DType dtype) {
  FillScalars s;
  std::visit(
      [&](auto v) {
        using V = decltype(v);
        if constexpr (std::is_same_v<V, bool>) {
          s.f = v ? 1.0 : 0.0;
          s.i = v ? 1 : 0;
        } else if constexpr (std::is_same_v<V, int64_t>) {
          s.f = static_cast<double>(v);
          s.i = v;
        } else {
          s.f = v;
          if (is_int(dtype) && !is_bool(dtype)) {
            if (!std::isfinite(v) || v <= -9.3e18 || v >= 1.85e19)
              fail("fill: value {} cannot be converted to {}", v, dtype_name(dtype));
            // Truncation toward zero, as a C++ (and PyTorch) conversion; u64 values above
            // INT64_MAX keep their bit pattern.
            s.i = v >= 9.2e18 ? static_cast<int64_t>(static_cast<uint64_t>(v)) : static_cast<int64_t>(v);
          } else {
            s.i = v != 0.0 ? 1 : 0;
          }
        }
      },
      value.value);
  return s;
}

Options on(const Tensor& x) { return Options{.device = x.device()}; }

void fill_impl(const Tensor& x, const FillScalars& v) {
  int64_t n = x.numel();
  if (n == 0) return;
  runtime::dispatch_dtype(x.dtype(), "fill_", [&](auto tag) {
    using T = decltype(tag);
    if (x.is_contiguous()) {
      fill_kernel<T>()[{cdiv(n, kBlock)}](x, n, v.f, v.i, kBlock, on(x));
      return;
    }
    Shape sizes, strides;
    runtime::collapse_dims(x, sizes, strides);
    if (sizes.size() > 4) {  // one launch per index of the leading dim
      for (int64_t i = 0; i < x.shape()[0]; ++i) fill_impl(runtime::select_of(x, 0, i), v);
      return;
    }
    while (sizes.size() < 4) sizes.insert(sizes.begin(), 1), strides.insert(strides.begin(), 0);
    fill_strided_kernel<T>()[{cdiv(n, kBlock)}](x, n, v.f, v.i, sizes[1], sizes[2], sizes[3], strides[0],
                                                 strides[1], strides[2], strides[3], kBlock, on(x));
  });
}

}  // namespace

void fill_(Tensor& x, Scalar value) {
  if (!x.defined()) fail("fill_: tensor is undefined");
  fill_impl(x, fill_scalars(value, x.dtype()));
}

Tensor full(const Shape& shape, Scalar value, DType dtype, Device device) {
  Tensor t = Tensor::empty(shape, dtype, device);
  fill_impl(t, fill_scalars(value, dtype));
  return t;
}

Tensor zeros(const Shape& shape, DType dtype, Device device) { return full(shape, Scalar(int64_t{0}), dtype, device); }
Tensor ones(const Shape& shape, DType dtype, Device device) { return full(shape, Scalar(int64_t{1}), dtype, device); }

Tensor zeros_like(const Tensor& x) {
  if (!x.defined()) fail("zeros_like: tensor is undefined");
  return zeros(x.shape(), x.dtype(), x.device());
}
Tensor ones_like(const Tensor& x) {
  if (!x.defined()) fail("ones_like: tensor is undefined");
  return ones(x.shape(), x.dtype(), x.device());
}

Tensor arange(int64_t start, int64_t end, int64_t step, DType dtype, Device device) {
  if (step == 0) fail("arange: step must be nonzero");
  if ((step > 0 && end < start) || (step < 0 && end > start))
    fail("arange: upper bound and larger bound inconsistent with step sign (start {}, end {}, step {})", start, end,
         step);
  if (is_bool(dtype)) fail("arange: not implemented for dtype {}", dtype_name(dtype));
  __int128 span = static_cast<__int128>(end) - start;
  __int128 n128 = step > 0 ? (span + step - 1) / step : (span + step + 1) / step;
  int64_t n = static_cast<int64_t>(n128);
  Tensor t = Tensor::empty({n}, dtype, device);
  if (n == 0) return t;
  runtime::dispatch_dtype(dtype, "arange", [&](auto tag) {
    using T = decltype(tag);
    arange_kernel<T>()[{cdiv(n, kBlock)}](t, n, start, step, kBlock, on(t));
  });
  return t;
}

}  // namespace tritium::ops
