// The differentiable matmul family (nn/matmul_family.h): the declared ops are one dispatch call
// each; inner, outer, tensordot, kron and linalg_multi_dot are compositions of recorded ops (as
// in PyTorch, where they are CompositeImplicitAutograd), einsum is nn/einsum.cpp.
#include "nn/matmul_family.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "nn/dispatch.h"
#include "nn/functional.h"
#include "ops/einsum_equation.h"
#include "runtime/views.h"

namespace tritium {
namespace {

using ops::Attrs;
using ops::Shape;

Attrs scales(double beta, double alpha) { return Attrs{{"beta", beta}, {"alpha", alpha}}; }
std::string shape_str(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

}  // namespace

Tensor mm(const Tensor& self, const Tensor& mat2) { return nn::call("mm", {self, mat2}); }
Tensor bmm(const Tensor& self, const Tensor& mat2) { return nn::call("bmm", {self, mat2}); }
Tensor mv(const Tensor& self, const Tensor& vec) { return nn::call("mv", {self, vec}); }
Tensor dot(const Tensor& self, const Tensor& tensor) { return nn::call("dot", {self, tensor}); }
Tensor vdot(const Tensor& self, const Tensor& other) { return nn::call("vdot", {self, other}); }
Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, double beta, double alpha) {
  return nn::call("addmm", {self, mat1, mat2}, scales(beta, alpha));
}
Tensor addmv(const Tensor& self, const Tensor& mat, const Tensor& vec, double beta, double alpha) {
  return nn::call("addmv", {self, mat, vec}, scales(beta, alpha));
}
Tensor addr(const Tensor& self, const Tensor& vec1, const Tensor& vec2, double beta, double alpha) {
  return nn::call("addr", {self, vec1, vec2}, scales(beta, alpha));
}
Tensor baddbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2, double beta, double alpha) {
  return nn::call("baddbmm", {self, batch1, batch2}, scales(beta, alpha));
}
Tensor addbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2, double beta, double alpha) {
  return nn::call("addbmm", {self, batch1, batch2}, scales(beta, alpha));
}

Tensor outer(const Tensor& self, const Tensor& vec2) {
  if (!self.defined() || !vec2.defined()) fail("outer: an argument is undefined");
  if (self.dim() != 1) fail("outer: Expected 1-D argument self, but got {}-D", self.dim());
  if (vec2.dim() != 1) fail("outer: Expected 1-D argument vec2, but got {}-D", vec2.dim());
  return tritium::mul(self.unsqueeze(1), vec2);  // [n, 1] * [m]: no reduction, so no matmul
}
Tensor ger(const Tensor& self, const Tensor& vec2) { return outer(self, vec2); }

Tensor inner(const Tensor& self, const Tensor& other) {
  if (!self.defined() || !other.defined()) fail("inner: an argument is undefined");
  if (self.dim() == 0 || other.dim() == 0) return tritium::mul(self, other);
  if (self.size(-1) != other.size(-1))
    fail("inner() the last dimension must match on both input tensors but got shapes {} and {}",
         shape_str(self.shape()), shape_str(other.shape()));
  return tensordot(self, other, {-1}, {-1});
}

Tensor tensordot(const Tensor& a, const Tensor& b, int64_t dims) {
  if (!a.defined() || !b.defined()) fail("tensordot: an argument is undefined");
  if (dims < 0) fail("tensordot expects dims >= 0, but got dims={}", dims);
  if (dims > a.dim() || dims > b.dim()) fail("tensordot expects dims < ndim_a or ndim_b, but got dims={}", dims);
  std::vector<int> da, db;
  for (int i = 0; i < dims; ++i) da.push_back(a.dim() - static_cast<int>(dims) + i), db.push_back(i);
  return tensordot(a, b, da, db);
}

Tensor tensordot(const Tensor& a, const Tensor& b, const std::vector<int>& dims_a, const std::vector<int>& dims_b) {
  if (!a.defined() || !b.defined()) fail("tensordot: an argument is undefined");
  if (dims_a.size() != dims_b.size())
    fail("tensordot: both dimension lists should have same length (got [{}] and [{}])", fmt::join(dims_a, ", "),
         fmt::join(dims_b, ", "));
  if (a.dtype() != b.dtype())
    fail("tensordot: both inputs should have same dtype, got {} and {}", dtype_name(a.dtype()), dtype_name(b.dtype()));
  if (a.dim() + b.dim() - static_cast<int>(dims_a.size()) > ops::EinsumEquation::kLetters)
    fail("tensordot: at most {} free and contracted dims in all, got {} and {} dims with {} contracted",
         ops::EinsumEquation::kLetters, a.dim(), b.dim(), dims_a.size());
  // The equation: a's dims get letters; each contracted dim of b takes its partner's.
  auto letter = [](int i) { return static_cast<char>(i < 26 ? 'a' + i : 'A' + (i - 26)); };
  std::string sa, sb, out;
  for (int i = 0; i < a.dim(); ++i) sa += letter(i);
  int next = a.dim();
  sb.assign(b.dim(), ' ');
  std::vector<bool> contracted_a(a.dim(), false), contracted_b(b.dim(), false);
  for (size_t i = 0; i < dims_a.size(); ++i) {
    const int da = runtime::wrap_dim(dims_a[i], a.dim(), "tensordot");
    const int db = runtime::wrap_dim(dims_b[i], b.dim(), "tensordot");
    if (contracted_a[da]) fail("tensordot: dim {} appears multiple times in the list of dims", da);
    if (contracted_b[db]) fail("tensordot: dim {} appears multiple times in the list of dims", db);
    contracted_a[da] = contracted_b[db] = true;
    if (a.size(da) != b.size(db) && a.size(da) != 1 && b.size(db) != 1)
      fail("tensordot: contracted dimensions need to match, but first has size {} in dim {} and second has size {} in "
           "dim {} (shapes {} and {})",
           a.size(da), dims_a[i], b.size(db), dims_b[i], shape_str(a.shape()), shape_str(b.shape()));
    sb[db] = sa[da];
  }
  for (int i = 0; i < a.dim(); ++i)
    if (!contracted_a[i]) out += sa[i];
  for (int i = 0; i < b.dim(); ++i)
    if (!contracted_b[i]) sb[i] = letter(next++), out += sb[i];
  return einsum(sa + "," + sb + "->" + out, {a, b});
}

