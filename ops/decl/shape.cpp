// Declarations of the shape ops (ops/shape.h): views and copies, each with derivatives.yaml's
// formula. Views' backwards write the gradient into a zero tensor through the same view (narrow,
// diagonal) or undo the view (reshape, movedim); copies' backwards are the inverse copy (flip,
// roll) or a sum (repeat, unfold's overlapping windows). cat and stack take a variadic list.
#include "ops/decl/op_decl.h"

#include <set>
#include <string>

// Declarations name only the fields they set (designated initializers); GCC 12 warns about the
// rest although they have default member initializers.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#include "nn/tensor_ops.h"
#include "ops/elementwise_kernels.h"
#include "ops/shape.h"
#include "runtime/views.h"

namespace tritium::ops::decl {
namespace {

using Ctx = DerivativeContext;
using Inputs = std::vector<Tensor>;
using Dims = std::vector<int>;

Tensor reshape_to_input(const Tensor& g, const Ctx& c) { return g.reshape(c.input_shape("self")); }  // recorded

// The gradient of a view taken by `view_of_zeros`: zeros of the input's shape with g written
// through that view (slice_backward, diagonal_backward, select_backward).
template <class View>
Tensor through_zero_view(const Tensor& g, const Ctx& c, View view_of_zeros) {
  Tensor z = zeros(c.input_shape("self"), g.dtype(), g.device());
  Tensor part = view_of_zeros(z);
  copy_(part, g);
  return z;
}

// unfold_backward: window w, element j came from input position w * step + j along dim. Windows
// that do not overlap (step >= size) are one view of the input: the gradient is copied through it
// in one launch (into an uninitialised tensor when the windows cover the dim exactly, a reshape of
// the gradient when it is already laid out that way). Overlapping ones: for each j the positions
// over w are one strided slice, so the overlaps are summed slice by slice.
Tensor unfold_backward(const Tensor& g, const Ctx& c) {
  const Shape& in = c.input_shape("self");
  const int64_t size = c.attrs().get<int64_t>("size"), step = c.attrs().get<int64_t>("step");
  if (in.empty()) return reshape(g, {});  // a 0-dim input: one window of one element
  const int d = detail::normalize_dim("unfold", c.attrs().get<int>("dim"), static_cast<int>(in.size()));
  const int64_t windows = g.shape()[static_cast<size_t>(d)];
  if (step >= size) {
    const bool covers = windows * size == in[static_cast<size_t>(d)];
    Tensor z = covers ? Tensor::empty(in, g.dtype(), g.device()) : zeros(in, g.dtype(), g.device());
    if (windows == 0) return z;
    Tensor target = unfold(z, d, size, step);
    if (covers && g.is_contiguous() && target.strides() == g.strides()) return reshape(g, in);
    copy_(target, g);
    return z;
  }
  Tensor z = zeros(in, g.dtype(), g.device());
  if (windows == 0) return z;
  for (int64_t j = 0; j < size; ++j) {
    Tensor target = runtime::slice_of(z, d, j, j + (windows - 1) * step + 1, step);
    Tensor sum_j = add(target, runtime::select_of(g, -1, j));
    copy_(target, sum_j);
  }
  return z;
}

// repeat_backward: the gradient seen as [r0, s0, r1, s1, ...] summed over the r dims.
Tensor repeat_backward(const Tensor& g, const Ctx& c) {
  const Shape& in = c.input_shape("self");
  const Shape& repeats = c.attrs().get<Shape>("repeats");
  if (repeats.empty()) return g;
  Shape padded(repeats.size() - in.size(), 1);
  padded.insert(padded.end(), in.begin(), in.end());
  Shape wide;
  Dims sum_dims;
  for (size_t i = 0; i < repeats.size(); ++i) {
    sum_dims.push_back(static_cast<int>(wide.size()));
    wide.insert(wide.end(), {repeats[i], padded[i]});
  }
  return reshape(sum(reshape(g, wide), sum_dims, false), in);
}

// cat's inputs get the slices of the gradient they were copied to (a [0] input skipped by the
// legacy rule gets an empty gradient); recorded narrows (tritium::narrow), so that a double
// backward sees slices, not the whole gradient.
std::vector<Tensor> cat_backward(const Tensor& g, const Ctx& c) {
  std::vector<Tensor> grads;
  int d = c.attrs().get<int>("dim");
  int64_t start = 0;
  for (const Shape& s : c.input_shapes()) {
    if (s.size() == 1 && s[0] == 0 && g.dim() != 1) {
      grads.push_back(zeros(s, g.dtype(), g.device()));
      continue;
    }
    int w = detail::normalize_dim("cat", d, g.dim());
    int64_t n = s[static_cast<size_t>(w)];
    grads.push_back(tritium::narrow(g, w, start, n));
    start += n;
  }
  return grads;
}

std::vector<Tensor> stack_backward(const Tensor& g, const Ctx& c) {
  int d = detail::normalize_dim("stack", c.attrs().get<int>("dim"), g.dim());
  return tritium::unbind(g, d);  // recorded, as cat's narrows
}

DType promoted_across(const Inputs& in, const Attrs&) {
  DType r = in.at(0).dtype();
  for (size_t i = 1; i < in.size(); ++i) r = detail::promote_types("cat", r, in[i].dtype());
  return r;
}

// ---- gradcheck samples: small f64 tensors, strided ones and negative dims included ---------------

Tensor u(const Shape& s, Device d, uint64_t seed) { return sample_uniform(s, d, seed); }
Tensor strided(const Shape& s, Device d, uint64_t seed) {  // s's last two dims stored transposed
  Shape t = s;
  std::swap(t[t.size() - 1], t[t.size() - 2]);
  return runtime::transpose_of(sample_uniform(t, d, seed), -1, -2);
}

GradcheckSample sample(std::string what, Inputs inputs, Attrs attrs) {
  return {std::move(what), std::move(inputs), [attrs] { return attrs; }};
}

OpDecl unary_view(std::string name, std::string torch_name, std::function<Tensor(const Tensor&, const Attrs&)> fw,
                  std::string text, DerivativeFormula formula,
                  std::function<std::vector<GradcheckSample>(Device)> samples) {
  OpDecl op;
  op.name = std::move(name);
  op.torch_name = std::move(torch_name);
  op.inputs = {{.name = "self"}};
  op.forward = [fw](const Inputs& in, Attrs& a) { return Inputs{fw(in[0], a)}; };
  op.derivatives = {{.input = "self", .saves = {}, .text = std::move(text), .formula = std::move(formula)}};
  op.gradcheck_samples = std::move(samples);
  return op;
}

}  // namespace

void declare_shape(OpRegistry& registry) {
  // Most of these derivative formulas call the op library directly, outside autograd's recording,
  // so a double backward (create_graph) through them is refused with an error rather than giving a
  // wrong second derivative; recorded formulas for them are left for later (issue 29). The ones
  // below are reshapes, permutations and splits of the gradient, which autograd records.
  struct FirstOrderOnly {
    OpRegistry& to;
    void add(OpDecl d) {
      static const std::set<std::string> recorded = {"flatten", "unflatten", "ravel", "movedim", "cat", "stack"};
      d.twice_differentiable = recorded.count(d.name) > 0;
      to.add(std::move(d));
    }
  } r{registry};
  r.add(unary_view(
      "flatten", "torch.flatten",
      [](const Tensor& x, const Attrs& a) { return flatten(x, a.get<int>("start_dim"), a.get<int>("end_dim")); },
      "grad.reshape(self.sizes())", reshape_to_input, [](Device d) {
        return std::vector<GradcheckSample>{
            sample("dims 1..-1", {u({2, 3, 4}, d, 301)}, {{"start_dim", 1}, {"end_dim", -1}}),
            sample("strided (a copy)", {strided({3, 4}, d, 302)}, {{"start_dim", 0}, {"end_dim", -1}})};
      }));
  r.add(unary_view(
      "unflatten", "torch.unflatten",
      [](const Tensor& x, const Attrs& a) { return unflatten(x, a.get<int>("dim"), a.get<Shape>("sizes")); },
      "grad.reshape(self.sizes())", reshape_to_input, [](Device d) {
        return std::vector<GradcheckSample>{
            sample("dim -1 into [2, -1]", {strided({3, 4}, d, 303)}, {{"dim", -1}, {"sizes", Shape{2, -1}}})};
      }));
  r.add(unary_view(
      "ravel", "torch.ravel", [](const Tensor& x, const Attrs&) { return ravel(x); }, "grad.reshape(self.sizes())",
      reshape_to_input, [](Device d) {
        return std::vector<GradcheckSample>{sample("strided", {strided({3, 4}, d, 304)}, {})};
      }));
  r.add(unary_view(
      "broadcast_to", "torch.broadcast_to",
      [](const Tensor& x, const Attrs& a) { return broadcast_to(x, a.get<Shape>("size")); },
      "grad.sum_to_size(self.sizes())",
      [](const Tensor& g, const Ctx& c) { return sum_to(g, c.input_shape("self")); },
      [](Device d) {
        return std::vector<GradcheckSample>{
            sample("[3, 1] to [2, 3, 4]", {u({3, 1}, d, 305)}, {{"size", Shape{2, 3, 4}}})};
      }));
  r.add(unary_view(
      "narrow", "torch.narrow",
      [](const Tensor& x, const Attrs& a) {
        return narrow(x, a.get<int>("dim"), a.get<int64_t>("start"), a.get<int64_t>("length"));
      },
      "slice_backward(grad, self.sizes(), dim, start, start + length, 1)",
      [](const Tensor& g, const Ctx& c) {
        const Attrs& a = c.attrs();
        return through_zero_view(g, c, [&](const Tensor& z) {
          return narrow(z, a.get<int>("dim"), a.get<int64_t>("start"), a.get<int64_t>("length"));
        });
      },
      [](Device d) {
        return std::vector<GradcheckSample>{
            sample("dim -1, start -3", {strided({3, 5}, d, 306)},
                   {{"dim", -1}, {"start", int64_t(-3)}, {"length", int64_t(2)}})};
      }));
  r.add(unary_view(
      "unfold", "torch.Tensor.unfold",
      [](const Tensor& x, const Attrs& a) {
        return unfold(x, a.get<int>("dim"), a.get<int64_t>("size"), a.get<int64_t>("step"));
      },
      "unfold_backward(grad, self.sizes(), dimension, size, step)", unfold_backward, [](Device d) {
        return std::vector<GradcheckSample>{
            sample("overlapping windows", {strided({3, 7}, d, 307)},
                   {{"dim", -1}, {"size", int64_t(3)}, {"step", int64_t(2)}}),
            sample("gaps between windows", {u({8, 2}, d, 308)}, {{"dim", 0}, {"size", int64_t(2)}, {"step", int64_t(3)}})};
      }));
  r.add(unary_view(
      "movedim", "torch.movedim",
      [](const Tensor& x, const Attrs& a) {
        return movedim(x, a.get<Dims>("source"), a.get<Dims>("destination"));
      },
      "grad.movedim(destination, source)",
      [](const Tensor& g, const Ctx& c) {
        return tritium::movedim(g, c.attrs().get<Dims>("destination"), c.attrs().get<Dims>("source"));
      },
      [](Device d) {
        return std::vector<GradcheckSample>{
            sample("[0, -1] to [-1, 1]", {u({2, 3, 4}, d, 309)}, {{"source", Dims{0, -1}}, {"destination", Dims{-1, 1}}})};
      }));
  r.add(unary_view(
      "diagonal", "torch.diagonal",
      [](const Tensor& x, const Attrs& a) {
        return diagonal(x, a.get<int64_t>("offset"), a.get<int>("dim1"), a.get<int>("dim2"));
      },
      "diagonal_backward(grad, self.sizes(), offset, dim1, dim2)",
      [](const Tensor& g, const Ctx& c) {
        const Attrs& a = c.attrs();
        return through_zero_view(g, c, [&](const Tensor& z) {
          return diagonal(z, a.get<int64_t>("offset"), a.get<int>("dim1"), a.get<int>("dim2"));
        });
      },
      [](Device d) {
        return std::vector<GradcheckSample>{
            sample("offset 1 of dims (2, 0)", {u({3, 2, 4}, d, 310)},
                   {{"offset", int64_t(1)}, {"dim1", 2}, {"dim2", 0}}),
            sample("offset -1, strided", {strided({4, 3}, d, 311)}, {{"offset", int64_t(-1)}, {"dim1", 0}, {"dim2", 1}})};
      }));
  r.add(unary_view(
      "repeat", "torch.Tensor.repeat",
      [](const Tensor& x, const Attrs& a) { return repeat(x, a.get<Shape>("repeats")); },
      "repeat_backward(grad, repeats, self.sizes())", repeat_backward, [](Device d) {
        return std::vector<GradcheckSample>{
            sample("new leading dim, strided", {strided({2, 3}, d, 312)}, {{"repeats", Shape{2, 1, 3}}})};
      }));
  r.add(unary_view(
      "flip", "torch.flip", [](const Tensor& x, const Attrs& a) { return flip(x, a.get<Dims>("dims")); },
      "grad.flip(dims)", [](const Tensor& g, const Ctx& c) { return flip(g, c.attrs().get<Dims>("dims")); },
      [](Device d) {
        return std::vector<GradcheckSample>{sample("dims 0, -1", {strided({3, 4}, d, 313)}, {{"dims", Dims{0, -1}}})};
      }));
  r.add(unary_view(
      "roll", "torch.roll",
      [](const Tensor& x, const Attrs& a) { return roll(x, a.get<Shape>("shifts"), a.get<Dims>("dims")); },
      "grad.roll(-shifts, dims)",
      [](const Tensor& g, const Ctx& c) {
        Shape back = c.attrs().get<Shape>("shifts");
        for (int64_t& s : back) s = -s;
        return roll(g, back, c.attrs().get<Dims>("dims"));
      },
      [](Device d) {
        return std::vector<GradcheckSample>{
            sample("two dims", {strided({3, 4}, d, 314)}, {{"shifts", Shape{1, -5}}, {"dims", Dims{0, -1}}}),
            sample("flattened", {u({2, 3}, d, 315)}, {{"shifts", Shape{4}}, {"dims", Dims{}}})};
      }));
  for (bool lower : {true, false}) {
    std::string name = lower ? "tril" : "triu";
    r.add(unary_view(
        name, "torch." + name,
        [lower](const Tensor& x, const Attrs& a) {
          return lower ? tril(x, a.get<int64_t>("diagonal")) : triu(x, a.get<int64_t>("diagonal"));
        },
        "grad." + name + "(diagonal)",
        [lower](const Tensor& g, const Ctx& c) {
          return lower ? tril(g, c.attrs().get<int64_t>("diagonal")) : triu(g, c.attrs().get<int64_t>("diagonal"));
        },
        [](Device d) {
          return std::vector<GradcheckSample>{
              sample("batched, diagonal -1", {u({2, 3, 4}, d, 316)}, {{"diagonal", int64_t(-1)}})};
        }));
  }
  r.add({.name = "cat",
         .torch_name = "torch.cat",
         .inputs = {{.name = "tensors", .variadic = true}},
         .forward = [](const Inputs& in, Attrs& a) { return Inputs{cat(in, a.get<int>("dim"))}; },
         .result_dtype = ResultDType::custom,
         .custom_result_dtype = promoted_across,
         .fused_backward = cat_backward,
         .fused_backward_name = "cat_backward (grad.narrow per tensor)",
         .gradcheck_samples = [](Device d) {
           return std::vector<GradcheckSample>{
               sample("dim -1, one strided", {u({3, 2}, d, 317), strided({3, 4}, d, 318), u({3, 1}, d, 319)},
                      {{"dim", -1}})};
         }});
  r.add({.name = "stack",
         .torch_name = "torch.stack",
         .inputs = {{.name = "tensors", .variadic = true}},
         .forward = [](const Inputs& in, Attrs& a) { return Inputs{stack(in, a.get<int>("dim"))}; },
         .result_dtype = ResultDType::custom,
         .custom_result_dtype = promoted_across,
         .fused_backward = stack_backward,
         .fused_backward_name = "stack_backward (grad.unbind(dim))",
         .gradcheck_samples = [](Device d) {
           return std::vector<GradcheckSample>{
               sample("dim 1, one strided", {u({3, 2}, d, 320), strided({3, 2}, d, 321)}, {{"dim", 1}})};
         }});
}

}  // namespace tritium::ops::decl
