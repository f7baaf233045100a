// The convolution functions (one registry call each: nn/dispatch.h records the autograd node)
// and modules of nn/conv.h.
#include "nn/conv.h"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "nn/autograd.h"
#include "nn/dispatch.h"

namespace tritium {

namespace {

std::vector<int> as_int(const std::vector<int64_t>& v) {
  std::vector<int> out;
  for (int64_t x : v) {
    if (x < INT32_MIN || x > INT32_MAX) fail("convolution: argument {} is out of range", x);
    out.push_back(static_cast<int>(x));
  }
  return out;
}

ops::AttrValue padding_attr(const ConvPadding& p) {
  if (!p.mode.empty()) return p.mode;
  return as_int(p.values);
}

ops::Attrs conv_attrs(const std::vector<int64_t>& stride, const ConvPadding& padding,
                      const std::vector<int64_t>& dilation, int64_t groups) {
  return ops::Attrs{{"stride", as_int(stride)},
                    {"padding", padding_attr(padding)},
                    {"dilation", as_int(dilation)},
                    {"groups", static_cast<int>(groups)}};
}

}  // namespace

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, std::vector<int64_t> stride,
              ConvPadding padding, std::vector<int64_t> dilation, int64_t groups) {
  return nn::call("conv2d", {input, weight, bias}, conv_attrs(stride, padding, dilation, groups));
}

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, std::vector<int64_t> stride,
              ConvPadding padding, std::vector<int64_t> dilation, int64_t groups) {
  return nn::call("conv1d", {input, weight, bias}, conv_attrs(stride, padding, dilation, groups));
}

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias, std::vector<int64_t> stride,
                        std::vector<int64_t> padding, std::vector<int64_t> output_padding, int64_t groups,
                        std::vector<int64_t> dilation) {
  return nn::call("conv_transpose2d", {input, weight, bias},
                  ops::Attrs{{"stride", as_int(stride)},
                             {"padding", as_int(padding)},
                             {"output_padding", as_int(output_padding)},
                             {"groups", static_cast<int>(groups)},
                             {"dilation", as_int(dilation)}});
}

