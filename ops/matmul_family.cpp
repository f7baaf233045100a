// torch.mm / bmm / mv / dot / vdot and the add* forms (addmm, addmv, addr, baddbmm, addbmm) on the
// one matmul kernel (ops/matmul.cpp): each op checks its shapes with PyTorch's rules and messages,
// then hands the operands to ops::matmul as they are, strides and all (a transposed operand is a
// stride, a batch is one launch). The add* forms add the scaled input in the kernel's epilogue
// (ops::matmul_add; beta = 0: the input is not read, so its NaNs do not propagate, as PyTorch);
// addr, an outer product, is one broadcast addcmul. mv, addmv, dot and vdot are
// reductions (detail::matrix_vector, ops/reduce.cpp), addmv's beta * self in their epilogue.
#include "ops/matmul_family.h"

#include "ops/addcmul_scaled.h"
#include "ops/matmul_add.h"
#include "ops/reduce_kernels.h"
#include "ops/unary_math.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/views.h"

namespace tritium::ops {
namespace {

std::string shape_str(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

void check_defined(const char* op, const std::vector<Tensor>& inputs, const std::vector<const char*>& names) {
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].defined()) fail("{}: argument '{}' is undefined", op, names[i]);
}

void check_rank(const char* op, const Tensor& t, const char* name, int rank) {
  static const char* const kWhat[] = {"a scalar", "a vector (1-D)", "a matrix (2-D)", "a 3-D tensor"};
  if (t.dim() != rank)
    fail("{}: {} must be {}, got a {}-D tensor of shape {}", op, name, kWhat[rank], t.dim(), shape_str(t.shape()));
}

void check_devices(const char* op, const std::vector<Tensor>& inputs, const std::vector<const char*>& names) {
  for (size_t i = 1; i < inputs.size(); ++i)
    if (inputs[i].device() != inputs[0].device())
      fail("{}: expected all tensors to be on the same device, but found {} on {} and {} on {}", op, names[0],
           inputs[0].device().str(), names[i], inputs[i].device().str());
}

// `self` must broadcast to the product's shape (it is expanded, never the product).
void check_broadcasts_to(const char* op, const Tensor& self, const Shape& target) {
  const Shape& s = self.shape();
  bool ok = s.size() <= target.size();
  for (size_t i = 0; ok && i < s.size(); ++i) {
    int64_t d = s[s.size() - 1 - i], t = target[target.size() - 1 - i];
    ok = d == 1 || d == t;
  }
  if (!ok)
    fail("{}: the input of shape {} cannot be broadcast to the product's shape {}", op, shape_str(s),
         shape_str(target));
}

// A dot product or a matrix-vector product is a memory-bound reduction, not a tile product: the
// matmul kernel would give a whole row (or all of K) to one program of a 16-wide tile, reading the
// matrix at a fraction of memory speed. detail::matrix_vector reads it once, at its own strides,
// with the reductions' cut into programs (docs/ops.md "Reductions").
Tensor dot_product(const Tensor& a, const Tensor& b) { return detail::matrix_vector(a, b, Tensor(), 0, 1); }

}  // namespace

void check_matmul_family_dtypes(const char* op, const std::vector<Tensor>& inputs,
                                const std::vector<const char*>& names) {
  check_defined(op, inputs, names);
  for (size_t i = 1; i < inputs.size(); ++i)
    if (inputs[i].dtype() != inputs[0].dtype())
      fail("{}: expected {} and {} to have the same dtype, but got: {} != {}", op, names[0], names[i],
           dtype_name(inputs[0].dtype()), dtype_name(inputs[i].dtype()));
  if (!is_float(inputs[0].dtype()) || is_fp8(inputs[0].dtype()))
    fail("{}: expects floating-point tensors (f16, bf16, f32 or f64), got {} (integer products are not "
         "implemented: convert with to_dtype)",
         op, dtype_name(inputs[0].dtype()));
  check_devices(op, inputs, names);
}

