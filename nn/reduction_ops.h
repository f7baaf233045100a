// The differentiable reductions, scans and selections of issue 29 item 4 (what a PyTorch user
// writes), each one call of the generic dispatch on its declaration (ops/decl/reductions_more.cpp);
// the integer- and bool-valued ones (all, any, count_nonzero, argsort, unique) are the raw ops.
// Ops returning (values, indices) give ops::ValuesIndices; only the values carry history.
// Included by nn/tensor_ops.h (so nn/functional.h has them).
#pragma once
#include <utility>
#include <vector>

#include "ops/sort.h"

namespace tritium {

using runtime::Tensor;

Tensor var(const Tensor& x, std::vector<int> dims = {}, double correction = 1, bool keepdim = false);
Tensor std(const Tensor& x, std::vector<int> dims = {}, double correction = 1, bool keepdim = false);
// (var, mean) and (std, mean), both differentiable (two recorded calls).
std::pair<Tensor, Tensor> var_mean(const Tensor& x, std::vector<int> dims = {}, double correction = 1, bool keepdim = false);
std::pair<Tensor, Tensor> std_mean(const Tensor& x, std::vector<int> dims = {}, double correction = 1, bool keepdim = false);
Tensor prod(const Tensor& x);
Tensor prod(const Tensor& x, int dim, bool keepdim = false);
Tensor logsumexp(const Tensor& x, std::vector<int> dims, bool keepdim = false);
Tensor vector_norm(const Tensor& x, double ord = 2, std::vector<int> dims = {}, bool keepdim = false);
// torch.norm with a numeric p: the vector norm over dims (all when empty).
Tensor norm(const Tensor& x, double p = 2, std::vector<int> dims = {}, bool keepdim = false);
ops::ValuesIndices max(const Tensor& x, int dim, bool keepdim = false);
ops::ValuesIndices min(const Tensor& x, int dim, bool keepdim = false);
Tensor max(const Tensor& x);  // amax over all elements (an error when empty, as torch.max)
Tensor min(const Tensor& x);
Tensor cumsum(const Tensor& x, int dim);
Tensor cumprod(const Tensor& x, int dim);
ops::ValuesIndices cummax(const Tensor& x, int dim);
ops::ValuesIndices cummin(const Tensor& x, int dim);
ops::ValuesIndices sort(const Tensor& x, int dim = -1, bool descending = false);
ops::ValuesIndices topk(const Tensor& x, int64_t k, int dim = -1, bool largest = true, bool sorted = true);
ops::ValuesIndices kthvalue(const Tensor& x, int64_t k, int dim = -1, bool keepdim = false);
ops::ValuesIndices median(const Tensor& x, int dim, bool keepdim = false);
Tensor median(const Tensor& x);
using ops::all;
using ops::any;
using ops::argsort;
using ops::count_nonzero;
using ops::unique;
using ops::unique_consecutive;

}  // namespace tritium
