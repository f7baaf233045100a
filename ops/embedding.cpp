// embedding and its backward (ops/embedding.h).
//
// Both kernels work on [BT tokens, BD features] tiles, a 2-D grid of token blocks by feature
// blocks. Forward: each token's index is loaded once per tile, checked against [0, num), and its
// row read through the weight's strides; the lowest position of an index out of range is reported
// through a runtime::DeviceCheck (as cross_entropy's label check: at the launch on the CPU, at the
// next host read or sync on CUDA). Backward: each tile adds its gradient rows into the rows its indices name with atomic
// adds (the index of padding_idx is skipped), in the math type, then one conversion to the
// weight's dtype.
#include "ops/embedding.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "dsl/kernel.h"
#include "dsl/ops.h"
#include "ops/elementwise_kernels.h"
#include "runtime/device_checks.h"

namespace tritium::ops {

namespace tl = tritium::tl;

namespace {

using P = tl::ptr<tl::any>;
using detail::shape_str;

Kernel& embedding_kernel() {
  static Kernel k = tritium::kernel(
      "embedding",
      [](P w, P ind, P out, P bad, tl::i64 T, tl::i64 D, tl::i64 num, tl::i64 ws0, tl::i64 ws1, tl::i64 padding_idx,
         bool BACKWARD, int ACC, int BT, int BD) {
        auto t = tl::program_id(0).to(tl::int64) * BT + tl::arange(0, BT).to(tl::int64);
        auto d = tl::program_id(1).to(tl::int64) * BD + tl::arange(0, BD).to(tl::int64);
        auto tm = t < T;
        auto idx = tl::load(ind + t, tm, 0).to(tl::int64);
        auto valid = (idx >= 0) && (idx < num);
        auto mask = (tm && valid)(tl::_, tl::None) && (d < D)(tl::None, tl::_);
        auto row = idx(tl::_, tl::None), col = d(tl::None, tl::_);
        auto dense = t(tl::_, tl::None) * D + col;
        if (BACKWARD) {  // w: the gradient of the weight (contiguous, math type); out: the upstream gradient
          auto keep = mask && (row != padding_idx);
          auto g = tl::load(out + dense, keep, 0).to(static_cast<DType>(ACC));
          tl::atomic_add(w + row * D + col, g, keep, "relaxed");
          return;
        }
        tl::store(out + dense, tl::load(w + row * ws0 + col * ws1, mask, 0), (tm(tl::_, tl::None) && (d < D)(tl::None, tl::_)));
        // The first bad position p as the code T - p (a DeviceCheck's slot: 0 = none, the largest wins).
        auto code = tl::max(tl::where(tm && !valid, T - t, 0));
        tl::atomic_max(bad, code, code > 0, "relaxed");
      },
      {"w", "ind", "out", "bad", "T", "D", "num", "ws0", "ws1", "padding_idx", "BACKWARD", "ACC", "BT", "BD"});
  return k;
}

struct Tiles {
  int64_t bt, bd;
};

Tiles tiles(int64_t T, int64_t D) {
  int64_t bd = std::clamp<int64_t>(next_power_of_2(D), 16, 256);
  int64_t bt = std::clamp<int64_t>(2048 / bd, 1, std::max<int64_t>(1, next_power_of_2(T)));
  return {bt, bd};
}

void check_indices(const char* op, const Tensor& indices) {
  if (indices.dtype() != DType::i64 && indices.dtype() != DType::i32)
    fail("{}: Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but "
         "got {} instead (indices {})",
         op, dtype_name(indices.dtype()), indices.str());
}

int64_t element_as_i64(const Tensor& flat, int64_t i) {
  return to_dtype(flat.as_strided({1}, {1}, flat.storage_offset() + i), DType::i64).to_vector<int64_t>()[0];
}

}  // namespace

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  const char* op = "embedding";
  detail::check_tensors(op, {&weight, &indices});
  if (weight.dim() != 2) fail("{}: 'weight' must be 2-D [num_embeddings, embedding_dim], got {}", op, shape_str(weight.shape()));
  check_indices(op, indices);
  const int64_t num = weight.size(0), D = weight.size(1);
  Tensor ind = contiguous(indices);
  const int64_t T = ind.numel();
  Shape out_shape = indices.shape();
  out_shape.push_back(D);
  Tensor out = Tensor::empty(out_shape, weight.dtype(), weight.device());
  if (T == 0) return out;
  // Reported at the launch on the CPU, at the next host read or sync on CUDA (runtime/device_checks.h).
  runtime::DeviceCheck check(weight.device(), 1, [op = std::string(op), flat = ind.reshape({T}), T, num](const int64_t* code) {
    const int64_t first = T - code[0];
    return fmt::format("{}: index out of range in self: indices[{}] = {} is not in [0, {}) (num_embeddings = {})", op,
                       first, element_as_i64(flat, first), num, num);
  });
  Tiles tl_ = tiles(T, D);
  embedding_kernel()[{cdiv(T, tl_.bt), std::max<int64_t>(1, cdiv(D, tl_.bd))}](
      weight, ind, out, check.slots(), T, D, num, weight.stride(0), weight.stride(1), int64_t{-1}, false,
      static_cast<int>(detail::math_type(weight.dtype())), static_cast<int>(tl_.bt), static_cast<int>(tl_.bd));
  check.launched();
  return out;
}

Tensor embedding_backward(const Tensor& grad, const Tensor& indices, int64_t num_weights, int64_t padding_idx) {
  const char* op = "embedding_backward";
  detail::check_tensors(op, {&grad, &indices});
  check_indices(op, indices);
  if (grad.dim() != indices.dim() + 1 ||
      !std::equal(indices.shape().begin(), indices.shape().end(), grad.shape().begin()))
    fail("{}: grad shape {} is not indices shape {} plus a feature dim", op, shape_str(grad.shape()),
         shape_str(indices.shape()));
  if (!is_float(grad.dtype())) fail("{}: expected a floating-point grad, got {}", op, dtype_name(grad.dtype()));
  const int64_t D = grad.size(grad.dim() - 1);
  const DType acc = detail::math_type(grad.dtype());
  Tensor dw = zeros({num_weights, D}, acc, grad.device());
  Tensor ind = contiguous(indices), g = contiguous(grad);
  const int64_t T = ind.numel();
  if (T > 0 && D > 0) {
    Tiles tl_ = tiles(T, D);
    embedding_kernel()[{cdiv(T, tl_.bt), cdiv(D, tl_.bd)}](dw, ind, g, dw, T, D, num_weights, D, int64_t{1},
                                                           padding_idx, true, static_cast<int>(acc),
                                                           static_cast<int>(tl_.bt), static_cast<int>(tl_.bd));
  }
  return acc == grad.dtype() ? dw : to_dtype(dw, grad.dtype());
}

}  // namespace tritium::ops