Tensor mm(const Tensor& self, const Tensor& mat2) {
  check_matmul_family_dtypes("mm", {self, mat2}, {"self", "mat2"});
  check_rank("mm", self, "self", 2);
  check_rank("mm", mat2, "mat2", 2);
  if (self.size(1) != mat2.size(0))
    fail("mm: mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})", self.size(0), self.size(1), mat2.size(0),
         mat2.size(1));
  return matmul(self, mat2);
}

Tensor bmm(const Tensor& self, const Tensor& mat2) {
  check_matmul_family_dtypes("bmm", {self, mat2}, {"batch1", "batch2"});
  check_rank("bmm", self, "batch1", 3);
  check_rank("bmm", mat2, "batch2", 3);
  if (mat2.size(0) != self.size(0) || mat2.size(1) != self.size(2))
    fail("bmm: expected size for first two dimensions of batch2 tensor to be: [{}, {}] but got: [{}, {}] (shapes {} "
         "and {})",
         self.size(0), self.size(2), mat2.size(0), mat2.size(1), shape_str(self.shape()), shape_str(mat2.shape()));
  return matmul(self, mat2);
}

Tensor mv(const Tensor& self, const Tensor& vec) {
  check_matmul_family_dtypes("mv", {self, vec}, {"self", "vec"});
  check_rank("mv", self, "self", 2);
  check_rank("mv", vec, "vec", 1);
  if (self.size(1) != vec.size(0))
    fail("mv: size mismatch, got input ({}), mat ({}x{}), vec ({})", self.size(0), self.size(0), self.size(1),
         vec.size(0));
  return detail::matrix_vector(self, vec, Tensor(), 0, 1);
}

Tensor dot(const Tensor& self, const Tensor& tensor) {
  check_matmul_family_dtypes("dot", {self, tensor}, {"self", "tensor"});
  check_rank("dot", self, "self", 1);
  check_rank("dot", tensor, "tensor", 1);
  if (self.size(0) != tensor.size(0))
    fail("dot: inconsistent tensor size, expected tensor [{}] and src [{}] to have the same number of elements, but "
         "got {} and {} elements respectively",
         self.size(0), tensor.size(0), self.size(0), tensor.size(0));
  return dot_product(self, tensor);
}

Tensor vdot(const Tensor& self, const Tensor& other) {
  check_matmul_family_dtypes("vdot", {self, other}, {"self", "other"});
  check_rank("vdot", self, "self", 1);
  check_rank("vdot", other, "other", 1);
  if (self.size(0) != other.size(0))
    fail("vdot: inconsistent tensor size, expected tensor [{}] and src [{}] to have the same number of elements, but "
         "got {} and {} elements respectively",
         self.size(0), other.size(0), self.size(0), other.size(0));
  return dot_product(self, other);  // real dtypes only: conj(self) is self
}

Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, double beta, double alpha) {
  check_matmul_family_dtypes("addmm", {self, mat1, mat2}, {"self", "mat1", "mat2"});
  check_rank("addmm", mat1, "mat1", 2);
  check_rank("addmm", mat2, "mat2", 2);
  if (mat1.size(1) != mat2.size(0))
    fail("addmm: mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})", mat1.size(0), mat1.size(1),
         mat2.size(0), mat2.size(1));
  check_broadcasts_to("addmm", self, {mat1.size(0), mat2.size(1)});
  return matmul_add(self, mat1, mat2, beta, alpha);
}

Tensor addmv(const Tensor& self, const Tensor& mat, const Tensor& vec, double beta, double alpha) {
  check_matmul_family_dtypes("addmv", {self, mat, vec}, {"self", "mat", "vec"});
  check_rank("addmv", mat, "mat", 2);
  check_rank("addmv", vec, "vec", 1);
  if (mat.size(1) != vec.size(0))
    fail("addmv: size mismatch, got input ({}), mat ({}x{}), vec ({})", mat.size(0), mat.size(0), mat.size(1),
         vec.size(0));
  check_broadcasts_to("addmv", self, {mat.size(0)});
  return detail::matrix_vector(mat, vec, self, beta, alpha);
}

