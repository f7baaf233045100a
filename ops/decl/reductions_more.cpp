// Declarations of issue 29 item 4's differentiable reductions, scans and selections
// (ops/reduce_stats.h, ops/sort.h): var std prod prod.dim_int logsumexp linalg_vector_norm
// max.dim min.dim median median.dim kthvalue cumsum cumprod cummax cummin sort topk. Derivatives
// follow PyTorch's derivatives.yaml and are written in recorded calls (double backward works)
// except cumprod's, a kernel of its own (ops::cumprod_backward) that handles zeros without
// dividing, and cummax / cummin's (ops::cummaxmin_backward, a reverse segmented scan). Selections (max.dim, sort, topk, ...) send the gradient back to the selected indices.
#include "nn/autograd.h"
#include "nn/functional.h"
#include "nn/reduction_ops.h"
#include "ops/decl/op_decl.h"
#include "ops/indexing.h"
#include "ops/reduce_stats.h"
#include "ops/sort.h"
#include "runtime/views.h"

// Declarations name only the fields they set (designated initializers).
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace tritium::ops::decl {
namespace {

using Ctx = DerivativeContext;
using Inputs = std::vector<Tensor>;
using Dims = std::vector<int>;

// Normalised reduced dims (empty = all) of an input of `shape`.
Dims normalised(const Shape& shape, const Dims& dims) {
  int rank = static_cast<int>(shape.size());
  Dims out;
  if (dims.empty())
    for (int d = 0; d < rank; ++d) out.push_back(d);
  for (int d : dims) out.push_back(runtime::wrap_dim(d, std::max(rank, 1), "reduction"));
  if (rank == 0) out.clear();
  return out;
}

int64_t reduced_count(const Shape& shape, const Dims& dims) {
  int64_t n = 1;
  for (int d : normalised(shape, dims)) n *= shape[static_cast<size_t>(d)];
  return n;
}

// A reduction's gradient seen at the input's rank (size 1 at the reduced dims), recorded.
Tensor unreduce(const Tensor& g, const Shape& in, const Dims& dims, bool keepdim) {
  if (keepdim) return g;
  Shape s = in;
  for (int d : normalised(in, dims)) s[static_cast<size_t>(d)] = 1;
  return g.reshape(s);
}

const Dims& dims_of(const Ctx& c) { return c.attrs().get<Dims>("dims"); }
bool keepdim_of(const Ctx& c) { return c.attrs().get<bool>("keepdim"); }
int dim_of(const Ctx& c) { return c.attrs().get<int>("dim"); }

// var's derivative: grad * 2 (x - mean) / (N - correction) (PyTorch's var_backward).
Tensor var_backward(const Tensor& g, const Tensor& x, const Ctx& c) {
  const Dims& dims = dims_of(c);
  double n = static_cast<double>(reduced_count(x.shape(), dims));
  double denom = std::max(0.0, n - c.attrs().get<double>("correction"));
  Tensor centred = tritium::sub(x, tritium::mean(x, dims, true));
  // The constant goes on the reduced gradient: one pass over x's size fewer than scaling the product.
  return tritium::mul(unreduce(g, x.shape(), dims, keepdim_of(c)) * (2.0 / denom), centred);
}

// Whether x holds a zero (one count read back, as PyTorch's prod_backward): without zeros prod's
// gradient is grad * result / x, one elementwise pass; with zeros the two scans below.
bool has_zero(const Tensor& x) {
  return ops::to_dtype(ops::any(ops::eq(x.detach(), Scalar(0))), DType::i64).to_vector<int64_t>()[0] != 0;
}

// The product of the other elements along `dim`, for each element (exclusive prefix times
// exclusive suffix products: no division, so zeros are handled), in recorded calls.
Tensor product_of_others(const Tensor& x, int dim) {
  const int64_t n = x.shape()[static_cast<size_t>(dim)];
  if (n <= 1) return tritium::ones_like(x);
  Shape one = x.shape();
  one[static_cast<size_t>(dim)] = 1;
  Tensor ones = tritium::ones(one, x.dtype(), x.device());
  auto exclusive = [&](const Tensor& t) { return tritium::cumprod(tritium::cat({ones, tritium::narrow(t, dim, 0, n - 1)}, dim), dim); };
  Tensor right = tritium::flip(exclusive(tritium::flip(x, {dim})), {dim});
  return tritium::mul(exclusive(x), right);
}

// Sends the gradient of selected values back to their indices along `dim` (PyTorch's
// value_selecting_reduction_backward; a permutation for sort).
Tensor select_backward(const Tensor& g, const Tensor& indices, const Shape& in, int dim, bool keepdim) {
  int d = runtime::wrap_dim(dim, std::max<int>(static_cast<int>(in.size()), 1), "select_backward");
  if (in.empty()) return g;
  Tensor gk = keepdim ? g : g.unsqueeze(d);
  Tensor ik = keepdim ? indices : indices.unsqueeze(d);
  // Recorded only where a double backward can see it; otherwise added into fresh zeros in place
  // (PyTorch's zeros().scatter_()): the out-of-place scatter_add cloned the zeros, a second write
  // and a read of the whole input's size (max.dim of [16384, 1024] f32: 3 passes of 64 MB, not 1).
  if (nn::grad_enabled() && g.requires_grad())
    return tritium::scatter_add(tritium::zeros(in, g.dtype(), g.device()), d, ik, gk);
  Tensor z = ops::zeros(in, g.dtype(), g.device());
  return ops::scatter_add_(z, d, ik, gk);
}

// max()/median() over all elements: the gradient shared by the elements equal to the result
// (PyTorch's evenly_distribute_backward; NaN counts as equal to a NaN result).
Tensor evenly_distribute(const Tensor& g, const Tensor& x, const Tensor& result) {
  Tensor xd = x.detach(), r = result.detach();
  Tensor mask = ops::to_dtype(ops::where(ops::ne(r, r), ops::ne(xd, xd), ops::eq(xd, r)), g.dtype());
  return tritium::mul(g, tritium::div(mask, ops::sum(mask)));
}

Attrs dims_attrs(Dims dims, bool keepdim) { return Attrs{{"dims", std::move(dims)}, {"keepdim", keepdim}}; }

std::vector<GradcheckSample> var_samples(Device d) {
  auto attrs = [](Dims dims, double c, bool k) { return [=] { return Attrs{{"dims", dims}, {"correction", c}, {"keepdim", k}}; }; };
  return {
      {"dim 1", {sample_uniform({3, 4}, d, 301)}, attrs({1}, 1, false)},
      {"dims 0,2 correction 0 keepdim", {sample_uniform({2, 3, 4}, d, 302)}, attrs({0, 2}, 0, true)},
      {"all dims correction 2.5", {sample_uniform({3, 4}, d, 303)}, attrs({}, 2.5, false)},
      {"strided dim 0", {runtime::t_of(sample_uniform({4, 3}, d, 304))}, attrs({0}, 1, false)},
  };
}

// Inputs with zeros: one in a row, two in another (prod's derivative without division).
Tensor with_zeros(const Shape& shape, Device d, uint64_t seed, std::vector<size_t> at) {
  std::vector<double> v = sample_uniform(shape, d, seed, 0.5, 1.5).to_vector<double>();  // on d: a CUDA-only build has no CPU
  for (size_t i : at) v[i] = 0;
  return Tensor::from_vector(v, shape, d);
}

OpDecl reduction_decl(std::string name, std::string torch_name, Accepts accepts, ResultDType rule) {
  OpDecl op;
  op.name = std::move(name);
  op.torch_name = std::move(torch_name);
  op.inputs = {{.name = "self", .accepts = accepts}};
  op.result_dtype = rule;
  return op;
}

void declare_var_std(OpRegistry& r) {
  for (bool is_std : {false, true}) {
    OpDecl op = reduction_decl(is_std ? "std" : "var", is_std ? "torch.std" : "torch.var", Accepts::floating,
                               ResultDType::same_as_input);
    op.forward = [is_std](const Inputs& in, Attrs& a) {
      auto f = is_std ? &ops::std : &ops::var;
      return Inputs{f(in[0], a.get<Dims>("dims"), a.get<double>("correction"), a.get<bool>("keepdim"))};
    };
    op.autocast = AutocastClass::none;  // not in PyTorch's autocast lists: runs in the input's dtype
    if (!is_std) {
      op.derivatives = {{.input = "self", .saves = {"self"}, .text = "var_backward(grad, self, dim, correction, keepdim)",
                         .formula = [](const Tensor& g, const Ctx& c) { return var_backward(g, c.saved("self"), c); }}};
    } else {
      op.derivatives = {{.input = "self", .saves = {"self", "result"},
                         .text = "var_backward((grad / (result * 2)).masked_fill_(result == 0, 0), self, dim, correction, keepdim)",
                         .formula = [](const Tensor& g, const Ctx& c) {
                           // A zero std (constant or single-element rows) has gradient 0, not
                           // 0 / 0, as PyTorch's std_backward.
                           const Tensor& result = c.saved("result");
                           Tensor zero = ops::eq(result.detach(), Scalar(0));
                           return var_backward(tritium::where(zero, 0.0, tritium::div(g, result * 2.0)), c.saved("self"), c);
                         }}};
    }
    op.gradcheck_samples = var_samples;
    r.add(std::move(op));
  }
}

void declare_prod(OpRegistry& r) {
  OpDecl all = reduction_decl("prod", "torch.prod", Accepts::any, ResultDType::sum);
  all.forward = [](const Inputs& in, Attrs&) { return Inputs{ops::prod(in[0])}; };
  all.autocast = AutocastClass::fp32;
  all.derivatives = {{.input = "self", .saves = {"self", "result"}, .text = "prod_backward(grad, self, result) (zeros: products of the others)",
                      .formula = [](const Tensor& g, const Ctx& c) {
                        const Tensor& x = c.saved("self");
                        if (x.dim() == 0) return g;
                        if (!has_zero(x)) return tritium::mul(g, tritium::div(c.saved("result"), x));
                        Tensor flat = x.reshape({x.numel()});
                        Tensor others = product_of_others(flat, 0).reshape(x.shape());
                        return tritium::mul(g, others);
                      }}};
  all.gradcheck_samples = [](Device d) {
    return std::vector<GradcheckSample>{
        {"no zeros", {sample_uniform({3, 4}, d, 311, 0.5, 1.5)}, [] { return Attrs{}; }},
        {"one zero", {with_zeros({3, 4}, d, 312, {5})}, [] { return Attrs{}; }},
        {"two zeros", {with_zeros({2, 3}, d, 313, {0, 4})}, [] { return Attrs{}; }},
    };
  };
  r.add(std::move(all));

  OpDecl dim = reduction_decl("prod.dim_int", "torch.prod", Accepts::any, ResultDType::sum);
  dim.forward = [](const Inputs& in, Attrs& a) { return Inputs{ops::prod(in[0], a.get<int>("dim"), a.get<bool>("keepdim"))}; };
  dim.autocast = AutocastClass::fp32;
  dim.derivatives = {{.input = "self", .saves = {"self", "result"}, .text = "prod_backward(grad, self, result, dim, keepdim)",
                      .formula = [](const Tensor& g, const Ctx& c) {
                        const Tensor& x = c.saved("self");
                        if (x.dim() == 0) return g;
                        int d = runtime::wrap_dim(dim_of(c), x.dim(), "prod");
                        if (!has_zero(x)) {
                          Tensor r = unreduce(c.saved("result"), x.shape(), {d}, keepdim_of(c));
                          return tritium::mul(unreduce(g, x.shape(), {d}, keepdim_of(c)), tritium::div(r, x));
                        }
                        return tritium::mul(unreduce(g, x.shape(), {d}, keepdim_of(c)), product_of_others(x, d));
                      }}};
  dim.gradcheck_samples = [](Device d) {
    auto attrs = [](int dm, bool k) { return [=] { return Attrs{{"dim", dm}, {"keepdim", k}}; }; };
    return std::vector<GradcheckSample>{
        {"dim 1", {sample_uniform({3, 4}, d, 314, 0.5, 1.5)}, attrs(1, false)},
        {"zeros, dim -1 keepdim", {with_zeros({3, 4}, d, 315, {1, 4, 7})}, attrs(-1, true)},
        {"zeros, dim 0", {with_zeros({3, 4}, d, 316, {0, 4, 8})}, attrs(0, false)},
    };
  };
  r.add(std::move(dim));
}

void declare_logsumexp(OpRegistry& r) {
  OpDecl op = reduction_decl("logsumexp", "torch.logsumexp", Accepts::any, ResultDType::int_to_float);
  op.forward = [](const Inputs& in, Attrs& a) { return Inputs{ops::logsumexp(in[0], a.get<Dims>("dims"), a.get<bool>("keepdim"))}; };
  op.autocast = AutocastClass::fp32;
  op.derivatives = {{.input = "self", .saves = {"self", "result"}, .text = "grad * (self - result).exp()",
                     .formula = [](const Tensor& g, const Ctx& c) {
                       const Tensor& x = c.saved("self");
                       Tensor rk = unreduce(c.saved("result"), x.shape(), dims_of(c), keepdim_of(c));
                       return tritium::mul(unreduce(g, x.shape(), dims_of(c), keepdim_of(c)), tritium::exp(tritium::sub(x, rk)));
                     }}};
  op.gradcheck_samples = [](Device d) {
    return std::vector<GradcheckSample>{
        {"dim 1", {sample_uniform({3, 4}, d, 321, -3, 3)}, [] { return dims_attrs({1}, false); }},
        {"dims 0,2 keepdim", {sample_uniform({2, 3, 4}, d, 322, -3, 3)}, [] { return dims_attrs({0, 2}, true); }},
    };
  };
  r.add(std::move(op));
}

// PyTorch's norm_backward for a vector norm of order p.
Tensor norm_backward(const Tensor& g, const Ctx& c) {
  const Tensor& x = c.saved("self");
  const double p = c.attrs().get<double>("ord");
  const Dims& dims = dims_of(c);
  const bool keepdim = keepdim_of(c);
  Tensor gk = unreduce(g, x.shape(), dims, keepdim);
  Tensor nk = unreduce(c.saved("result"), x.shape(), dims, keepdim);
  if (p == 0) return x * 0.0;
  // Built only for the orders that use it: five launches over the whole input, which ord 2 paid
  // without reading the result.
  auto sign_of = [&] {
    return tritium::where(ops::gt(x.detach(), Scalar(0)), 1.0, tritium::where(ops::lt(x.detach(), Scalar(0)), -1.0, tritium::zeros_like(x)));
  };
  if (p == 1) return tritium::mul(gk, sign_of());
  Tensor zero_norm = ops::eq(nk.detach(), Scalar(0));
  // ord 2, PyTorch's `self * (grad / norm).masked_fill_(norm == 0, 0)`: the per-row factor first
  // (reduced-size tensors), then one pass over x. A zero norm means a row of zeros, so x times 0
  // is what the mask gave before.
  if (p == 2) return tritium::mul(x, tritium::where(zero_norm, 0.0, tritium::div(gk, nk)));
  Tensor sign = sign_of();
  Tensor absx = tritium::mul(x, sign);
  if (std::isinf(p)) {
    Tensor mask = ops::to_dtype(ops::eq(absx.detach(), nk.detach()), x.dtype());
    Tensor count = ops::sum(mask, dims, true);
    return tritium::mul(tritium::mul(sign, tritium::div(mask, count)), gk);
  }
  // x |x|^(p-2) grad / norm^(p-1)
  Tensor scale = tritium::mul(x, tritium::pow(absx, p - 2));
  return tritium::where(zero_norm, 0.0, tritium::div(tritium::mul(scale, gk), tritium::pow(nk, p - 1)));
}

void declare_vector_norm(OpRegistry& r) {
  OpDecl op = reduction_decl("linalg_vector_norm", "torch.linalg.vector_norm", Accepts::floating, ResultDType::same_as_input);
  op.forward = [](const Inputs& in, Attrs& a) {
    return Inputs{ops::vector_norm(in[0], a.get<double>("ord"), a.get<Dims>("dims"), a.get<bool>("keepdim"))};
  };
  op.autocast = AutocastClass::fp32;
  op.derivatives = {{.input = "self", .saves = {"self", "result"}, .text = "norm_backward(grad, self, ord, result, dim, keepdim)",
                     .formula = norm_backward}};
  op.gradcheck_samples = [](Device d) {
    auto attrs = [](double p, Dims dims, bool k) { return [=] { return Attrs{{"ord", p}, {"dims", dims}, {"keepdim", k}}; }; };
    const double inf = std::numeric_limits<double>::infinity();
    return std::vector<GradcheckSample>{
        {"ord 2 all", {sample_uniform({3, 4}, d, 331)}, attrs(2, {}, false)},
        {"ord 1 dim 1", {sample_away_from_zero({3, 4}, d, 332)}, attrs(1, {1}, false)},
        {"ord 3 dim 0 keepdim", {sample_away_from_zero({3, 4}, d, 333)}, attrs(3, {0}, true)},
        {"ord 0.5 dim 1", {sample_away_from_zero({3, 4}, d, 334)}, attrs(0.5, {1}, false)},
        {"ord -1 dim 1", {sample_away_from_zero({3, 4}, d, 335)}, attrs(-1, {1}, false)},
        {"ord inf dim 1", {sample_uniform({3, 4}, d, 336)}, attrs(inf, {1}, false)},
        {"ord -inf all", {sample_away_from_zero({3, 4}, d, 337)}, attrs(-inf, {}, false)},
    };
  };
  r.add(std::move(op));
}

// An op returning (values, indices) whose values' gradient goes back to the indices along "dim".
OpDecl selection_decl(std::string name, std::string torch_name, Inputs (*fw)(const Tensor&, Attrs&),
                      bool reduces, std::function<std::vector<GradcheckSample>(Device)> samples) {
  OpDecl op = reduction_decl(std::move(name), std::move(torch_name), Accepts::any, ResultDType::same_as_input);
  op.outputs = {"values", "indices"};
  op.forward = [fw](const Inputs& in, Attrs& a) { return fw(in[0], a); };
  op.derivatives = {{.input = "self", .saves = {"indices"}, .text = "value_selecting_reduction_backward(grad, dim, indices, self.sizes(), keepdim)",
                     .formula = [reduces](const Tensor& g, const Ctx& c) {
                       bool keepdim = reduces ? keepdim_of(c) : true;
                       return select_backward(g, c.saved("indices"), c.input_shape("self"), dim_of(c), keepdim);
                     }}};
  op.gradcheck_samples = std::move(samples);
  return op;
}

Inputs pair(const ValuesIndices& r) { return {r.values, r.indices}; }

std::vector<GradcheckSample> dim_samples(Device d, std::function<Attrs(int, bool)> attrs) {
  return {
      {"dim 1", {sample_uniform({3, 5}, d, 341)}, [=] { return attrs(1, false); }},
      {"dim 0 keepdim", {sample_uniform({4, 3}, d, 342)}, [=] { return attrs(0, true); }},
      {"strided dim -1", {runtime::t_of(sample_uniform({5, 3}, d, 343))}, [=] { return attrs(-1, false); }},
  };
}

void declare_selections(OpRegistry& r) {
  auto dk = [](int dm, bool k) { return Attrs{{"dim", dm}, {"keepdim", k}}; };
  r.add(selection_decl("max.dim", "torch.max", [](const Tensor& x, Attrs& a) {
    return pair(ops::max(x, a.get<int>("dim"), a.get<bool>("keepdim")));
  }, true, [=](Device d) { return dim_samples(d, dk); }));
  r.add(selection_decl("min.dim", "torch.min", [](const Tensor& x, Attrs& a) {
    return pair(ops::min(x, a.get<int>("dim"), a.get<bool>("keepdim")));
  }, true, [=](Device d) { return dim_samples(d, dk); }));
  r.add(selection_decl("median.dim", "torch.median", [](const Tensor& x, Attrs& a) {
    return pair(ops::median(x, a.get<int>("dim"), a.get<bool>("keepdim")));
  }, true, [=](Device d) { return dim_samples(d, dk); }));
  r.add(selection_decl("kthvalue", "torch.kthvalue", [](const Tensor& x, Attrs& a) {
    return pair(ops::kthvalue(x, a.get<int64_t>("k"), a.get<int>("dim"), a.get<bool>("keepdim")));
  }, true, [=](Device d) {
    return dim_samples(d, [](int dm, bool k) { return Attrs{{"k", int64_t(2)}, {"dim", dm}, {"keepdim", k}}; });
  }));
  for (bool is_max : {true, false}) {
    auto fw = is_max ? +[](const Tensor& x, Attrs& a) { return pair(ops::cummax(x, a.get<int>("dim"))); }
                     : +[](const Tensor& x, Attrs& a) { return pair(ops::cummin(x, a.get<int>("dim"))); };
    OpDecl cm = selection_decl(is_max ? "cummax" : "cummin", is_max ? "torch.cummax" : "torch.cummin", fw, false,
                               [](Device d) { return dim_samples(d, [](int dm, bool) { return Attrs{{"dim", dm}}; }); });
    // The indices' runs are contiguous: a reverse segmented sum, not PyTorch's scatter_add (whose
    // atomics all hit one element on a rising row).
    cm.derivatives = {{.input = "self", .saves = {"indices"}, .text = "cummaxmin_backward(grad, self, indices, dim) (a reverse segmented scan)",
                       .formula = [](const Tensor& g, const Ctx& c) { return ops::cummaxmin_backward(g, c.saved("indices"), dim_of(c)); }}};
    cm.twice_differentiable = false;  // a kernel of its own
    r.add(std::move(cm));
  }
  r.add(selection_decl("sort", "torch.sort", [](const Tensor& x, Attrs& a) {
    return pair(ops::sort(x, a.get<int>("dim"), a.get<bool>("descending")));
  }, false, [](Device d) { return dim_samples(d, [](int dm, bool k) { return Attrs{{"dim", dm}, {"descending", k}}; }); }));
  r.add(selection_decl("topk", "torch.topk", [](const Tensor& x, Attrs& a) {
    return pair(ops::topk(x, a.get<int64_t>("k"), a.get<int>("dim"), a.get<bool>("largest"), a.get<bool>("sorted")));
  }, false, [](Device d) {
    return dim_samples(d, [](int dm, bool k) { return Attrs{{"k", int64_t(2)}, {"dim", dm}, {"largest", !k}, {"sorted", true}}; });
  }));

  OpDecl med = reduction_decl("median", "torch.median", Accepts::any, ResultDType::same_as_input);
  med.forward = [](const Inputs& in, Attrs&) { return Inputs{ops::median(in[0])}; };
  med.derivatives = {{.input = "self", .saves = {"self", "result"}, .text = "evenly_distribute_backward(grad, self, result)",
                      .formula = [](const Tensor& g, const Ctx& c) { return evenly_distribute(g, c.saved("self"), c.saved("result")); }}};
  med.gradcheck_samples = [](Device d) {
    return std::vector<GradcheckSample>{{"odd", {sample_uniform({3, 5}, d, 351)}, [] { return Attrs{}; }},
                                        {"even", {sample_uniform({2, 3}, d, 352)}, [] { return Attrs{}; }}};
  };
  r.add(std::move(med));
}

void declare_scans(OpRegistry& r) {
  auto samples = [](Device d) {
    return std::vector<GradcheckSample>{
        {"dim 1", {sample_uniform({3, 5}, d, 361, 0.5, 1.5)}, [] { return Attrs{{"dim", 1}}; }},
        {"dim 0", {sample_uniform({4, 3}, d, 362, 0.5, 1.5)}, [] { return Attrs{{"dim", 0}}; }},
        {"strided dim -1", {runtime::t_of(sample_uniform({5, 3}, d, 363, 0.5, 1.5))}, [] { return Attrs{{"dim", -1}}; }},
    };
  };
  OpDecl cs = reduction_decl("cumsum", "torch.cumsum", Accepts::any, ResultDType::sum);
  cs.forward = [](const Inputs& in, Attrs& a) { return Inputs{ops::cumsum(in[0], a.get<int>("dim"))}; };
  cs.derivatives = {{.input = "self", .saves = {}, .text = "cumsum_backward(grad, dim) (a reversed cumsum)",
                     .formula = [](const Tensor& g, const Ctx& c) {
                       if (g.dim() == 0) return g;
                       int d = runtime::wrap_dim(dim_of(c), g.dim(), "cumsum");
                       return tritium::flip(tritium::cumsum(tritium::flip(g, {d}), d), {d});
                     }}};
  cs.gradcheck_samples = samples;
  cs.autocast = AutocastClass::fp32;  // PyTorch's fp32_set_opt_dtype list
  r.add(std::move(cs));

  OpDecl cp = reduction_decl("cumprod", "torch.cumprod", Accepts::any, ResultDType::sum);
  cp.forward = [](const Inputs& in, Attrs& a) { return Inputs{ops::cumprod(in[0], a.get<int>("dim"))}; };
  cp.derivatives = {{.input = "self", .saves = {"self"}, .text = "cumprod_backward(grad, self, dim) (zeros: a reverse affine scan)",
                     .formula = [](const Tensor& g, const Ctx& c) { return ops::cumprod_backward(g, c.saved("self"), dim_of(c)); }}};
  cp.twice_differentiable = false;  // a kernel of its own
  cp.gradcheck_samples = [samples](Device d) {
    auto s = samples(d);
    s.push_back({"zeros dim 1", {with_zeros({3, 5}, d, 364, {0, 6, 8, 14})}, [] { return Attrs{{"dim", 1}}; }});
    return s;
  };
  cp.autocast = AutocastClass::fp32;  // PyTorch's fp32_set_opt_dtype list
  r.add(std::move(cp));
}

}  // namespace

void declare_reductions_more(OpRegistry& r) {
  declare_var_std(r);
  declare_prod(r);
  declare_logsumexp(r);
  declare_vector_norm(r);
  declare_selections(r);
  declare_scans(r);
}

}  // namespace tritium::ops::decl
