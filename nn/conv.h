// Convolutions for users (issue 30 item 1): the differentiable functions tritium::conv1d /
// conv2d / conv_transpose2d (torch.nn.functional's, recorded through the op registry: ops/decl/
// conv.cpp) and the modules nn::Conv1d, nn::Conv2d, nn::ConvTranspose2d in libtorch's shape.
// Include this header (nn/module.h does not): docs/nn.md, "Convolutions".
//
//   nn::Conv2d conv(1, 32, 3, 1, 1);                 // in, out, kernel_size, stride, padding
//   Tensor y = conv(x);                              // x [N, 1, H, W], contiguous or channels-last
//   Tensor z = tritium::conv2d(x, w, b, {2, 2}, "valid");
#pragma once
#include <array>
#include <concepts>
#include <initializer_list>
#include <string>
#include <vector>

#include "nn/module.h"
#include "ops/conv.h"

namespace tritium {

using ops::ConvPadding;

// torch.nn.functional.conv2d(input, weight, bias, stride, padding, dilation, groups): stride,
// dilation one value or one per spatial dim; padding a number, a list or "same" / "valid".
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, std::vector<int64_t> stride = {1},
              ConvPadding padding = 0, std::vector<int64_t> dilation = {1}, int64_t groups = 1);
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = {}, std::vector<int64_t> stride = {1},
              ConvPadding padding = 0, std::vector<int64_t> dilation = {1}, int64_t groups = 1);
// torch.nn.functional.conv_transpose2d(input, weight, bias, stride, padding, output_padding,
// groups, dilation) (PyTorch's argument order: groups before dilation).
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
                        std::vector<int64_t> stride = {1}, std::vector<int64_t> padding = {0},
                        std::vector<int64_t> output_padding = {0}, int64_t groups = 1,
                        std::vector<int64_t> dilation = {1});

namespace nn {

// A size per spatial dim given as one number or a list of D (libtorch's ExpandingArray):
// `3` and `{3, 3}` are the same kernel size. A list of another length is an error.
template <size_t D> struct ExpandingArray {
  std::array<int64_t, D> values;
  template <std::integral T> ExpandingArray(T v) { values.fill(static_cast<int64_t>(v)); }
  ExpandingArray(std::initializer_list<int64_t> list);
  std::vector<int64_t> vec() const { return {values.begin(), values.end()}; }
  int64_t operator[](size_t i) const { return values[i]; }
};

// What Conv1d / Conv2d / ConvTranspose2d share: the hyper-parameters, the weight and bias, the
// initialisation (PyTorch's reset_parameters: kaiming_uniform_(a = sqrt(5)) on the weight, i.e.
// uniform in +-1/sqrt(fan_in), and the bias uniform in +-1/sqrt(fan_in), fan_in =
// weight.size(1) * prod(kernel_size); weight drawn first) and the repr.
class ConvNd : public Module {
 public:
  int64_t in_channels, out_channels;
  std::vector<int64_t> kernel_size, stride, dilation, output_padding;
  std::vector<int64_t> padding;  // empty when padding is a string
  std::string padding_string;    // "same" / "valid", or empty
  int64_t groups;
  std::string padding_mode;
  Tensor weight;
  Tensor bias;  // undefined without bias

  std::string str() const override;

 protected:
  ConvNd(const char* name, int64_t in_channels, int64_t out_channels, std::vector<int64_t> kernel_size,
         std::vector<int64_t> stride, ConvPadding padding, std::vector<int64_t> dilation, bool transposed,
         std::vector<int64_t> output_padding, int64_t groups, bool bias, std::string padding_mode, Generator& gen);
  void parameters_moved() override;
  std::string type_name() const override { return name_; }
  ConvPadding padding_arg() const;

 private:
  std::string name_;
  bool transposed_;
};

class Conv1d : public ConvNd {
 public:
  Conv1d(int64_t in_channels, int64_t out_channels, ExpandingArray<1> kernel_size, ExpandingArray<1> stride = 1,
         ConvPadding padding = 0, ExpandingArray<1> dilation = 1, int64_t groups = 1, bool bias = true,
         std::string padding_mode = "zeros", Generator& gen = ops::default_generator());
  Tensor forward(const Tensor& x) override;
};

class Conv2d : public ConvNd {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, ExpandingArray<2> kernel_size, ExpandingArray<2> stride = 1,
         ConvPadding padding = 0, ExpandingArray<2> dilation = 1, int64_t groups = 1, bool bias = true,
         std::string padding_mode = "zeros", Generator& gen = ops::default_generator());
  Tensor forward(const Tensor& x) override;
};

// torch.nn.ConvTranspose2d; forward's output_size argument is not offered (set output_padding).
class ConvTranspose2d : public ConvNd {
 public:
  ConvTranspose2d(int64_t in_channels, int64_t out_channels, ExpandingArray<2> kernel_size,
                  ExpandingArray<2> stride = 1, ExpandingArray<2> padding = 0, ExpandingArray<2> output_padding = 0,
                  int64_t groups = 1, bool bias = true, ExpandingArray<2> dilation = 1,
                  std::string padding_mode = "zeros", Generator& gen = ops::default_generator());
  Tensor forward(const Tensor& x) override;
};

}  // namespace nn
}  // namespace tritium
