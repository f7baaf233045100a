// Declarations of the differentiable reductions (sum, mean, amax, amin; attributes dims and
// keepdim): each gradient is the output's gradient seen at the input's rank and expanded back.
#include "ops/decl/op_decl.h"

#include "nn/functional.h"

// Declarations name only the fields they set (designated initializers); GCC 12 warns about the
// rest although they have default member initializers.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#include "runtime/views.h"

namespace tritium::ops::decl {
namespace {

using Ctx = DerivativeContext;
using Inputs = std::vector<Tensor>;
using Dims = std::vector<int>;

// The shape `shape` had before a reduction over `dims` without keepdim: size 1 at each reduced dim.
Shape keepdim_shape(const Shape& shape, const Dims& dims) {
  Shape out = shape;
  int rank = static_cast<int>(shape.size());
  if (dims.empty()) {
    for (auto& s : out) s = 1;
  } else {
    for (int d : dims) out[static_cast<size_t>(runtime::wrap_dim(d, rank, "reduction"))] = 1;
  }
  return out;
}

int64_t reduced_count(const Shape& shape, const Dims& dims) {
  int64_t n = 1;
  int rank = static_cast<int>(shape.size());
  if (dims.empty()) {
    for (int64_t s : shape) n *= s;
    return n;
  }
  std::vector<bool> seen(shape.size(), false);
  for (int d : dims) {
    auto w = static_cast<size_t>(runtime::wrap_dim(d, rank, "reduction"));
    if (!seen[w]) n *= shape[w];
    seen[w] = true;
  }
  return n;
}

// A reduction's output (or its gradient) seen with the input's rank (size 1 at reduced dims): a
// view when the strides allow it, else a contiguous copy.
// The gradient with the reduced dims back as size-1 dims (a recorded reshape: the derivatives
// are written in recorded calls so that create_graph differentiates them).
Tensor unreduce(const Tensor& g, const Shape& in_shape, const Dims& dims, bool keepdim) {
  if (keepdim) return g;
  return g.reshape(keepdim_shape(in_shape, dims));
}

const Dims& dims_of(const Ctx& c) { return c.attrs().get<Dims>("dims"); }
bool keepdim_of(const Ctx& c) { return c.attrs().get<bool>("keepdim"); }

// amax/amin: the gradient is shared evenly by the elements equal to the extremum (PyTorch's rule;
// with distinct values it all goes to the single extremum).
Tensor extremum_backward(const Tensor& g, const Ctx& c) {
  const Tensor& x = c.saved("self");
  // The mask and the count are constants (PyTorch's amax backward does not differentiate them).
  Tensor yk = unreduce(c.saved("result").detach(), x.shape(), dims_of(c), keepdim_of(c));
  Tensor gk = unreduce(g, x.shape(), dims_of(c), keepdim_of(c));
  Tensor mask = to_dtype(eq(x.detach(), yk), g.dtype());
  Tensor count = sum(mask, dims_of(c), /*keepdim=*/true);
  return tritium::mul(mask, tritium::div(gk, count));
}

std::vector<GradcheckSample> reduction_samples(Device d) {
  auto attrs = [](Dims dims, bool keepdim) { return [=] { return Attrs{{"dims", dims}, {"keepdim", keepdim}}; }; };
  return {
      {"all dims", {sample_uniform({3, 4}, d, 51)}, attrs({}, false)},
      {"dim 1", {sample_uniform({3, 4}, d, 52)}, attrs({1}, false)},
      {"dim -1 keepdim", {sample_uniform({2, 3, 4}, d, 53)}, attrs({-1}, true)},
      {"dims 0,2", {sample_uniform({2, 3, 4}, d, 54)}, attrs({0, 2}, false)},
      {"strided dim 0", {runtime::t_of(sample_uniform({4, 3}, d, 55))}, attrs({0}, false)},
  };
}

OpDecl reduction(std::string name, Tensor (*fw)(const Tensor&, Dims, bool), ResultDType rule, AutocastClass autocast,
                 Accepts accepts, std::vector<std::string> saves, std::string text, DerivativeFormula formula) {
  OpDecl op;
  op.torch_name = "torch." + name;
  op.name = std::move(name);
  op.inputs = {{.name = "self", .accepts = accepts}};
  op.forward = [fw](const Inputs& in, Attrs& a) {
    return Inputs{fw(in[0], a.get<Dims>("dims"), a.get<bool>("keepdim"))};
  };
  op.result_dtype = rule;
  op.autocast = autocast;
  op.derivatives = {{.input = "self", .saves = std::move(saves), .text = std::move(text), .formula = std::move(formula)}};
  op.gradcheck_samples = reduction_samples;
  return op;
}

}  // namespace

void declare_reductions(OpRegistry& r) {
  r.add(reduction("sum", sum, ResultDType::sum, AutocastClass::fp32, Accepts::any, {}, "grad.expand(self.sizes())",
                  [](const Tensor& g, const Ctx& c) {
                    const Shape& in = c.input_shape("self");
                    return unreduce(g, in, dims_of(c), keepdim_of(c)).expand(in);
                  }));
  r.add(reduction("mean", mean, ResultDType::same_as_input, AutocastClass::none, Accepts::floating, {},
                  "grad.expand(self.sizes()) / numel_reduced", [](const Tensor& g, const Ctx& c) {
                    const Shape& in = c.input_shape("self");
                    double count = static_cast<double>(reduced_count(in, dims_of(c)));
                    return unreduce(g / count, in, dims_of(c), keepdim_of(c)).expand(in);
                  }));
  r.add(reduction("amax", amax, ResultDType::same_as_input, AutocastClass::none, Accepts::any, {"self", "result"},
                  "grad * (self == result) / count(self == result)", extremum_backward));
  r.add(reduction("amin", amin, ResultDType::same_as_input, AutocastClass::none, Accepts::any, {"self", "result"},
                  "grad * (self == result) / count(self == result)", extremum_backward));
}

}  // namespace tritium::ops::decl
