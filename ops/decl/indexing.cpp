// Declarations of the indexing ops (ops/indexing.h) with derivatives.yaml's formulas: what a
// gather reads a scatter_add gives back, what a scatter overwrote gets no gradient, masked
// positions get none. Index tensors and masks are non-differentiable inputs; the index lists of
// advanced indexing (x[idx], index_put) are an attribute.
#include "ops/decl/op_decl.h"

// Declarations name only the fields they set (designated initializers); GCC 12 warns about the
// rest although they have default member initializers.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#include "ops/elementwise_kernels.h"
#include "ops/indexing.h"
#include "runtime/views.h"

namespace tritium::ops::decl {
namespace {

using Ctx = DerivativeContext;
using Inputs = std::vector<Tensor>;

int dim_of(const Ctx& c) { return c.attrs().get<int>("dim"); }
Tensor zeros_for(const Ctx& c, const Tensor& g) { return zeros(c.input_shape("self"), g.dtype(), g.device()); }

const TensorArg kIndex{.name = "index", .accepts = Accepts::integral_index, .promotes = false, .differentiable = false};
const TensorArg kMask{.name = "mask", .accepts = Accepts::boolean, .promotes = false, .differentiable = false};

// The gradient of a scatter's src: grad.gather(dim, index), which has the index's shape, put in
// the leading corner of zeros of src's shape (src may be larger than the index; its elements
// past the index get no gradient).
Tensor corner(const Tensor& t, const Shape& shape) {  // t[:shape[0], :shape[1], ...], a view
  Tensor v = t;
  for (int d = 0; d < t.dim(); ++d) v = runtime::slice_of(v, d, 0, shape[static_cast<size_t>(d)], 1);
  return v;
}
Tensor src_grad(const Tensor& gathered, const Ctx& c) {
  const Shape& src = c.input_shape("src");
  if (gathered.shape() == src) return gathered;
  Tensor z = zeros(src, gathered.dtype(), gathered.device());
  Tensor part = corner(z, gathered.shape());
  copy_(part, gathered);
  return z;
}

// scatter_reduce's backward (derivatives.yaml's scatter_reduce_backward for sum, mean, amax, amin).
Tensor scattered_positions(const Ctx& c, const Tensor& g) {  // 1 where the index writes, else 0
  return scatter(zeros_for(c, g), dim_of(c), c.saved("index"), Scalar(1));
}

Tensor mean_count(const Ctx& c, const Tensor& g) {
  const Tensor& index = c.saved("index");
  Tensor count = c.attrs().get<bool>("include_self") ? ones(c.input_shape("self"), g.dtype(), g.device()) : zeros_for(c, g);
  scatter_add_(count, dim_of(c), index, ones(index.shape(), g.dtype(), g.device()));
  return where(eq(count, Scalar(0)), ones({}, g.dtype(), g.device()), count);
}

// amax / amin: the gradient is shared by the self and src elements equal to the result.
struct ExtremumShares {
  Tensor self_is_result, src_is_result, distributed;
};
ExtremumShares extremum_shares(const Tensor& g, const Ctx& c) {
  const Tensor &self = c.saved("self"), &src = c.saved("src"), &index = c.saved("index"), &result = c.saved("result");
  const int d = dim_of(c);
  Tensor self_is = to_dtype(eq(self, result), g.dtype());
  if (!c.attrs().get<bool>("include_self"))
    self_is = where(gt(scattered_positions(c, g), Scalar(0)), zeros({}, g.dtype(), g.device()), self_is);
  Tensor src_is = to_dtype(eq(corner(src, index.shape()), gather(result, d, index)), g.dtype());
  Tensor count = scatter_add(self_is, d, index, src_is);
  return {self_is, src_is, div(g, count)};
}

// prod: a zero must not divide; the product without the element is recomputed with zeros
// masked to one (self's zeros; src's zeros that are alone in their position).
Tensor prod_self(const Tensor& g, const Ctx& c) {
  const Tensor &self = c.saved("self"), &src = c.saved("src"), &index = c.saved("index");
  Tensor masked_self = masked_fill(self, eq(self, Scalar(0)), Scalar(1));
  Tensor others = scatter_reduce(masked_self, dim_of(c), index, src, "prod", c.attrs().get<bool>("include_self"));
  return div(mul(g, others), masked_self);
}

Tensor prod_src(const Tensor& g, const Ctx& c) {
  const Tensor &self = c.saved("self"), &index = c.saved("index"), &result = c.saved("result");
  const Tensor src = corner(c.saved("src"), index.shape());
  const int d = dim_of(c);
  Tensor src_zero = eq(src, Scalar(0));
  Tensor zeros_per_position = gather(scatter_add(zeros_like(self), d, index, to_dtype(src_zero, self.dtype())), d, index);
  Tensor single_zero = mul(src_zero, eq(zeros_per_position, Scalar(1)));
  Tensor masked_src = masked_fill(src, single_zero, Scalar(1));
  Tensor without_zero = scatter_reduce(self, d, index, masked_src, "prod", c.attrs().get<bool>("include_self"));
  Tensor by_division = div(gather(mul(g, result), d, index), masked_fill(src, src_zero, Scalar(1)));
  return where(single_zero, gather(mul(g, without_zero), d, index), by_division);
}

Tensor scatter_reduce_self(const Tensor& g, const Ctx& c) {
  const std::string& reduce = c.attrs().get<std::string>("reduce");
  const bool include_self = c.attrs().get<bool>("include_self");
  Tensor zero = zeros({}, g.dtype(), g.device());
  if (reduce == "sum" || reduce == "mean") {
    Tensor gs = reduce == "mean" ? div(g, mean_count(c, g)) : g;
    return include_self ? gs : where(gt(scattered_positions(c, g), Scalar(0)), zero, gs);
  }
  if (reduce == "prod") {
    Tensor gs = prod_self(g, c);
    return include_self ? gs : where(gt(scattered_positions(c, g), Scalar(0)), zero, gs);
  }
  ExtremumShares s = extremum_shares(g, c);
  return mul(s.self_is_result, s.distributed);
}

Tensor scatter_reduce_src(const Tensor& g, const Ctx& c) {
  const std::string& reduce = c.attrs().get<std::string>("reduce");
  const Tensor& index = c.saved("index");
  if (reduce == "sum") return src_grad(gather(g, dim_of(c), index), c);
  if (reduce == "mean") return src_grad(gather(div(g, mean_count(c, g)), dim_of(c), index), c);
  if (reduce == "prod") return src_grad(prod_src(g, c), c);
  ExtremumShares s = extremum_shares(g, c);
  return src_grad(mul(s.src_is_result, gather(s.distributed, dim_of(c), index)), c);
}

// Both gradients at once: amax / amin's shares (two compares, a gather and the count's scatter over
// self's and src's sizes) are worked out once where the two formulas each built them (a
// scatter_reduce amax of 2^24 elements with both inputs requiring grad ran them twice).
std::vector<Tensor> scatter_reduce_backward(const Tensor& g, const Ctx& c) {
  const std::string& reduce = c.attrs().get<std::string>("reduce");
  const bool want_self = c.needs_input_grad("self"), want_src = c.needs_input_grad("src");
  std::vector<Tensor> grads(3);  // self, index, src
  if (reduce == "amax" || reduce == "amin") {
    ExtremumShares s = extremum_shares(g, c);
    if (want_self) grads[0] = mul(s.self_is_result, s.distributed);
    if (want_src) grads[2] = src_grad(mul(s.src_is_result, gather(s.distributed, dim_of(c), c.saved("index"))), c);
    return grads;
  }
  if (want_self) grads[0] = scatter_reduce_self(g, c);
  if (want_src) grads[2] = scatter_reduce_src(g, c);
  return grads;
}

// ---- gradcheck samples --------------------------------------------------------------------------

GradcheckSample sample(std::string what, Inputs inputs, Attrs attrs) {
  return {std::move(what), std::move(inputs), [attrs] { return attrs; }};
}
Tensor u(const Shape& s, Device d, uint64_t seed) { return sample_uniform(s, d, seed); }
Tensor strided(const Shape& s, Device d, uint64_t seed) { return runtime::t_of(sample_uniform({s[1], s[0]}, d, seed)); }
Tensor idx(std::vector<int64_t> v, Shape s, Device d) { return Tensor::from_vector(v, std::move(s), d); }
Tensor mask(std::vector<bool> v, Shape s, Device d) { return Tensor::from_vector(v, std::move(s), d); }

}  // namespace

void declare_indexing(OpRegistry& registry) {
  // These derivative formulas call the op library directly, outside autograd's recording, so a
  // double backward (create_graph) through these ops is refused with an error rather than giving a
  // wrong second derivative. Recorded formulas are left for later (issue 29).
  struct FirstOrderOnly {
    OpRegistry& to;
    void add(OpDecl d) {
      d.twice_differentiable = false;
      to.add(std::move(d));
    }
  } r{registry};
  r.add({.name = "gather",
         .torch_name = "torch.gather",
         .inputs = {{.name = "self"}, kIndex},
         .forward = [](const Inputs& in, Attrs& a) { return Inputs{gather(in[0], a.get<int>("dim"), in[1])}; },
         .derivatives = {{.input = "self", .saves = {"index"}, .text = "zeros(self.sizes()).scatter_add(dim, index, grad)",
                          .formula = [](const Tensor& g, const Ctx& c) {
                            Tensor z = zeros_for(c, g);  // added into in place: no copy of the zeros
                            return scatter_add_(z, dim_of(c), c.saved("index"), g);
                          }}},
         .gradcheck_samples = [](Device d) {
           return std::vector<GradcheckSample>{
               sample("dim -1, repeated indices, strided", {strided({3, 4}, d, 401), idx({0, 3, 2, 2, 1, 0}, {3, 2}, d)},
                      {{"dim", -1}})};
         }});
  r.add({.name = "scatter",
         .torch_name = "torch.scatter",
         .inputs = {{.name = "self"}, kIndex, {.name = "src", .promotes = false}},
         .forward = [](const Inputs& in, Attrs& a) { return Inputs{scatter(in[0], a.get<int>("dim"), in[1], in[2])}; },
         .derivatives = {{.input = "self", .saves = {"index"}, .text = "grad.scatter(dim, index, 0)",
                          .formula = [](const Tensor& g, const Ctx& c) { return scatter(g, dim_of(c), c.saved("index"), Scalar(0)); }},
                         {.input = "src", .saves = {"index"}, .text = "grad.gather(dim, index)",
                          .formula = [](const Tensor& g, const Ctx& c) { return src_grad(gather(g, dim_of(c), c.saved("index")), c); }}},
         .gradcheck_samples = [](Device d) {
           return std::vector<GradcheckSample>{sample("dim 1, src larger than index",
                                                      {u({3, 4}, d, 402), idx({0, 3, 2, 1, 1, 0}, {3, 2}, d), u({3, 3}, d, 403)},
                                                      {{"dim", 1}})};
         }});
  r.add({.name = "scatter.value",
         .torch_name = "torch.scatter",
         .inputs = {{.name = "self"}, kIndex},
         .forward = [](const Inputs& in, Attrs& a) {
           return Inputs{scatter(in[0], a.get<int>("dim"), in[1], a.get<Scalar>("value"))};
         },
         .derivatives = {{.input = "self", .saves = {"index"}, .text = "grad.scatter(dim, index, 0)",
                          .formula = [](const Tensor& g, const Ctx& c) { return scatter(g, dim_of(c), c.saved("index"), Scalar(0)); }}},
         .gradcheck_samples = [](Device d) {
           return std::vector<GradcheckSample>{sample("dim 0", {u({3, 2}, d, 404), idx({2, 0}, {1, 2}, d)},
                                                      {{"dim", 0}, {"value", Scalar(0.25)}})};
         }});
  r.add({.name = "scatter_add",
         .torch_name = "torch.scatter_add",
         .inputs = {{.name = "self"}, kIndex, {.name = "src", .promotes = false}},
         .forward = [](const Inputs& in, Attrs& a) { return Inputs{scatter_add(in[0], a.get<int>("dim"), in[1], in[2])}; },
         .autocast = AutocastClass::promote,  // PyTorch's autocast promote list
         .derivatives = {{.input = "self", .saves = {}, .text = "grad",
                          .formula = [](const Tensor& g, const Ctx&) { return g; }},
                         {.input = "src", .saves = {"index"}, .text = "grad.gather(dim, index)",
                          .formula = [](const Tensor& g, const Ctx& c) { return src_grad(gather(g, dim_of(c), c.saved("index")), c); }}},
         .gradcheck_samples = [](Device d) {
           return std::vector<GradcheckSample>{sample("dim 1, duplicates", {u({3, 4}, d, 405), idx({0, 0, 2, 2, 1, 3}, {3, 2}, d),
                                                                             strided({3, 2}, d, 406)},
                                                      {{"dim", 1}})};
         }});
  r.add({.name = "scatter_reduce",
         .torch_name = "torch.scatter_reduce",
         .inputs = {{.name = "self"}, kIndex, {.name = "src", .promotes = false}},
         .forward = [](const Inputs& in, Attrs& a) {
           return Inputs{scatter_reduce(in[0], a.get<int>("dim"), in[1], in[2], a.get<std::string>("reduce"),
                                        a.get<bool>("include_self"))};
         },
         // derivatives.yaml's scatter_reduce_backward(grad, self, dim, index, src, reduce, include_self, result)
         .fused_backward = scatter_reduce_backward,
         .fused_saves = {"self", "index", "src", "result"},
         .fused_backward_name = "scatter_reduce_backward",
         .gradcheck_samples = [](Device d) {
           std::vector<GradcheckSample> out;
           uint64_t seed = 407;
           for (const char* reduce : {"sum", "prod", "mean", "amax", "amin"})
             for (bool include_self : {true, false})
               out.push_back(sample(std::string(reduce) + (include_self ? " with self" : " without self"),
                                    {u({3, 4}, d, seed++), idx({0, 0, 2, 2, 1, 0}, {3, 2}, d), u({3, include_self ? 2 : 3}, d, seed++)},
                                    {{"dim", 1}, {"reduce", std::string(reduce)}, {"include_self", include_self}}));
           // prod with zeros: one alone in its position (its gradient is the product of the
           // others), two in one position (no gradient through either), and a zero in self.
           Tensor self = sample_uniform({2, 3}, d, seed++, 0.5, 1.5), src = sample_uniform({2, 3}, d, seed++, 0.5, 1.5);
           auto zero_at = [](const Tensor& t, int64_t i, int64_t j) {
             Tensor e = runtime::select_of(runtime::select_of(t, 0, i), 0, j);
             fill_(e, 0.0);
           };
           zero_at(src, 0, 0);
           zero_at(src, 0, 1);
           zero_at(src, 1, 2);
           zero_at(self, 1, 1);
           out.push_back(sample("prod with zeros", {self, idx({0, 0, 1, 2, 1, 1}, {2, 3}, d), src},
                                {{"dim", 1}, {"reduce", std::string("prod")}, {"include_self", true}}));
           return out;
         }});
  r.add({.name = "index_select",
         .torch_name = "torch.index_select",
         .inputs = {{.name = "self"}, kIndex},
         .forward = [](const Inputs& in, Attrs& a) { return Inputs{index_select(in[0], a.get<int>("dim"), in[1])}; },
         .derivatives = {{.input = "self", .saves = {"index"}, .text = "zeros(self.sizes()).index_add(dim, index, grad)",
                          .formula = [](const Tensor& g, const Ctx& c) {
                            Tensor z = zeros_for(c, g);
                            return index_add_(z, dim_of(c), c.saved("index"), g);
                          }}},
         .gradcheck_samples = [](Device d) {
           return std::vector<GradcheckSample>{
               sample("dim 0, duplicates, strided", {strided({4, 3}, d, 420), idx({3, 0, 3}, {3}, d)}, {{"dim", 0}}),
               sample("dim -1", {u({2, 5}, d, 421), idx({4, 1}, {2}, d)}, {{"dim", -1}})};
         }});
  r.add({.name = "index_add",
         .torch_name = "torch.index_add",
         .inputs = {{.name = "self"}, kIndex, {.name = "source", .promotes = false}},
         .forward = [](const Inputs& in, Attrs& a) {
           return Inputs{index_add(in[0], a.get<int>("dim"), in[1], in[2], a.get<Scalar>("alpha"))};
         },
         .derivatives = {{.input = "self", .saves = {}, .text = "grad",
                          .formula = [](const Tensor& g, const Ctx&) { return g; }},
                         {.input = "source", .saves = {"index"}, .text = "grad.index_select(dim, index) * alpha",
                          .formula = [](const Tensor& g, const Ctx& c) {
                            return mul(index_select(g, dim_of(c), c.saved("index")), c.attrs().get<Scalar>("alpha"));
                          }}},
         .gradcheck_samples = [](Device d) {
           return std::vector<GradcheckSample>{sample("dim 0, duplicates, alpha 2",
                                                      {u({4, 3}, d, 422), idx({1, 3, 1}, {3}, d), strided({3, 3}, d, 423)},
                                                      {{"dim", 0}, {"alpha", Scalar(2.0)}})};
         }});
  r.add({.name = "masked_fill",
         .torch_name = "torch.masked_fill",
         .inputs = {{.name = "self"}, kMask},
         .forward = [](const Inputs& in, Attrs& a) { return Inputs{masked_fill(in[0], in[1], a.get<Scalar>("value"))}; },
         .derivatives = {{.input = "self", .saves = {"mask"}, .text = "grad.masked_fill(mask, 0)",
                          .formula = [](const Tensor& g, const Ctx& c) { return masked_fill(g, c.saved("mask"), Scalar(0)); }}},
         .gradcheck_samples = [](Device d) {
           return std::vector<GradcheckSample>{sample("broadcast mask, strided",
                                                      {strided({3, 4}, d, 424), mask({true, false, false, true}, {4}, d)},
                                                      {{"value", Scalar(0.5)}})};
         }});
  r.add({.name = "masked_select",
         .torch_name = "torch.masked_select",
         .inputs = {{.name = "self"}, kMask},
         .forward = [](const Inputs& in, Attrs&) { return Inputs{masked_select(in[0], in[1])}; },
         .derivatives = {{.input = "self", .saves = {"mask"}, .text = "masked_select_backward(grad, self, mask)",
                          .formula = [](const Tensor& g, const Ctx& c) {
                            // The broadcast shape, with g put back where the mask is true (the
                            // dispatch then sums a broadcast self back to its shape). Both seen
                            // flat: one index along one dim, which the indexing kernel checks as
                            // it goes (a mask over several dims would give an index per dim, each
                            // checked by reductions first).
                            const Tensor& m = c.saved("mask");
                            Shape b = detail::broadcast_shapes("masked_select", c.input_shape("self"), m.shape());
                            Tensor z = zeros(b, g.dtype(), g.device());
                            int64_t n = 1;
                            for (int64_t s : b) n *= s;
                            Tensor flat = runtime::view_of(z, {n});
                            index_put_(flat, {runtime::view_of(contiguous(runtime::expand_of(m, b)), {n})}, g, false);
                            return z;
                          }}},
         .gradcheck_samples = [](Device d) {
           return std::vector<GradcheckSample>{
               sample("self broadcast to the mask", {u({4}, d, 425), mask({true, false, true, true, false, false, true, true,
                                                                             false, true, false, true},
                                                                            {3, 4}, d)},
                      {})};
         }});
  r.add({.name = "index",
         .torch_name = "torch.Tensor.__getitem__",
         .inputs = {{.name = "self"}},
         .forward = [](const Inputs& in, Attrs& a) { return Inputs{index(in[0], a.get<std::vector<Tensor>>("indices"))}; },
         .derivatives = {{.input = "self", .saves = {}, .text = "zeros(self.sizes()).index_put_(indices, grad, accumulate=True)",
                          .formula = [](const Tensor& g, const Ctx& c) {
                            Tensor z = zeros_for(c, g);
                            index_put_(z, c.attrs().get<std::vector<Tensor>>("indices"), contiguous(g), true);
                            return z;
                          }}},
         .gradcheck_samples = [](Device d) {
           using V = std::vector<Tensor>;
           return std::vector<GradcheckSample>{
               sample("adjacent dims 1, 2, broadcast, negative", {u({4, 5, 3}, d, 426)},
                      {{"indices", V{Tensor(), idx({0, 4}, {2, 1}, d), idx({2, -1, 0}, {3}, d)}}}),
               sample("dims 0 and 2 apart, repeated", {u({4, 5, 3}, d, 427)},
                      {{"indices", V{idx({3, 0, 3}, {3}, d), Tensor(), idx({1, -3, 1}, {3}, d)}}}),
               sample("bool mask", {strided({4, 3}, d, 428)}, {{"indices", V{mask({true, false, true, true}, {4}, d)}}})};
         }});
  r.add({.name = "index_put",
         .torch_name = "torch.index_put",
         .inputs = {{.name = "self"}, {.name = "values", .promotes = false}},
         .forward = [](const Inputs& in, Attrs& a) {
           Tensor out = clone(in[0]);
           index_put_(out, a.get<std::vector<Tensor>>("indices"), in[1], a.get<bool>("accumulate"));
           return Inputs{out};
         },
         .autocast = AutocastClass::promote,  // PyTorch's autocast promote list
         .derivatives = {{.input = "self", .saves = {}, .text = "accumulate ? grad : grad.index_put(indices, 0)",
                          .formula = [](const Tensor& g, const Ctx& c) {
                            if (c.attrs().get<bool>("accumulate")) return g;
                            Tensor out = clone(g);
                            index_put_(out, c.attrs().get<std::vector<Tensor>>("indices"), zeros({}, g.dtype(), g.device()));
                            return out;
                          }},
                         {.input = "values", .saves = {}, .text = "grad[indices]",
                          .formula = [](const Tensor& g, const Ctx& c) {
                            return index(g, c.attrs().get<std::vector<Tensor>>("indices"));
                          }}},
         .gradcheck_samples = [](Device d) {
           using V = std::vector<Tensor>;
           return std::vector<GradcheckSample>{
               sample("rows", {u({4, 3}, d, 429), u({2, 3}, d, 430)}, {{"indices", V{idx({3, 1}, {2}, d)}}, {"accumulate", false}}),
               sample("accumulate duplicates, broadcast values", {strided({4, 3}, d, 431), u({3}, d, 432)},
                      {{"indices", V{idx({1, 1}, {2}, d)}}, {"accumulate", true}})};
         }});
}

}  // namespace tritium::ops::decl