Tensor addr(const Tensor& self, const Tensor& vec1, const Tensor& vec2, double beta, double alpha) {
  check_matmul_family_dtypes("addr", {self, vec1, vec2}, {"self", "vec1", "vec2"});
  check_rank("addr", vec1, "vec1", 1);
  check_rank("addr", vec2, "vec2", 1);
  check_broadcasts_to("addr", self, {vec1.size(0), vec2.size(0)});
  // The outer product is a broadcast multiply (no reduction: the matmul kernel would only add a
  // K of 1), fused with the epilogue in one elementwise pass: addcmul's self + alpha * u * v
  // (PyTorch's addr kernel: beta * self + alpha * vec1 * vec2). beta = 0: self is not read, so
  // its NaNs do not propagate; beta != 1 scales self in the same pass (a separate mul of a full
  // self doubled the traffic: f32 addr ran 0.63 x PyTorch, issue 29).
  Tensor u = runtime::unsqueeze_of(vec1, 1), v = runtime::unsqueeze_of(vec2, 0);
  if (beta == 0) return mul(alpha == 1 ? u : mul(u, Scalar(alpha)), v);
  if (beta == 1) return addcmul(self, u, v, Scalar(alpha));
  return addcmul_scaled(self, Scalar(beta), u, v, Scalar(alpha));
}

Tensor baddbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2, double beta, double alpha) {
  check_matmul_family_dtypes("baddbmm", {self, batch1, batch2}, {"self", "batch1", "batch2"});
  check_rank("baddbmm", batch1, "batch1", 3);
  check_rank("baddbmm", batch2, "batch2", 3);
  if (batch2.size(0) != batch1.size(0) || batch2.size(1) != batch1.size(2))
    fail("baddbmm: expected size for first two dimensions of batch2 tensor to be: [{}, {}] but got: [{}, {}] "
         "(shapes {} and {})",
         batch1.size(0), batch1.size(2), batch2.size(0), batch2.size(1), shape_str(batch1.shape()),
         shape_str(batch2.shape()));
  check_broadcasts_to("baddbmm", self, {batch1.size(0), batch1.size(1), batch2.size(2)});
  return matmul_add(self, batch1, batch2, beta, alpha);
}

Tensor addbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2, double beta, double alpha) {
  check_matmul_family_dtypes("addbmm", {self, batch1, batch2}, {"self", "batch1", "batch2"});
  check_rank("addbmm", batch1, "batch1", 3);
  check_rank("addbmm", batch2, "batch2", 3);
  if (batch2.size(0) != batch1.size(0) || batch2.size(1) != batch1.size(2))
    fail("addbmm: expected size for first two dimensions of batch2 tensor to be: [{}, {}] but got: [{}, {}] "
         "(shapes {} and {})",
         batch1.size(0), batch1.size(2), batch2.size(0), batch2.size(1), shape_str(batch1.shape()),
         shape_str(batch2.shape()));
  const int64_t B = batch1.size(0), n = batch1.size(1), k = batch1.size(2), m = batch2.size(2);
  check_broadcasts_to("addbmm", self, {n, m});
  // sum_b A[b] @ B[b] = A' @ B' with A' = [n, (b, k)] and B' = [(b, k), m]: one product whose K
  // runs over the batch. B' is a view when batch2 is contiguous; A' is a copy unless B == 1 (a
  // permuted view does not flatten).
  auto flat = [](const Tensor& x, const Shape& s) {
    return runtime::can_view(x, s) ? runtime::view_of(x, s) : runtime::view_of(contiguous(x), s);
  };
  Tensor a = flat(runtime::permute_of(batch1, {1, 0, 2}), {n, B * k});
  Tensor b = flat(batch2, {B * k, m});
  return matmul_add(self, a, b, beta, alpha);
}

}  // namespace tritium::ops
