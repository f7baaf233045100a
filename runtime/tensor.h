// A strided view of a device buffer: what ops take and what kernels receive as pointers
// (the launch code passes raw_data() and checks dtype()).
#pragma once
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "common/error.h"
#include "ir/types.h"
#include "nn/removable_handle.h"
#include "runtime/buffer.h"
#include "runtime/device.h"

namespace tritium::nn {
struct AutogradMeta;
}
namespace tritium::indexing {
class TensorIndex;  // runtime/tensor_index.h
}
namespace tritium::ops {
struct Scalar;
}

namespace tritium::runtime {

namespace detail {
// The C++ spelling of T, for error messages ("data_ptr<float>").
template <class T> constexpr const char* cpp_type_name() { return "T"; }
template <> constexpr const char* cpp_type_name<bool>() { return "bool"; }
template <> constexpr const char* cpp_type_name<int8_t>() { return "int8_t"; }
template <> constexpr const char* cpp_type_name<int16_t>() { return "int16_t"; }
template <> constexpr const char* cpp_type_name<int32_t>() { return "int32_t"; }
template <> constexpr const char* cpp_type_name<int64_t>() { return "int64_t"; }
template <> constexpr const char* cpp_type_name<uint8_t>() { return "uint8_t"; }
template <> constexpr const char* cpp_type_name<uint16_t>() { return "uint16_t"; }
template <> constexpr const char* cpp_type_name<uint32_t>() { return "uint32_t"; }
template <> constexpr const char* cpp_type_name<uint64_t>() { return "uint64_t"; }
template <> constexpr const char* cpp_type_name<f16_t>() { return "f16_t"; }
template <> constexpr const char* cpp_type_name<bf16_t>() { return "bf16_t"; }
template <> constexpr const char* cpp_type_name<f8e4m3_t>() { return "f8e4m3_t"; }
template <> constexpr const char* cpp_type_name<f8e5m2_t>() { return "f8e5m2_t"; }
template <> constexpr const char* cpp_type_name<float>() { return "float"; }
template <> constexpr const char* cpp_type_name<double>() { return "double"; }
}  // namespace detail

class Tensor {
 public:
  using Shape = std::vector<int64_t>;

  Tensor() = default;  // undefined: no storage; defined() is false

  // Uninitialised contiguous tensor. Errors: negative sizes, invalid or pointer dtype, an
  // unavailable device.
  // `device` defaults to default_device() (cpu unless set), evaluated at each call.
  static Tensor empty(Shape shape, DType dtype, Device device = default_device());
  static Tensor zeros(Shape shape, DType dtype, Device device = default_device());
  // A 1-D tensor holding values.
  template <class T>
  static Tensor from_vector(const std::vector<T>& values) {
    return from_vector(values, Shape{static_cast<int64_t>(values.size())});
  }
  // values in row-major order; the shape's element count must equal values.size(). Filled on the
  // host, then copied to `device`.
  template <class T>
  static Tensor from_vector(const std::vector<T>& values, Shape shape, Device device = default_device()) {
    Tensor t = empty(std::move(shape), dtype_of<T>(), Device::cpu());
    if (static_cast<int64_t>(values.size()) != t.numel())
      fail("Tensor::from_vector: {} values do not fill shape {} ({} elements)", values.size(),
           shape_str(t.shape_), t.numel());
    T* out = static_cast<T*>(t.raw_data());
    for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];  // element-wise: vector<bool> is packed
    return device.is_cpu() ? t : t.to(device);
  }

  // A view of the same storage; offset in elements from the buffer start. Throws if any
  // element would lie outside the buffer. Raw: records no autograd (the op library's tool).
  Tensor as_strided(Shape shape, Shape strides, int64_t storage_offset) const;

