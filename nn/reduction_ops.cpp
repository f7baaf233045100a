// The differentiable reductions, scans and selections (nn/reduction_ops.h): one dispatch call each.
#include "nn/reduction_ops.h"

#include "nn/dispatch.h"
#include "nn/functional.h"

namespace tritium {
namespace {

using ops::Attrs;
using Dims = std::vector<int>;

Attrs var_attrs(Dims dims, double correction, bool keepdim) {
  return Attrs{{"dims", std::move(dims)}, {"correction", correction}, {"keepdim", keepdim}};
}

ops::ValuesIndices pair_call(std::string_view name, const Tensor& x, Attrs attrs) {
  std::vector<Tensor> r = nn::call(ops::op_decl(name), {x}, std::move(attrs));
  return {r.at(0), r.at(1)};
}

}  // namespace

Tensor var(const Tensor& x, Dims dims, double correction, bool keepdim) {
  return nn::call("var", {x}, var_attrs(std::move(dims), correction, keepdim));
}
Tensor std(const Tensor& x, Dims dims, double correction, bool keepdim) {
  return nn::call("std", {x}, var_attrs(std::move(dims), correction, keepdim));
}
std::pair<Tensor, Tensor> var_mean(const Tensor& x, Dims dims, double correction, bool keepdim) {
  return {var(x, dims, correction, keepdim), mean(x, dims, keepdim)};
}
std::pair<Tensor, Tensor> std_mean(const Tensor& x, Dims dims, double correction, bool keepdim) {
  return {std(x, dims, correction, keepdim), mean(x, dims, keepdim)};
}
Tensor prod(const Tensor& x) { return nn::call("prod", {x}); }
Tensor prod(const Tensor& x, int dim, bool keepdim) {
  return nn::call("prod.dim_int", {x}, Attrs{{"dim", dim}, {"keepdim", keepdim}});
}
Tensor logsumexp(const Tensor& x, Dims dims, bool keepdim) {
  return nn::call("logsumexp", {x}, Attrs{{"dims", std::move(dims)}, {"keepdim", keepdim}});
}
Tensor vector_norm(const Tensor& x, double ord, Dims dims, bool keepdim) {
  return nn::call("linalg_vector_norm", {x}, Attrs{{"ord", ord}, {"dims", std::move(dims)}, {"keepdim", keepdim}});
}
Tensor norm(const Tensor& x, double p, Dims dims, bool keepdim) { return vector_norm(x, p, std::move(dims), keepdim); }
ops::ValuesIndices max(const Tensor& x, int dim, bool keepdim) {
  return pair_call("max.dim", x, Attrs{{"dim", dim}, {"keepdim", keepdim}});
}
ops::ValuesIndices min(const Tensor& x, int dim, bool keepdim) {
  return pair_call("min.dim", x, Attrs{{"dim", dim}, {"keepdim", keepdim}});
}
Tensor max(const Tensor& x) {
  if (x.numel() == 0) (void)ops::max(x);  // torch.max's error
  return amax(x);
}
Tensor min(const Tensor& x) {
  if (x.numel() == 0) (void)ops::min(x);  // torch.min's error
  return amin(x);
}
Tensor cumsum(const Tensor& x, int dim) { return nn::call("cumsum", {x}, Attrs{{"dim", dim}}); }
Tensor cumprod(const Tensor& x, int dim) { return nn::call("cumprod", {x}, Attrs{{"dim", dim}}); }
ops::ValuesIndices cummax(const Tensor& x, int dim) { return pair_call("cummax", x, Attrs{{"dim", dim}}); }
ops::ValuesIndices cummin(const Tensor& x, int dim) { return pair_call("cummin", x, Attrs{{"dim", dim}}); }
ops::ValuesIndices sort(const Tensor& x, int dim, bool descending) {
  return pair_call("sort", x, Attrs{{"dim", dim}, {"descending", descending}});
}
ops::ValuesIndices topk(const Tensor& x, int64_t k, int dim, bool largest, bool sorted) {
  return pair_call("topk", x, Attrs{{"k", k}, {"dim", dim}, {"largest", largest}, {"sorted", sorted}});
}
ops::ValuesIndices kthvalue(const Tensor& x, int64_t k, int dim, bool keepdim) {
  return pair_call("kthvalue", x, Attrs{{"k", k}, {"dim", dim}, {"keepdim", keepdim}});
}
ops::ValuesIndices median(const Tensor& x, int dim, bool keepdim) {
  return pair_call("median.dim", x, Attrs{{"dim", dim}, {"keepdim", keepdim}});
}
Tensor median(const Tensor& x) { return nn::call("median", {x}); }

}  // namespace tritium