Tensor kron(const Tensor& self, const Tensor& other) {
  if (!self.defined() || !other.defined()) fail("kron: an argument is undefined");
  // result[(i0, j0), (i1, j1), ...] = a[i0, i1, ...] * b[j0, j1, ...]: a seen as [a0, 1, a1, 1, ...]
  // times b as [1, b0, 1, b1, ...] (views), one broadcast multiply, merged pairwise (a view).
  const int r = std::max(self.dim(), other.dim());
  Shape sa(r - self.dim(), 1), sb(r - other.dim(), 1);
  sa.insert(sa.end(), self.shape().begin(), self.shape().end());
  sb.insert(sb.end(), other.shape().begin(), other.shape().end());
  Shape ia, ib, out;
  for (int d = 0; d < r; ++d) {
    ia.insert(ia.end(), {sa[d], 1});
    ib.insert(ib.end(), {1, sb[d]});
    out.push_back(sa[d] * sb[d]);
  }
  return tritium::mul(self.reshape(ia), other.reshape(ib)).reshape(out);
}

Tensor linalg_multi_dot(const std::vector<Tensor>& tensors) {
  const size_t n = tensors.size();
  if (n < 2) fail("multi_dot(): expected at least 2 tensors but got {}", n);
  for (size_t i = 0; i < n; ++i) {
    const Tensor& t = tensors[i];
    if (!t.defined()) fail("multi_dot(): tensor {} is undefined", i);
    const bool end = i == 0 || i == n - 1;
    if (end && t.dim() != 1 && t.dim() != 2)
      fail("multi_dot(): the {} tensor must be 1D or 2D but got {}D", i == 0 ? "first" : "last", t.dim());
    if (!end && t.dim() != 2) fail("multi_dot(): tensor {} must be 2D but got {}D", i, t.dim());
    if (t.dtype() != tensors[0].dtype())
      fail("multi_dot(): all tensors must have be the same dtype but tensor 0 is {} and tensor {} {}",
           dtype_name(tensors[0].dtype()), i, dtype_name(t.dtype()));
    if (t.device() != tensors[0].device())
      fail("multi_dot(): all tensors must be on the same device but tensor 0 is on {} and tensor {} on {}",
           tensors[0].device().str(), i, t.device().str());
  }
  // A 1-D first tensor is a row [1, k], a 1-D last one a column [k, 1]; removed at the end.
  std::vector<Tensor> m(tensors);
  if (m[0].dim() == 1) m[0] = m[0].unsqueeze(0);
  if (m[n - 1].dim() == 1) m[n - 1] = m[n - 1].unsqueeze(1);
  for (size_t i = 0; i + 1 < n; ++i)
    if (m[i].size(1) != m[i + 1].size(0))
      fail("multi_dot(): tensors {} and {} with shapes {} and {} cannot be multiplied", i, i + 1,
           shape_str(tensors[i].shape()), shape_str(tensors[i + 1].shape()));
  // The matrix-chain recurrence: cost[i][j] = min over s of cost[i][s] + cost[s+1][j] +
  // p[i] p[s+1] p[j+1] (p the chain's dims), split[i][j] the best s.
  std::vector<int64_t> p(n + 1);
  for (size_t i = 0; i < n; ++i) p[i] = m[i].size(0);
  p[n] = m[n - 1].size(1);
  std::vector<std::vector<int64_t>> cost(n, std::vector<int64_t>(n, 0));
  std::vector<std::vector<size_t>> split(n, std::vector<size_t>(n, 0));
  for (size_t len = 2; len <= n; ++len)
    for (size_t i = 0; i + len <= n; ++i) {
      const size_t j = i + len - 1;
      cost[i][j] = std::numeric_limits<int64_t>::max();
      for (size_t s = i; s < j; ++s) {
        const int64_t c = cost[i][s] + cost[s + 1][j] + p[i] * p[s + 1] * p[j + 1];
        if (c < cost[i][j]) cost[i][j] = c, split[i][j] = s;
      }
    }
  auto chain = [&](auto&& self_fn, size_t i, size_t j) -> Tensor {
    if (i == j) return m[i];
    const size_t s = split[i][j];
    return tritium::mm(self_fn(self_fn, i, s), self_fn(self_fn, s + 1, j));
  };
  Tensor r = chain(chain, 0, n - 1);
  if (tensors[0].dim() == 1 && tensors[n - 1].dim() == 1) return r.reshape({});
  if (tensors[0].dim() == 1) return r.squeeze(0);
  if (tensors[n - 1].dim() == 1) return r.squeeze(1);
  return r;
}

}  // namespace tritium
