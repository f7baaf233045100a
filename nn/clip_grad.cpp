#include "nn/clip_grad.h"

#include <algorithm>
#include <cmath>

#include <tritium/tritium.h>

#include "nn/autograd.h"
#include "ops/ops.h"
#include "ops/shape.h"
#include "ops/unary_math.h"

namespace tritium::nn {

namespace {

// torch.linalg.vector_norm(x, ord) over all elements, with the op library's reduction kernels.
Tensor vector_norm(const Tensor& x, double ord) {
  if (std::isinf(ord)) return ord > 0 ? ops::amax(ops::abs(x)) : ops::amin(ops::abs(x));
  if (ord == 2) return ops::sqrt(ops::sum(ops::mul(x, x)));
  if (ord == 1) return ops::sum(ops::abs(x));
  return ops::pow(ops::sum(ops::pow(ops::abs(x), ord)), 1.0 / ord);
}

std::vector<Tensor> grads_of(const std::vector<Tensor>& params, const char* who) {
  std::vector<Tensor> grads;
  for (const Tensor& p : params) {
    if (!p.defined()) fail("{}: a parameter is an undefined tensor", who);
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (!grads.empty() && !(g.device() == grads[0].device()))
      fail("{}: gradients on {} and on {}; all must be on one device", who, grads[0].device().str(), g.device().str());
    grads.push_back(g);
  }
  return grads;
}

// ---- multi-tensor (PyTorch's foreach) norm and scale -------------------------------------------
// For the 2-norm (the default) of contiguous gradients of one floating dtype: one launch computes a
// partial sum of squares per table row (address, first, end: a row per kChunk
// elements of a gradient, as the optimisers' multi-tensor kernels), the op library reduces the
// partials, and one launch scales every gradient by min(max_norm / (total + 1e-6), 1), read from the
// device. A few launches in all instead of several per gradient.
namespace tl = tritium::tl;
constexpr int kRow = 3;
constexpr int64_t kChunk = 65536;
constexpr int kBlock = 1024;

struct RowView {
  tl::tensor ptr, count;
};
RowView read_row(const tl::tensor& table, DType dt) {
  auto row = table + tl::program_id(0) * kRow;
  auto first = tl::load(row + 1);
  return {tl::load(row).to(tl::pointer_type(dt)) + first, (tl::load(row + 2) - first).to(tl::int32)};
}

}  // namespace

namespace detail {

tritium::Kernel& foreach_partial_norm_kernel() {
  static tritium::Kernel k = tritium::kernel(
      "clip_grad_foreach_partial_norm",
      [](tl::ptr<int64_t> table, tl::ptr<float> partial, tl::constexpr_<DType> DT, int BLOCK) {
        RowView r = read_row(table, DT);
        auto acc = tl::zeros({BLOCK}, tl::float32);
        for (auto o : tl::range(0, r.count, BLOCK)) {
          auto offs = o + tl::arange(0, BLOCK);
          auto x = tl::load(r.ptr + offs, offs < r.count, 0.0f).to(tl::float32);
          acc = acc + x * x;
        }
        tl::store(partial + tl::program_id(0), tl::sum(acc, 0));
      },
      {"table", "partial", "DT", "BLOCK"});
  return k;
}

tritium::Kernel& foreach_clip_kernel() {
  static tritium::Kernel k = tritium::kernel(
      "clip_grad_foreach_scale",
      [](tl::ptr<int64_t> table, tl::ptr<float> total_ptr, tl::f32 max_norm, tl::constexpr_<DType> DT, int BLOCK) {
        RowView r = read_row(table, DT);
        auto coef = tl::minimum(max_norm / (tl::load(total_ptr) + 1e-6f), 1.0f);
        for (auto o : tl::range(0, r.count, BLOCK)) {
          auto offs = o + tl::arange(0, BLOCK);
          auto mask = offs < r.count;
          auto x = tl::load(r.ptr + offs, mask).to(tl::float32);
          tl::store(r.ptr + offs, (x * coef).to(r.ptr.element_ty()), mask);
        }
      },
      {"table", "total_ptr", "max_norm", "DT", "BLOCK"});
  return k;
}

}  // namespace detail

namespace {

using detail::foreach_clip_kernel;
using detail::foreach_partial_norm_kernel;

bool foreach_applies(const std::vector<Tensor>& grads, double norm_type) {
  if (norm_type != 2.0) return false;
  const DType dt = grads.front().dtype();
  if (dt != DType::f32 && dt != DType::f16 && dt != DType::bf16) return false;
  return std::all_of(grads.begin(), grads.end(), [&](const Tensor& g) { return g.dtype() == dt && g.is_contiguous(); });
}

Tensor make_table(const std::vector<Tensor>& grads) {
  std::vector<int64_t> rows;
  for (const Tensor& g : grads) {
    const int64_t n = g.numel(), address = reinterpret_cast<int64_t>(g.raw_data());
    for (int64_t first = 0; first < n; first += kChunk)
      rows.insert(rows.end(), {address, first, std::min(n, first + kChunk)});
  }
  return Tensor::from_vector(rows, {static_cast<int64_t>(rows.size())}, grads.front().device());
}

// Writes value into the gradient g (the tensor .grad refers to) and marks it changed.
void overwrite(Tensor& g, const Tensor& value) {
  ops::copy_(g, value);
  g.storage()->bump_version();
}

}  // namespace

Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type, bool error_if_nonfinite) {
  if (!(norm_type > 0) && !std::isinf(norm_type))
    fail("clip_grad_norm_: norm_type {} is not supported (a positive number or +-infinity)", norm_type);
  NoGradGuard no_grad;
  std::vector<Tensor> grads = grads_of(params, "clip_grad_norm_");
  if (grads.empty()) return Tensor::from_vector(std::vector<float>{0.0f}, {}, Device::cpu());
  const bool foreach = foreach_applies(grads, norm_type);
  Tensor table, total;
  if (foreach) {
    std::erase_if(grads, [](const Tensor& g) { return g.numel() == 0; });
    if (grads.empty()) return ops::zeros({}, DType::f32, params.front().grad().device());
    table = make_table(grads);
    const int64_t rows = table.numel() / kRow;
    Tensor partial = Tensor::empty({rows}, DType::f32, grads.front().device());
    foreach_partial_norm_kernel()[{rows}](table, partial, grads.front().dtype(), kBlock,
                                          tritium::Options{.device = grads.front().device()});
    total = ops::sqrt(ops::sum(partial));
  } else {
    std::vector<Tensor> norms;
    for (const Tensor& g : grads) norms.push_back(ops::reshape(vector_norm(g, norm_type), {1}));
    total = vector_norm(ops::cat(norms), norm_type);
  }
  if (error_if_nonfinite) {
    float t = total.to(Device::cpu()).to_vector<float>().at(0);
    if (!std::isfinite(t))
      fail("clip_grad_norm_: the total norm of order {} for gradients from `parameters` is non-finite ({}), so it "
           "cannot be clipped; to disable this error and scale the gradients by the non-finite norm anyway, pass "
           "error_if_nonfinite=false", norm_type, t);
  }
  if (foreach) {  // min(max_norm / (total + 1e-6), 1) is computed by the kernel from the device's total
    foreach_clip_kernel()[{table.numel() / kRow}](table, total, static_cast<float>(max_norm), grads.front().dtype(),
                                                  kBlock, tritium::Options{.device = total.device()});
    for (Tensor& g : grads) g.storage()->bump_version();
    return total;
  }
  // min(max_norm / (total + 1e-6), 1) stays on the device: no host round trip.
  Tensor max_norm_t = ops::full({}, max_norm, DType::f32, total.device());
  Tensor coef = ops::clamp(ops::div(max_norm_t, ops::add(total, 1e-6)), std::nullopt, 1.0);
  for (Tensor& g : grads) overwrite(g, ops::mul(g, coef));
  return total;
}

void clip_grad_value_(const std::vector<Tensor>& params, double clip_value) {
  NoGradGuard no_grad;
  for (Tensor& g : grads_of(params, "clip_grad_value_")) overwrite(g, ops::clamp(g, -clip_value, clip_value));
}

}  // namespace tritium::nn
