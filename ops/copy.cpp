// Copies and dtype conversions: all through the generic elementwise kernels (Ew::copy), so a
// strided source or destination, broadcasting and any pair of dtypes take the same path.
#include <cmath>

#include "ops/elementwise_kernels.h"

namespace tritium::ops {

using detail::Ew;

double Scalar::to_double() const {
  if (auto* i = std::get_if<int64_t>(&value)) return static_cast<double>(*i);
  if (auto* b = std::get_if<bool>(&value)) return *b ? 1.0 : 0.0;
  return std::get<double>(value);
}

Tensor contiguous(const Tensor& x) {
  detail::check_tensors("contiguous", {&x});
  if (x.is_contiguous()) return x;
  return clone(x);
}

Tensor clone(const Tensor& x) {
  detail::check_tensors("clone", {&x});
  return detail::elementwise(detail::ew_call("clone", Ew::copy, x.dtype()), x.dtype(), {&x});
}

Tensor to_dtype(const Tensor& x, DType dtype) {
  detail::check_tensors("to_dtype", {&x});
  if (dtype == DType::invalid || dtype == DType::ptr) fail("to_dtype: invalid dtype {}", dtype_name(dtype));
  if (x.dtype() == dtype) return x;
  return detail::elementwise(detail::ew_call("to_dtype", Ew::copy, dtype), dtype, {&x});
}

void copy_(Tensor& dst, const Tensor& src) {
  detail::check_tensors("copy_", {&dst, &src});
  Shape b = detail::broadcast_shapes("copy_", dst.shape(), src.shape());
  if (b != dst.shape())
    fail("copy_: source shape {} cannot be broadcast to the destination shape {}", detail::shape_str(src.shape()),
         detail::shape_str(dst.shape()));
  for (int d = 0; d < dst.dim(); ++d)
    if (dst.size(d) > 1 && dst.stride(d) == 0)
      fail("copy_: the destination {} has overlapping elements (dimension {} has size {} and stride 0)", dst.str(), d,
           dst.size(d));
  if (dst.numel() == 0) return;
  // An identical view: nothing to do. Other overlaps of src and dst are not detected.
  if (dst.storage() == src.storage() && dst.dtype() == src.dtype() && dst.shape() == src.shape() &&
      dst.strides() == src.strides() && dst.storage_offset() == src.storage_offset())
    return;
  detail::run_elementwise(detail::ew_call("copy_", Ew::copy, dst.dtype()), dst, {&src});
}

}  // namespace tritium::ops
