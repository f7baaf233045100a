#include "nn/simple_modules.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tritium::nn {

Tensor Flatten::forward(const Tensor& x) { return tritium::flatten(x, start_dim, end_dim); }
std::string Flatten::extra_repr() const { return fmt::format("start_dim={}, end_dim={}", start_dim, end_dim); }

Unflatten::Unflatten(int dim_, std::vector<int64_t> sizes) : dim(dim_), unflattened_size(std::move(sizes)) {
  if (unflattened_size.empty()) fail("Unflatten: unflattened_size is empty");
}
Tensor Unflatten::forward(const Tensor& x) { return tritium::unflatten(x, dim, unflattened_size); }
std::string Unflatten::extra_repr() const {
  return fmt::format("dim={}, unflattened_size={}", dim, python_tuple(unflattened_size));
}

Tensor Softmax::forward(const Tensor& x) { return tritium::softmax(x, dim); }
std::string Softmax::extra_repr() const { return fmt::format("dim={}", dim); }
Tensor LogSoftmax::forward(const Tensor& x) { return tritium::log_softmax(x, dim); }
std::string LogSoftmax::extra_repr() const { return fmt::format("dim={}", dim); }

Dropout2d::Dropout2d(double p_, Generator& gen) : p(p_), gen_(&gen) {
  if (!(p >= 0 && p <= 1)) fail("Dropout2d: dropout probability has to be between 0 and 1, but got {}", p);
}
Tensor Dropout2d::forward(const Tensor& x) { return dropout2d(x, p, is_training(), *gen_); }
std::string Dropout2d::extra_repr() const { return fmt::format("p={}, inplace=False", python_float(p)); }

Tensor dropout2d(const Tensor& x, double p, bool training, Generator& gen) {
  if (!x.defined()) fail("dropout2d: the input is undefined");
  if (!(p >= 0 && p <= 1)) fail("dropout2d: dropout probability has to be between 0 and 1, but got {}", p);
  if (x.dim() < 2) fail("dropout2d: feature dropout requires at least 2 dimensions in the input, got {}", x.str());
  if (!is_float(x.dtype())) fail("dropout2d: expects a floating-point input, got {}", x.str());
  if (!training || p == 0) return x;
  if (p == 1) return x * 0.0;
  // One keep/drop draw per (n, c), broadcast over the remaining dims.
  ops::Shape mask_shape(static_cast<size_t>(x.dim()), 1);
  mask_shape[0] = x.size(0);
  mask_shape[1] = x.size(1);
  Tensor keep = ops::ge(ops::rand(mask_shape, gen, DType::f32, x.device()), ops::full({}, p, DType::f32, x.device()));
  Tensor scale = ops::mul(ops::to_dtype(keep, x.dtype()), 1.0 / (1.0 - p));
  return x * scale;
}

}  // namespace tritium::nn