namespace nn {

template <size_t D> ExpandingArray<D>::ExpandingArray(std::initializer_list<int64_t> list) {
  if (list.size() != D) fail("expected a list of {} values, got {} ([{}])", D, list.size(), fmt::join(list, ", "));
  std::copy(list.begin(), list.end(), values.begin());
}
template struct ExpandingArray<1>;
template struct ExpandingArray<2>;

namespace {

// PyTorch's tuple repr: "(3,)" for one value, "(3, 3)" for two.
std::string tuple(const std::vector<int64_t>& v) {
  return v.size() == 1 ? fmt::format("({},)", v[0]) : fmt::format("({})", fmt::join(v, ", "));
}

bool all_equal(const std::vector<int64_t>& v, int64_t x) {
  return std::all_of(v.begin(), v.end(), [x](int64_t e) { return e == x; });
}

}  // namespace

ConvNd::ConvNd(const char* name, int64_t in, int64_t out, std::vector<int64_t> kernel, std::vector<int64_t> stride_,
               ConvPadding pad, std::vector<int64_t> dilation_, bool transposed, std::vector<int64_t> output_padding_,
               int64_t groups_, bool with_bias, std::string padding_mode_, Generator& gen)
    : in_channels(in),
      out_channels(out),
      kernel_size(std::move(kernel)),
      stride(std::move(stride_)),
      dilation(std::move(dilation_)),
      output_padding(std::move(output_padding_)),
      groups(groups_),
      padding_mode(std::move(padding_mode_)),
      name_(name),
      transposed_(transposed) {
  const size_t dims = kernel_size.size();
  if (in <= 0 || out <= 0) fail("{}: in_channels ({}) and out_channels ({}) must be positive", name, in, out);
  if (groups <= 0) fail("{}: groups must be a positive integer", name);
  if (in % groups != 0) fail("{}: in_channels must be divisible by groups", name);
  if (out % groups != 0) fail("{}: out_channels must be divisible by groups", name);
  if (!pad.mode.empty()) {
    if (pad.mode != "same" && pad.mode != "valid")
      fail("{}: Invalid padding string '{}', should be one of {{'same', 'valid'}}", name, pad.mode);
    if (pad.mode == "same" && !all_equal(stride, 1))
      fail("{}: padding='same' is not supported for strided convolutions", name);
    padding_string = pad.mode;
  } else {
    if (pad.values.size() == 1) pad.values.assign(dims, pad.values[0]);
    if (pad.values.size() != dims)
      fail("{}: padding must be one value or {} values, got [{}]", name, dims, fmt::join(pad.values, ", "));
    padding = pad.values;
  }
  if (padding_mode != "zeros" && padding_mode != "reflect" && padding_mode != "replicate" &&
      padding_mode != "circular")
    fail("{}: padding_mode must be one of {{'replicate', 'zeros', 'reflect', 'circular'}}, but got padding_mode='{}'",
         name, padding_mode);
  if (padding_mode != "zeros")
    fail("{}: padding_mode='{}' is not supported (only 'zeros'; pad the input with F.pad first)", name, padding_mode);

  // weight [out, in/groups, k...] ([in, out/groups, k...] transposed); fan_in = size(1) * prod(k).
  std::vector<int64_t> shape = transposed ? std::vector<int64_t>{in, out / groups} : std::vector<int64_t>{out, in / groups};
  int64_t fan_in = shape[1];
  for (int64_t k : kernel_size) {
    if (k <= 0) fail("{}: kernel_size must be positive, got {}", name, tuple(kernel_size));
    shape.push_back(k);
    fan_in *= k;
  }
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  NoGradGuard no_grad;
  Tensor w = Tensor::empty(shape, DType::f32);
  ops::uniform_(w, -bound, bound, gen);
  weight = register_parameter("weight", w);
  if (with_bias) {
    Tensor b = Tensor::empty({out}, DType::f32);
    ops::uniform_(b, -bound, bound, gen);
    bias = register_parameter("bias", b);
  }
}

void ConvNd::parameters_moved() {
  weight = parameter("weight");
  if (bias.defined()) bias = parameter("bias");
}

ConvPadding ConvNd::padding_arg() const { return padding_string.empty() ? ConvPadding(padding) : ConvPadding(padding_string); }

// PyTorch's _ConvNd.extra_repr: the non-default settings only.
std::string ConvNd::str() const {
  std::string s = fmt::format("{}({}, {}, kernel_size={}, stride={}", name_, in_channels, out_channels,
                              tuple(kernel_size), tuple(stride));
  if (!padding_string.empty()) s += ", padding=" + padding_string;
  else if (!all_equal(padding, 0)) s += ", padding=" + tuple(padding);
  if (!all_equal(dilation, 1)) s += ", dilation=" + tuple(dilation);
  if (transposed_ && !all_equal(output_padding, 0)) s += ", output_padding=" + tuple(output_padding);
  if (groups != 1) s += fmt::format(", groups={}", groups);
  if (!bias.defined()) s += ", bias=False";
  if (padding_mode != "zeros") s += ", padding_mode=" + padding_mode;
  return s + ")";
}

Conv1d::Conv1d(int64_t in, int64_t out, ExpandingArray<1> k, ExpandingArray<1> s, ConvPadding p, ExpandingArray<1> d,
               int64_t g, bool b, std::string mode, Generator& gen)
    : ConvNd("Conv1d", in, out, k.vec(), s.vec(), std::move(p), d.vec(), false, {0}, g, b, std::move(mode), gen) {}

Tensor Conv1d::forward(const Tensor& x) {
  if (!x.defined()) fail("Conv1d::forward: the input is undefined");
  return tritium::conv1d(x, weight, bias, stride, padding_arg(), dilation, groups);
}

Conv2d::Conv2d(int64_t in, int64_t out, ExpandingArray<2> k, ExpandingArray<2> s, ConvPadding p, ExpandingArray<2> d,
               int64_t g, bool b, std::string mode, Generator& gen)
    : ConvNd("Conv2d", in, out, k.vec(), s.vec(), std::move(p), d.vec(), false, {0, 0}, g, b, std::move(mode), gen) {}

Tensor Conv2d::forward(const Tensor& x) {
  if (!x.defined()) fail("Conv2d::forward: the input is undefined");
  return tritium::conv2d(x, weight, bias, stride, padding_arg(), dilation, groups);
}

ConvTranspose2d::ConvTranspose2d(int64_t in, int64_t out, ExpandingArray<2> k, ExpandingArray<2> s,
                                 ExpandingArray<2> p, ExpandingArray<2> op, int64_t g, bool b, ExpandingArray<2> d,
                                 std::string mode, Generator& gen)
    : ConvNd("ConvTranspose2d", in, out, k.vec(), s.vec(), ConvPadding(p.vec()), d.vec(), true, op.vec(), g, b,
             std::move(mode), gen) {}

Tensor ConvTranspose2d::forward(const Tensor& x) {
  if (!x.defined()) fail("ConvTranspose2d::forward: the input is undefined");
  return tritium::conv_transpose2d(x, weight, bias, stride, padding, output_padding, groups, dilation);
}

}  // namespace nn
}  // namespace tritium
