// Declarations of the pooling ops (ops/pool.h), interpolate (ops/interpolate.h) and embedding
// (ops/embedding.h). Each backward is a fused kernel (a gather over windows, or atomic adds), so
// none is twice differentiable. Attributes use PyTorch's argument names; the window arguments are
// lists of one value (both dims) or one per dim, an empty stride meaning stride = kernel_size.
#include "ops/decl/op_decl.h"
#include "ops/embedding.h"
#include "ops/interpolate.h"
#include "ops/pool.h"

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace tritium::ops::decl {

namespace {

using Inputs = std::vector<Tensor>;
using Dims = std::vector<int>;

Pool2dParams window(const char* op, const Attrs& a, bool one_d) {
  const Dims dilation = a.has("dilation") ? a.get<Dims>("dilation") : Dims{1};
  auto make = one_d ? pool1d_params : pool2d_params;
  return make(op, a.get<Dims>("kernel_size"), a.get<Dims>("stride"), a.get<Dims>("padding"), dilation,
              a.get<bool>("ceil_mode"));
}

std::optional<int64_t> divisor_of(const Attrs& a) {
  int d = a.get<int>("divisor_override");
  return d == 0 ? std::nullopt : std::optional<int64_t>(d);
}

// interpolate's attributes -> the plan: size (empty for none), scale_factor (one for every dim) and
// scale_factor_w (the last dim's, when it differs).
InterpolatePlan plan_of(const Tensor& x, const Attrs& a) {
  std::vector<double> scales;
  if (auto s = a.get<std::optional<double>>("scale_factor")) {
    scales.push_back(*s);
    if (auto w = a.get<std::optional<double>>("scale_factor_w")) scales.push_back(*w);
  }
  std::optional<bool> align;
  if (a.get<bool>("align_corners")) align = true;
  return interpolate_plan(x, interpolate_mode(a.get<std::string>("mode")), a.get<Dims>("size"), scales, align);
}

GradcheckSample sample(std::string what, Inputs inputs, Attrs attrs) {
  return {std::move(what), std::move(inputs), [attrs] { return attrs; }};
}

Attrs max_attrs(Dims k, Dims s, Dims p, Dims d, bool ceil) {
  return {{"kernel_size", k}, {"stride", s}, {"padding", p}, {"dilation", d}, {"ceil_mode", ceil}};
}
Attrs avg_attrs(Dims k, Dims s, Dims p, bool ceil, bool count_pad, int divisor = 0) {
  return {{"kernel_size", k}, {"stride", s}, {"padding", p}, {"ceil_mode", ceil}, {"count_include_pad", count_pad},
          {"divisor_override", divisor}};
}
Attrs interp_attrs(std::string mode, Dims size, std::optional<double> sf, bool align,
                   std::optional<double> sf_w = std::nullopt) {
  return {{"mode", mode}, {"size", size}, {"scale_factor", sf}, {"scale_factor_w", sf_w}, {"align_corners", align}};
}

void declare_max_pool(OpRegistry& r, const char* name, bool one_d) {
  r.add({.name = name,
         .torch_name = one_d ? "torch.nn.functional.max_pool1d" : "torch.nn.functional.max_pool2d",
         .inputs = {{.name = "input", .accepts = Accepts::floating}},
         .outputs = {"result", "indices"},
         .forward = [name, one_d](const Inputs& in, Attrs& a) {
           MaxPoolResult m = one_d ? max_pool1d(in[0], window(name, a, true)) : max_pool2d(in[0], window(name, a, false));
           return Inputs{m.values, m.indices};
         },
         .fused_backward = [name, one_d](const Tensor& g, const DerivativeContext& c) {
           Pool2dParams p = window(name, c.attrs(), one_d);
           return Inputs{one_d ? max_pool1d_backward(g, c.saved("input"), c.saved("indices"), p)
                               : max_pool2d_backward(g, c.saved("input"), c.saved("indices"), p)};
         },
         .fused_saves = {"input", "indices"},
         .fused_backward_name = one_d ? "max_pool1d_backward" : "max_pool2d_backward",
         .twice_differentiable = false,
         .gradcheck_samples = [one_d](Device d) {
           if (one_d)
             return std::vector<GradcheckSample>{
                 sample("[2,3,11] k3 s2 p1", {sample_uniform({2, 3, 11}, d, 701, -2, 2)}, max_attrs({3}, {2}, {1}, {1}, false)),
                 sample("[3,10] k2 d2 ceil", {sample_uniform({3, 10}, d, 702, -2, 2)}, max_attrs({2}, {3}, {0}, {2}, true))};
           return std::vector<GradcheckSample>{
               sample("[2,2,7,6] k3 s2 p1", {sample_uniform({2, 2, 7, 6}, d, 703, -2, 2)},
                      max_attrs({3}, {2}, {1}, {1}, false)),
               sample("[2,5,6] k(2,3) s1 d2 ceil", {sample_uniform({2, 5, 6}, d, 704, -2, 2)},
                      max_attrs({2, 3}, {1}, {1}, {2}, true))};
         }});
}

void declare_avg_pool(OpRegistry& r, const char* name, bool one_d) {
  r.add({.name = name,
         .torch_name = one_d ? "torch.nn.functional.avg_pool1d" : "torch.nn.functional.avg_pool2d",
         .inputs = {{.name = "input", .accepts = Accepts::floating}},
         .forward = [name, one_d](const Inputs& in, Attrs& a) {
           Pool2dParams p = window(name, a, one_d);
           bool cp = a.get<bool>("count_include_pad");
           return Inputs{one_d ? avg_pool1d(in[0], p, cp) : avg_pool2d(in[0], p, cp, divisor_of(a))};
         },
         .fused_backward = [name, one_d](const Tensor& g, const DerivativeContext& c) {
           const Attrs& a = c.attrs();
           Pool2dParams p = window(name, a, one_d);
           bool cp = a.get<bool>("count_include_pad");
           return Inputs{one_d ? avg_pool1d_backward(g, c.saved("input"), p, cp)
                               : avg_pool2d_backward(g, c.saved("input"), p, cp, divisor_of(a))};
         },
         .fused_saves = {"input"},
         .fused_backward_name = one_d ? "avg_pool1d_backward" : "avg_pool2d_backward",
         .twice_differentiable = false,
         .gradcheck_samples = [one_d](Device d) {
           if (one_d)
             return std::vector<GradcheckSample>{
                 sample("[2,3,11] k3 s2 p1 no pad count", {sample_uniform({2, 3, 11}, d, 711)},
                        avg_attrs({3}, {2}, {1}, false, false)),
                 sample("[3,10] k4 s3 ceil", {sample_uniform({3, 10}, d, 712)}, avg_attrs({4}, {3}, {2}, true, true))};
           return std::vector<GradcheckSample>{
               sample("[2,2,7,6] k3 s2 p1", {sample_uniform({2, 2, 7, 6}, d, 713)}, avg_attrs({3}, {2}, {1}, false, true)),
               sample("[2,5,6] k(3,2) s1 ceil no pad count", {sample_uniform({2, 5, 6}, d, 714)},
                      avg_attrs({3, 2}, {2, 1}, {1}, true, false)),
               sample("[1,2,5,5] k2 divisor 3", {sample_uniform({1, 2, 5, 5}, d, 715)},
                      avg_attrs({2}, {}, {0}, true, true, 3))};
         }});
}

}  // namespace

void declare_pooling(OpRegistry& r) {
  declare_max_pool(r, "max_pool2d", false);
  declare_max_pool(r, "max_pool1d", true);
  declare_avg_pool(r, "avg_pool2d", false);
  declare_avg_pool(r, "avg_pool1d", true);
  r.add({.name = "adaptive_avg_pool2d",
         .torch_name = "torch.nn.functional.adaptive_avg_pool2d",
         .inputs = {{.name = "input", .accepts = Accepts::floating}},
         .forward = [](const Inputs& in, Attrs& a) { return Inputs{adaptive_avg_pool2d(in[0], a.get<Dims>("output_size"))}; },
         .fused_backward = [](const Tensor& g, const DerivativeContext& c) {
           return Inputs{adaptive_avg_pool2d_backward(g, c.saved("input"))};
         },
         .fused_saves = {"input"},
         .fused_backward_name = "adaptive_avg_pool2d_backward",
         .twice_differentiable = false,
         .gradcheck_samples = [](Device d) {
           return std::vector<GradcheckSample>{
               sample("[2,2,7,5] to (3,4)", {sample_uniform({2, 2, 7, 5}, d, 721)}, {{"output_size", Dims{3, 4}}}),
               sample("[3,4,6] to (5,2)", {sample_uniform({3, 4, 6}, d, 722)}, {{"output_size", Dims{5, 2}}})};
         }});
  r.add({.name = "interpolate",
         .torch_name = "torch.nn.functional.interpolate",
         .inputs = {{.name = "input", .accepts = Accepts::floating}},
         .forward = [](const Inputs& in, Attrs& a) {
           return Inputs{interpolate(in[0], interpolate_mode(a.get<std::string>("mode")), plan_of(in[0], a),
                                     a.get<bool>("align_corners"))};
         },
         .fused_backward = [](const Tensor& g, const DerivativeContext& c) {
           const Tensor& x = c.saved("input");
           const Attrs& a = c.attrs();
           return Inputs{interpolate_backward(g, x, interpolate_mode(a.get<std::string>("mode")), plan_of(x, a),
                                              a.get<bool>("align_corners"))};
         },
         .fused_saves = {"input"},
         .fused_backward_name = "interpolate_backward",
         .twice_differentiable = false,
         .gradcheck_samples = [](Device d) {
           return std::vector<GradcheckSample>{
               sample("nearest [2,2,3,4] x2.5", {sample_uniform({2, 2, 3, 4}, d, 731)},
                      interp_attrs("nearest", {}, 2.5, false)),
               sample("nearest [2,3,5] to 3", {sample_uniform({2, 3, 5}, d, 732)}, interp_attrs("nearest", {3}, {}, false)),
               sample("bilinear [1,2,4,3] to (7,5)", {sample_uniform({1, 2, 4, 3}, d, 733)},
                      interp_attrs("bilinear", {7, 5}, {}, false)),
               sample("bilinear [2,1,3,4] align x(1.5,2)", {sample_uniform({2, 1, 3, 4}, d, 734)},
                      interp_attrs("bilinear", {}, 1.5, true, 2.0))};
         }});
  r.add({.name = "embedding",
         .torch_name = "torch.nn.functional.embedding",
         .inputs = {{.name = "weight", .accepts = Accepts::floating},
                    {.name = "indices", .accepts = Accepts::integral_index, .promotes = false, .differentiable = false}},
         .forward = [](const Inputs& in, Attrs&) { return Inputs{embedding(in[0], in[1])}; },
         .fused_backward = [](const Tensor& g, const DerivativeContext& c) {
           return Inputs{embedding_backward(g, c.saved("indices"), c.input_shape("weight")[0],
                                            c.attrs().get<int64_t>("padding_idx")),
                         Tensor()};
         },
         .fused_saves = {"indices"},
         .fused_backward_name = "embedding_backward",
         .twice_differentiable = false,
         .gradcheck_samples = [](Device d) {
           auto idx = [d](std::vector<int64_t> v, Shape s) { return Tensor::from_vector(v, std::move(s), d); };
           return std::vector<GradcheckSample>{
               sample("[7,3] rows, [2,4] indices with repeats", {sample_uniform({7, 3}, d, 741), idx({0, 6, 2, 2, 5, 0, 2, 1}, {2, 4})},
                      {{"padding_idx", int64_t{-1}}}),
               // padding_idx's row gets no gradient although the forward reads it (PyTorch's rule, not a
               // derivative), so the sample names a padding row the indices do not read.
               sample("padding_idx 2 unread", {sample_uniform({5, 4}, d, 742), idx({0, 1, 3, 4, 3}, {5})},
                      {{"padding_idx", int64_t{2}}})};
         }});
}

}  // namespace tritium::ops::decl
