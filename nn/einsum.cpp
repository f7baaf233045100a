// torch.einsum lowered to recorded tensor ops, so that its gradient flows through the lowering:
//   1. each operand: diagonals for a subscript repeated within it (a view), sums over subscripts
//      no other operand and not the output has, then a permute and size-1 dims (views) that align
//      it to one order of all subscripts (the output's first, then the contracted ones);
//   2. while more than one operand is left, the pair whose result is smallest (greedy, as
//      opt_einsum's "greedy"; ties: the leftmost pair; ops::einsum_contraction_path) is
//      contracted: dims both have and the
//      output keeps are batch dims, dims both have and nothing later needs are summed in a
//      batched matmul ([B, M, K] @ [B, K, N], the reshapes views where the strides allow), a
//      size-1 side of a summed dim is summed beforehand, and a pair with nothing to sum is a
//      broadcast multiply;
//   3. the result, aligned, is reshaped to the output (a view).
// Operands of one dtype and device (PyTorch's rule); the products need float dtypes (the matmul
// kernel's).
#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "nn/functional.h"
#include "ops/einsum_equation.h"

namespace tritium {
namespace {

using ops::EinsumEquation;
using ops::Shape;

// An operand aligned to the full subscript order: rank = the number of subscripts, each dim of the
// subscript's size or 1; `has` marks the subscripts whose dims it really holds (not yet summed).
struct Aligned {
  Tensor t;
  std::vector<bool> has;
};

int64_t product(const std::vector<int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), int64_t{1}, std::multiplies<>());
}

// What an aligned dim is in one contraction: held by both and kept (a batch dim of the product),
// held by one side only and kept, summed by the product, or of size 1 on both sides.
enum class Role { batch, left, right, summed, none };

