// Declarations of conv1d, conv2d and conv_transpose2d (ops/conv.h): input, weight, optional bias;
// attributes stride, padding (a list, or the string "same" / "valid" for conv1d / conv2d),
// dilation, groups (and output_padding for the transposed op); one fused backward each that
// gives the three gradients (dgrad, wgrad, the bias sum), as PyTorch's convolution_backward.
#include "ops/conv.h"
#include "ops/decl/op_decl.h"

// Declarations name only the fields they set (designated initializers); GCC 12 warns about the
// rest although they have default member initializers.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace tritium::ops::decl {

namespace {

using Inputs = std::vector<Tensor>;

std::vector<int64_t> ints(const Attrs& a, std::string_view name) {
  const auto& v = a.get<std::vector<int>>(name);
  return {v.begin(), v.end()};
}

// "padding" holds a list of numbers or one of PyTorch's strings.
ConvPadding padding_of(const Attrs& a) {
  for (const auto& [name, value] : a.values())
    if (name == "padding") {
      if (const auto* s = std::get_if<std::string>(&value)) return ConvPadding(*s);
      break;
    }
  return ConvPadding(ints(a, "padding"));
}

ConvGradMask mask_of(const DerivativeContext& c) {
  return {c.needs_input_grad("input"), c.needs_input_grad("weight"), c.needs_input_grad("bias")};
}

const std::vector<TensorArg> conv_inputs = {
    {.name = "input", .accepts = Accepts::floating},
    {.name = "weight", .accepts = Accepts::floating, .promotes = false},
    {.name = "bias", .accepts = Accepts::floating, .promotes = false, .optional = true}};

std::function<Attrs()> conv_attrs(std::vector<int> stride, AttrValue padding, std::vector<int> dilation, int groups) {
  return [=] { return Attrs{{"stride", stride}, {"padding", padding}, {"dilation", dilation}, {"groups", groups}}; };
}

}  // namespace

void declare_conv(OpRegistry& r) {
  using V = std::vector<int>;
  r.add({.name = "conv2d",
         .torch_name = "torch.nn.functional.conv2d",
         .inputs = conv_inputs,
         .forward = [](const Inputs& in, Attrs& a) {
           return Inputs{conv2d(in[0], in[1], in[2], ints(a, "stride"), padding_of(a), ints(a, "dilation"),
                                a.get<int>("groups"))};
         },
         .autocast = AutocastClass::lower_precision_fp,
         .fused_backward = [](const Tensor& g, const DerivativeContext& c) {
           const Attrs& a = c.attrs();
           ConvGrads d = conv2d_backward(g, c.saved("input"), c.saved("weight"), ints(a, "stride"), padding_of(a),
                                         ints(a, "dilation"), a.get<int>("groups"), mask_of(c));
           return Inputs{d.input, d.weight, d.bias};
         },
         .fused_saves = {"input", "weight"},
         .fused_backward_name = "convolution_backward",
         .twice_differentiable = false,
         .gradcheck_samples = [](Device d) {
           return std::vector<GradcheckSample>{
               {"[2,3,5,4] k3x2 stride 2 padding 1 bias",
                {sample_uniform({2, 3, 5, 4}, d, 401), sample_uniform({4, 3, 3, 2}, d, 402), sample_uniform({4}, d, 403)},
                conv_attrs({2, 1}, V{1, 1}, {1, 1}, 1)},
               {"[1,4,5,5] groups 2 dilation 2 same, no bias",
                {sample_uniform({1, 4, 5, 5}, d, 404), sample_uniform({2, 2, 2, 2}, d, 405), Tensor()},
                conv_attrs({1, 1}, std::string("same"), {2, 2}, 2)},
           };
         }});
  r.add({.name = "conv1d",
         .torch_name = "torch.nn.functional.conv1d",
         .inputs = conv_inputs,
         .forward = [](const Inputs& in, Attrs& a) {
           return Inputs{conv1d(in[0], in[1], in[2], ints(a, "stride"), padding_of(a), ints(a, "dilation"),
                                a.get<int>("groups"))};
         },
         .autocast = AutocastClass::lower_precision_fp,
         .fused_backward = [](const Tensor& g, const DerivativeContext& c) {
           const Attrs& a = c.attrs();
           ConvGrads d = conv1d_backward(g, c.saved("input"), c.saved("weight"), ints(a, "stride"), padding_of(a),
                                         ints(a, "dilation"), a.get<int>("groups"), mask_of(c));
           return Inputs{d.input, d.weight, d.bias};
         },
         .fused_saves = {"input", "weight"},
         .fused_backward_name = "convolution_backward",
         .twice_differentiable = false,
         .gradcheck_samples = [](Device d) {
           return std::vector<GradcheckSample>{
               {"[2,2,7] k3 stride 2 padding 2 dilation 2 bias",
                {sample_uniform({2, 2, 7}, d, 411), sample_uniform({3, 2, 3}, d, 412), sample_uniform({3}, d, 413)},
                conv_attrs({2}, V{2}, {2}, 1)},
           };
         }});
  r.add({.name = "conv_transpose2d",
         .torch_name = "torch.nn.functional.conv_transpose2d",
         .inputs = conv_inputs,
         .forward = [](const Inputs& in, Attrs& a) {
           return Inputs{conv_transpose2d(in[0], in[1], in[2], ints(a, "stride"), ints(a, "padding"),
                                          ints(a, "output_padding"), a.get<int>("groups"), ints(a, "dilation"))};
         },
         .autocast = AutocastClass::lower_precision_fp,
         .fused_backward = [](const Tensor& g, const DerivativeContext& c) {
           const Attrs& a = c.attrs();
           ConvGrads d = conv_transpose2d_backward(g, c.saved("input"), c.saved("weight"), ints(a, "stride"),
                                                   ints(a, "padding"), ints(a, "output_padding"), a.get<int>("groups"),
                                                   ints(a, "dilation"), mask_of(c));
           return Inputs{d.input, d.weight, d.bias};
         },
         .fused_saves = {"input", "weight"},
         .fused_backward_name = "convolution_backward",
         .twice_differentiable = false,
         .gradcheck_samples = [](Device d) {
           auto attrs = [](V stride, V padding, V output_padding, int groups, V dilation) {
             return [=] {
               return Attrs{{"stride", stride}, {"padding", padding}, {"output_padding", output_padding},
                            {"groups", groups}, {"dilation", dilation}};
             };
           };
           return std::vector<GradcheckSample>{
               {"[2,4,3,4] -> 2x3 k3 stride 2 padding 1 output_padding 1 groups 2 bias",
                {sample_uniform({2, 4, 3, 4}, d, 421), sample_uniform({4, 1, 3, 3}, d, 422), sample_uniform({2}, d, 423)},
                attrs({2, 2}, {1, 1}, {1, 1}, 2, {1, 1})},
           };
         }});
}

}  // namespace tritium::ops::decl