  // ---- PyTorch-style methods; differentiable (recorded by autograd), defined in nn/ ----------
  // Views share storage. view() needs compatible strides (PyTorch's rule) and errors otherwise;
  // reshape() copies only when a view is impossible. -1 in a shape is inferred.
  Tensor view(Shape shape) const;
  Tensor reshape(Shape shape) const;
  Tensor permute(std::vector<int> dims) const;
  Tensor transpose(int dim0, int dim1) const;
  Tensor t() const;  // 2-D transpose (1-D and 0-D: itself)
  Tensor squeeze(std::optional<int> dim = std::nullopt) const;
  Tensor unsqueeze(int dim) const;
  Tensor expand(Shape shape) const;  // -1 keeps a dim; size-1 dims stretch with stride 0
  // x[start:end:step] along dim (negative start/end count from the end, clamped like Python).
  Tensor slice(int dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor select(int dim, int64_t index) const;  // x[..., index, ...], removes dim
  Tensor contiguous() const;  // this tensor if contiguous, else a copy (a Tritium kernel)
  Tensor clone() const;
  Tensor to(Device device) const;  // a copy on another device (this tensor if already there)
  Tensor to(DType dtype) const;
  // x[...] (runtime/tensor_index.h): integers, slices, None, Ellipsis, bools, index tensors and
  // masks, with PyTorch's rules; views where PyTorch gives views, differentiable (nn/tensor_indexing.cpp).
  Tensor index(const std::vector<indexing::TensorIndex>& indices) const;
  // x[...] = values (converted to this tensor's dtype, broadcast), in place. Not recorded by
  // autograd: an error when grad mode is on and this tensor or values requires grad (use
  // tritium::index_put, out of place).
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, const Tensor& values);
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, double value);

  // ---- in-place ops (nn/inplace_ops.cpp), as PyTorch's: they write this tensor's storage (every
  // view sees the change), bump its version counter (a value saved for backward and modified
  // since is an error at backward) and, when recorded, make this tensor the op's output.
  // Errors: a leaf that requires grad (outside NoGradGuard), a view of a tensor that requires grad
  // (when recorded), an inference tensor outside inference mode, a result of another shape (no
  // broadcasting of self) or of a dtype self cannot hold (float into an integer tensor).
  Tensor& add_(const Tensor& other);
  Tensor& add_(const ops::Scalar& other);
  Tensor& sub_(const Tensor& other);
  Tensor& sub_(const ops::Scalar& other);
  Tensor& mul_(const Tensor& other);
  Tensor& mul_(const ops::Scalar& other);
  Tensor& div_(const Tensor& other);
  Tensor& div_(const ops::Scalar& other);
  Tensor& relu_();
  Tensor& clamp_(std::optional<double> min, std::optional<double> max = std::nullopt);
  Tensor& copy_(const Tensor& src);  // src broadcast to this shape and converted to this dtype
  Tensor& fill_(const ops::Scalar& value);
  Tensor& zero_();

  // ---- autograd (nn/autograd.cpp) --------------------------------------------------------------
  bool requires_grad() const;
  Tensor& requires_grad_(bool on = true);  // only on leaves
  bool is_leaf() const;
  Tensor grad() const;          // undefined until a backward reaches this leaf
  void zero_grad();             // drops the accumulated gradient
  // From a scalar (one-element) tensor, or with an explicit gradient of the same shape.
  void backward() const;
  // create_graph records the backward itself (double backward) and implies retain_graph.
  void backward(const Tensor& gradient, bool retain_graph = false, bool create_graph = false) const;
  Tensor detach() const;        // same storage, no autograd history
  // Hooks (nn/autograd.h): register_hook takes Tensor(const Tensor& grad) (a defined result
  // replaces the gradient) or void(const Tensor& grad); the post-accumulate hook (leaves only)
  // gets the leaf after its .grad was updated. The handle's remove() unregisters.
  template <class F>
  nn::RemovableHandle register_hook(F&& hook) const {
    if constexpr (std::is_void_v<std::invoke_result_t<F&, const Tensor&>>)
      return register_grad_hook([h = std::forward<F>(hook)](const Tensor& g) mutable {
        h(g);
        return Tensor();
      });
    else
      return register_grad_hook(std::forward<F>(hook));
  }
  nn::RemovableHandle register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook) const;
  void retain_grad() const;     // a non-leaf keeps its gradient in .grad
  bool retains_grad() const;
  // PyTorch's _version: how many in-place ops modified this tensor's storage (shared by views).
  uint64_t _version() const;
  bool is_inference() const;    // allocated inside nn::InferenceModeGuard
  const std::shared_ptr<nn::AutogradMeta>& autograd() const { return autograd_; }
  void set_autograd(std::shared_ptr<nn::AutogradMeta> meta) { autograd_ = std::move(meta); }

  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }  // in elements
  int dim() const { return static_cast<int>(shape_.size()); }
  int64_t size(int d) const;    // negative d counts from the end
  int64_t stride(int d) const;
  int64_t storage_offset() const { return offset_; }
  Device device() const { return device_; }
  const std::shared_ptr<Buffer>& storage() const { return storage_; }
  int64_t numel() const;
  int64_t element_size() const { return dtype_bytes(dtype_); }
  int64_t nbytes() const { return numel() * element_size(); }
  bool is_contiguous() const;

  // Address of the first element (storage start + offset).
  void* raw_data() const;
  template <class T>
  T* data_ptr() const {
    check_dtype(dtype_of<T>(), "data_ptr", detail::cpp_type_name<T>());
    return static_cast<T*>(raw_data());
  }

  // The elements in row-major order (a contiguous copy on the host; from cuda through D2H).
  template <class T>
  std::vector<T> to_vector() const {
    check_dtype(dtype_of<T>(), "to_vector", detail::cpp_type_name<T>());
    std::vector<T> out(static_cast<size_t>(numel()));
    if constexpr (std::is_same_v<T, bool>) {
      std::vector<unsigned char> bytes(out.size());  // vector<bool> has no contiguous storage
      copy_to_contiguous(bytes.data());
      for (size_t i = 0; i < out.size(); ++i) out[i] = bytes[i] != 0;
    } else {
      copy_to_contiguous(out.data());
    }
    return out;
  }

  std::string str() const;  // "Tensor([4, 8], f32, cpu)"

 private:
  nn::RemovableHandle register_grad_hook(std::function<Tensor(const Tensor&)> hook) const;
  void check_dtype(DType wanted, const char* method, const char* type_name) const;
  void copy_to_contiguous(void* dst) const;  // dst: host memory; the tensor on cpu or cuda
  static std::string shape_str(const Shape& shape);

  std::shared_ptr<Buffer> storage_;
  DType dtype_ = DType::invalid;
  Shape shape_;
  Shape strides_;
  int64_t offset_ = 0;
  Device device_ = Device::cpu();
  std::shared_ptr<nn::AutogradMeta> autograd_;
};

}  // namespace tritium::runtime

namespace tritium {
using runtime::Tensor;
}  // namespace tritium

#include "runtime/tensor_index.h"  // complete TensorIndex for x.index({...}) callers
