// Pooling and resampling, differentiable (torch.nn.functional's max_pool1d/2d, avg_pool1d/2d,
// adaptive_avg_pool2d, interpolate) and as modules (torch.nn's MaxPool1d/2d, AvgPool1d/2d,
// AdaptiveAvgPool2d, Upsample). Each function is one nn::call of its declared op (ops/decl/pool.cpp).
// Window arguments take PyTorch's spellings: {3} for 3 in both dims, {3, 2} per dim; an empty
// stride means stride = kernel_size. Include "nn/pooling.h" (docs/nn.md).
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nn/module.h"

namespace tritium {

using Ints = std::vector<int>;

Tensor max_pool2d(const Tensor& x, Ints kernel_size, Ints stride = {}, Ints padding = {0}, Ints dilation = {1},
                  bool ceil_mode = false);
Tensor max_pool1d(const Tensor& x, Ints kernel_size, Ints stride = {}, Ints padding = {0}, Ints dilation = {1},
                  bool ceil_mode = false);
// return_indices=True: (values, indices), the indices i64 positions h * W + w in each input plane.
std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, Ints kernel_size, Ints stride = {},
                                                  Ints padding = {0}, Ints dilation = {1}, bool ceil_mode = false);
std::pair<Tensor, Tensor> max_pool1d_with_indices(const Tensor& x, Ints kernel_size, Ints stride = {},
                                                  Ints padding = {0}, Ints dilation = {1}, bool ceil_mode = false);
Tensor avg_pool2d(const Tensor& x, Ints kernel_size, Ints stride = {}, Ints padding = {0}, bool ceil_mode = false,
                  bool count_include_pad = true, std::optional<int> divisor_override = std::nullopt);
Tensor avg_pool1d(const Tensor& x, Ints kernel_size, Ints stride = {}, Ints padding = {0}, bool ceil_mode = false,
                  bool count_include_pad = true);
// output_size: {s} or {h, w}; -1 keeps the input's size (PyTorch's None).
Tensor adaptive_avg_pool2d(const Tensor& x, Ints output_size);
// F.interpolate(x, size, scale_factor, mode, align_corners): exactly one of size and scale_factor
// (each one value or one per spatial dim); mode "nearest" or "bilinear"; align_corners only with
// bilinear (nullopt means false, as PyTorch's None).
Tensor interpolate(const Tensor& x, Ints size, std::vector<double> scale_factor = {},
                   const std::string& mode = "nearest", std::optional<bool> align_corners = std::nullopt);

namespace nn {

// The window options every pooling module prints and passes on.
struct PoolWindow {
  Ints kernel_size, stride, padding, dilation;
};

class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(Ints kernel_size, Ints stride = {}, Ints padding = {0}, Ints dilation = {1},
                     bool ceil_mode = false);
  Tensor forward(const Tensor& x) override;
  std::pair<Tensor, Tensor> forward_with_indices(const Tensor& x);  // return_indices=True
  std::string str() const override;
  PoolWindow window;
  bool ceil_mode;

 protected:
  std::string type_name() const override { return "MaxPool2d"; }
};

class MaxPool1d : public Module {
 public:
  explicit MaxPool1d(Ints kernel_size, Ints stride = {}, Ints padding = {0}, Ints dilation = {1},
                     bool ceil_mode = false);
  Tensor forward(const Tensor& x) override;
  std::pair<Tensor, Tensor> forward_with_indices(const Tensor& x);
  std::string str() const override;
  PoolWindow window;
  bool ceil_mode;

 protected:
  std::string type_name() const override { return "MaxPool1d"; }
};

class AvgPool2d : public Module {
 public:
  explicit AvgPool2d(Ints kernel_size, Ints stride = {}, Ints padding = {0}, bool ceil_mode = false,
                     bool count_include_pad = true, std::optional<int> divisor_override = std::nullopt);
  Tensor forward(const Tensor& x) override;
  std::string str() const override;
  PoolWindow window;
  bool ceil_mode, count_include_pad;
  std::optional<int> divisor_override;

 protected:
  std::string type_name() const override { return "AvgPool2d"; }
};

class AvgPool1d : public Module {
 public:
  explicit AvgPool1d(Ints kernel_size, Ints stride = {}, Ints padding = {0}, bool ceil_mode = false,
                     bool count_include_pad = true);
  Tensor forward(const Tensor& x) override;
  std::string str() const override;
  PoolWindow window;
  bool ceil_mode, count_include_pad;

 protected:
  std::string type_name() const override { return "AvgPool1d"; }
};

class AdaptiveAvgPool2d : public Module {
 public:
  explicit AdaptiveAvgPool2d(Ints output_size);  // -1 for PyTorch's None
  Tensor forward(const Tensor& x) override;
  std::string str() const override;
  Ints output_size;

 protected:
  std::string type_name() const override { return "AdaptiveAvgPool2d"; }
};

// torch.nn.Upsample(size, scale_factor, mode, align_corners): interpolate as a module.
class Upsample : public Module {
 public:
  explicit Upsample(Ints size, std::vector<double> scale_factor = {}, std::string mode = "nearest",
                    std::optional<bool> align_corners = std::nullopt);
  Tensor forward(const Tensor& x) override;
  std::string str() const override;
  Ints size;
  std::vector<double> scale_factor;
  std::string mode;
  std::optional<bool> align_corners;

 protected:
  std::string type_name() const override { return "Upsample"; }
};

}  // namespace nn
}  // namespace tritium
