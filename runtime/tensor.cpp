#include "runtime/tensor.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/cuda_allocator.h"
#include "runtime/cuda_device.h"
#include "runtime/cuda_streams.h"
#include "runtime/device_checks.h"

namespace tritium::runtime {
namespace {

constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();

// Product of sizes, failing instead of overflowing.
int64_t checked_numel(const Tensor::Shape& shape, const char* op) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) fail("{}: negative size {} in shape [{}]", op, d, fmt::join(shape, ", "));
    if (d != 0 && n > kMaxInt64 / d) fail("{}: shape [{}] has too many elements", op, fmt::join(shape, ", "));
    n *= d;
  }
  return n;
}

Tensor::Shape contiguous_strides(const Tensor::Shape& shape) {
  Tensor::Shape strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= std::max<int64_t>(shape[i], 1);
  }
  return strides;
}

int normalize_dim(int d, int rank, const char* op) {
  int r = d < 0 ? d + rank : d;
  if (r < 0 || r >= rank) fail("{}: dimension {} is out of range for a tensor of rank {}", op, d, rank);
  return r;
}

}  // namespace

std::string Tensor::shape_str(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

Tensor Tensor::empty(Shape shape, DType dtype, Device device) {
  if (dtype == DType::invalid || dtype == DType::ptr)
    fail("Tensor::empty: a tensor cannot have dtype {}", dtype_name(dtype));
  if (!memory_available(device))
    fail("Tensor::empty: device {} is not available: {}", device.str(), memory_unavailable_reason(device));
  int64_t n = checked_numel(shape, "Tensor::empty");
  int64_t element = dtype_bytes(dtype);
  if (n > kMaxInt64 / element) fail("Tensor::empty: shape {} of {} is too large", shape_str(shape), dtype_name(dtype));
  Tensor t;
  t.storage_ = Buffer::allocate(static_cast<size_t>(n * element), device);
  t.dtype_ = dtype;
  t.strides_ = contiguous_strides(shape);
  t.shape_ = std::move(shape);
  t.device_ = device;
  return t;
}

Tensor Tensor::zeros(Shape shape, DType dtype, Device device) {
  Tensor t = empty(std::move(shape), dtype, device);
  // All-zero bytes are 0 in every dtype.
  if (device.is_cuda())
    cuda::memset_d8(cuda::to_deviceptr(t.raw_data()), 0, static_cast<size_t>(t.nbytes()), device.index,
                    cuda::current_stream(device.index));
  else
    std::memset(t.raw_data(), 0, static_cast<size_t>(t.nbytes()));
  return t;
}

Tensor Tensor::as_strided(Shape shape, Shape strides, int64_t storage_offset) const {
  if (!defined()) fail("Tensor::as_strided: tensor is undefined");
  if (shape.size() != strides.size())
    fail("Tensor::as_strided: shape {} and strides {} differ in rank", shape_str(shape), shape_str(strides));
  int64_t n = checked_numel(shape, "Tensor::as_strided");
  if (storage_offset < 0) fail("Tensor::as_strided: negative storage offset {}", storage_offset);
  // The lowest and highest element the view touches must both lie inside the buffer.
  int64_t capacity = static_cast<int64_t>(storage_->nbytes()) / element_size();
  if (n > 0) {
    __int128 lo = storage_offset, hi = storage_offset;
    for (size_t i = 0; i < shape.size(); ++i) {
      __int128 reach = static_cast<__int128>(shape[i] - 1) * strides[i];
      (reach < 0 ? lo : hi) += reach;
    }
    if (lo < 0 || hi >= capacity)
      fail("Tensor::as_strided: view {} with strides {} at offset {} reaches outside a buffer of {} elements",
           shape_str(shape), shape_str(strides), storage_offset, capacity);
  }
  Tensor t = *this;
  t.shape_ = std::move(shape);
  t.strides_ = std::move(strides);
  t.offset_ = storage_offset;
  return t;
}

int64_t Tensor::size(int d) const { return shape_[normalize_dim(d, dim(), "Tensor::size")]; }
int64_t Tensor::stride(int d) const { return strides_[normalize_dim(d, dim(), "Tensor::stride")]; }

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape_) n *= d;
  return n;
}

bool Tensor::is_contiguous() const {
  if (numel() == 0) return true;
  int64_t expected = 1;
  for (size_t i = shape_.size(); i-- > 0;) {
    if (shape_[i] == 1) continue;  // the stride of a size-1 dimension is never used
    if (strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

void* Tensor::raw_data() const {
  if (!defined()) fail("Tensor::raw_data: tensor is undefined");
  return static_cast<char*>(storage_->data()) + offset_ * element_size();
}

void Tensor::check_dtype(DType wanted, const char* method, const char* type_name) const {
  if (!defined()) fail("Tensor::{}<{}>: tensor is undefined", method, type_name);
  if (wanted != dtype_) fail("Tensor::{}<{}>: tensor has dtype {}", method, type_name, dtype_name(dtype_));
}

void Tensor::copy_to_contiguous(void* dst) const {
  report_device_checks(device_);  // a deferred device-side check fails here, before its op's data is seen
  const int64_t n = numel();
  const int64_t element = element_size();
  char* out = static_cast<char*>(dst);
  if (n == 0) return;
  if (device_.is_cuda()) {
    const int dev = device_.index;
    const cuda::CUstream stream = cuda::current_stream(dev);  // where the tensor's producers ran
    if (is_contiguous()) {  // D2H into pageable memory: returns once the data is here (a stream sync)
      cuda::copy_d2h(out, cuda::to_deviceptr(raw_data()), static_cast<size_t>(n * element), dev, stream);
      return;
    }
    // Strided: bring the span of elements the view touches to the host, then gather there (no
    // kernel needed; costs at most the span, which as_strided keeps inside the buffer).
    int64_t lo = offset_, hi = offset_;
    for (int d = 0; d < dim(); ++d) (strides_[d] < 0 ? lo : hi) += (shape_[d] - 1) * strides_[d];
    std::vector<char> span(static_cast<size_t>((hi - lo + 1) * element));
    cuda::copy_d2h(span.data(), cuda::to_deviceptr(storage_->data()) + static_cast<uint64_t>(lo * element),
                   span.size(), dev, stream);
    Tensor host = *this;
    host.storage_ = Buffer::adopt(span.data(), span.size(), Device::cpu(), nullptr);
    host.device_ = Device::cpu();
    host.offset_ = offset_ - lo;
    host.autograd_ = nullptr;
    host.copy_to_contiguous(dst);
    return;
  }
  const char* src = static_cast<const char*>(raw_data());
  if (is_contiguous()) {
    std::memcpy(out, src, static_cast<size_t>(n * element));
    return;
  }
  // Odometer over the index space in row-major order.
  const int rank = dim();
  std::vector<int64_t> index(static_cast<size_t>(rank), 0);
  int64_t src_offset = 0;
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(out + i * element, src + src_offset * element, static_cast<size_t>(element));
    for (int d = rank - 1; d >= 0; --d) {
      if (++index[d] < shape_[d]) {
        src_offset += strides_[d];
        break;
      }
      src_offset -= strides_[d] * (shape_[d] - 1);
      index[d] = 0;
    }
  }
}

std::string Tensor::str() const {
  if (!defined()) return "Tensor(undefined)";
  return fmt::format("Tensor({}, {}, {})", shape_str(shape_), dtype_name(dtype_), device_.str());
}

}  // namespace tritium::runtime