// Contracts a and b over the aligned dims in `sum` (true: summed in this step).
Aligned contract(const Aligned& a_in, const Aligned& b_in, const std::vector<bool>& sum) {
  const int rank = a_in.t.dim();
  Tensor a = a_in.t, b = b_in.t;
  std::vector<Role> role(rank, Role::none);
  std::vector<int> sum_a, sum_b;
  for (int d = 0; d < rank; ++d) {
    const bool in_a = a.size(d) != 1, in_b = b.size(d) != 1;
    if (sum[d]) {
      if (in_a && in_b) role[d] = Role::summed;
      else if (in_a) sum_a.push_back(d);  // sum_i x_i y = y sum_i x_i: summed before the product
      else if (in_b) sum_b.push_back(d);
    } else {
      role[d] = in_a && in_b ? Role::batch : in_a ? Role::left : in_b ? Role::right : Role::none;
    }
  }
  if (!sum_a.empty()) a = tritium::sum(a, sum_a, true);
  if (!sum_b.empty()) b = tritium::sum(b, sum_b, true);
  Aligned out;
  out.has.resize(rank);
  for (int d = 0; d < rank; ++d) out.has[d] = (a_in.has[d] || b_in.has[d]) && !sum[d];
  if (std::find(role.begin(), role.end(), Role::summed) == role.end()) {  // nothing to contract
    out.t = tritium::mul(a, b);  // a broadcast multiply
    return out;
  }
  // The dims of each role in aligned order, then the rest (size 1 on that side).
  auto dims = [&](std::initializer_list<Role> roles) {
    std::vector<int> r;
    for (Role want : roles)
      for (int d = 0; d < rank; ++d)
        if (role[d] == want) r.push_back(d);
    return r;
  };
  auto sizes = [](const Tensor& t, const std::vector<int>& ds) {
    Shape s;
    for (int d : ds) s.push_back(t.size(d));
    return s;
  };
  const auto batch = dims({Role::batch}), left = dims({Role::left}), right = dims({Role::right}),
             summed = dims({Role::summed});
  const Shape bs = sizes(a, batch), ms = sizes(a, left), ns = sizes(b, right);
  const int64_t B = product(bs), M = product(ms), N = product(ns), K = product(sizes(a, summed));
  // [B, M, K] @ [B, K, N]: the reshapes are views when the strides allow (else copies).
  Tensor a3 = a.permute(dims({Role::batch, Role::left, Role::summed, Role::right, Role::none})).reshape({B, M, K});
  Tensor b3 = b.permute(dims({Role::batch, Role::summed, Role::right, Role::left, Role::none})).reshape({B, K, N});
  Tensor c = tritium::matmul(a3, b3);  // one launch over the batch
  // Back to the aligned order: viewed as [batch..., left..., right..., 1 for the rest], permuted.
  const std::vector<int> order = dims({Role::batch, Role::left, Role::right, Role::summed, Role::none});
  Shape shape = bs;
  shape.insert(shape.end(), ms.begin(), ms.end());
  shape.insert(shape.end(), ns.begin(), ns.end());
  shape.resize(rank, 1);
  std::vector<int> inverse(rank);
  for (int i = 0; i < rank; ++i) inverse[order[i]] = i;
  out.t = c.reshape(shape).permute(inverse);
  return out;
}

}  // namespace

Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands) {
  if (operands.empty()) fail("einsum(): must provide at least one operand (equation '{}')", equation);
  for (size_t i = 0; i < operands.size(); ++i) {
    if (!operands[i].defined()) fail("einsum(): operand {} is undefined", i);
    if (operands[i].dtype() != operands[0].dtype())
      fail("einsum(): expected all operands to have the same dtype, but operand 0 is {} and operand {} is {}",
           dtype_name(operands[0].dtype()), i, dtype_name(operands[i].dtype()));
    if (operands[i].device() != operands[0].device())
      fail("einsum(): expected all operands to be on the same device, but operand 0 is on {} and operand {} on {}",
           operands[0].device().str(), i, operands[i].device().str());
  }
  std::vector<Shape> shapes;
  for (const Tensor& t : operands) shapes.push_back(t.shape());
  const EinsumEquation eq = ops::parse_einsum(equation, shapes);

  // The aligned order: the output's subscripts, then every other used one.
  std::vector<int> order = eq.output;
  for (int l = 0; l < eq.num_labels(); ++l)
    if (eq.sizes[l] >= 0 && std::find(order.begin(), order.end(), l) == order.end()) order.push_back(l);
  const int rank = static_cast<int>(order.size());
  std::vector<int> position(eq.num_labels(), -1);
  for (int p = 0; p < rank; ++p) position[order[p]] = p;
  std::vector<bool> in_output(rank, false);
  for (int l : eq.output) in_output[position[l]] = true;
  std::vector<int> holders(rank, 0);  // operands holding each aligned dim
  for (const auto& labels : eq.operands) {
    std::vector<bool> seen(rank, false);
    for (int l : labels) seen[position[l]] = true;
    for (int p = 0; p < rank; ++p) holders[p] += seen[p];
  }

  // 1. Each operand: diagonals, sums of its own subscripts, aligned.
  std::vector<Aligned> ops;
  for (size_t k = 0; k < operands.size(); ++k) {
    Tensor t = operands[k];
    std::vector<int> labels = eq.operands[k];
    for (bool found = true; found;) {  // a repeated subscript: its diagonal (moved to the end)
      found = false;
      for (size_t d1 = 0; d1 < labels.size() && !found; ++d1)
        for (size_t d2 = d1 + 1; d2 < labels.size() && !found; ++d2)
          if (labels[d1] == labels[d2]) {
            t = tritium::diagonal(t, 0, static_cast<int>(d1), static_cast<int>(d2));
            const int l = labels[d1];
            labels.erase(labels.begin() + d2);
            labels.erase(labels.begin() + d1);
            labels.push_back(l);
            found = true;
          }
    }
    std::vector<int> own;  // held by this operand only and not in the output: summed now
    for (size_t d = 0; d < labels.size(); ++d) {
      const int p = position[labels[d]];
      if (holders[p] == 1 && !in_output[p]) own.push_back(static_cast<int>(d));
    }
    if (!own.empty()) {
      t = tritium::sum(t, own, false);
      for (size_t i = own.size(); i-- > 0;) labels.erase(labels.begin() + own[i]);
    }
    // Permute into the aligned order, then a size-1 dim for each subscript it does not hold.
    std::vector<int> perm(labels.size());
    std::iota(perm.begin(), perm.end(), 0);
    std::sort(perm.begin(), perm.end(), [&](int x, int y) { return position[labels[x]] < position[labels[y]]; });
    if (!std::is_sorted(perm.begin(), perm.end())) t = t.permute(perm);
    Aligned a;
    a.has.assign(rank, false);
    for (int l : labels) a.has[position[l]] = true;
    Shape aligned_shape(rank, 1);
    for (int p = 0; p < rank; ++p)
      if (a.has[p]) aligned_shape[p] = t.size(static_cast<int>(std::count(a.has.begin(), a.has.begin() + p, true)));
    a.t = t.dim() == rank ? t : t.reshape(aligned_shape);  // inserting size-1 dims: a view
    ops.push_back(std::move(a));
  }

  // 2. Contract pairs in the greedy order (ops::einsum_contraction_path).
  for (const ops::EinsumStep& step : ops::einsum_contraction_path(eq)) {
    std::vector<bool> summed(rank, false);
    for (int l = 0; l < eq.num_labels(); ++l)
      if (step.summed[l]) summed[position[l]] = true;
    Aligned c = contract(ops[step.first], ops[step.second], summed);
    ops.erase(ops.begin() + step.second);
    ops[step.first] = std::move(c);
  }

  // 3. The output: the aligned dims past it have size 1 now.
  Shape out_shape;
  for (int l : eq.output) out_shape.push_back(ops[0].t.size(position[l]));
  Tensor r = ops[0].t;
  return r.dim() == static_cast<int>(out_shape.size()) ? r : r.reshape(out_shape);
}

}  // namespace tritium
