// cross_entropy: Liger-Kernel's cross-entropy loss (linkedin/Liger-Kernel
// src/liger_kernel/ops/cross_entropy.py, read at commit ead96b618e5c; BSD-2-Clause, as
// Liger-Kernel): liger_cross_entropy_kernel (one program a row: the target loaded first and a row
// whose target is ignore_index zeroes its gradient, its token accuracy and predicted token, and
// returns early; otherwise an online-softmax pass for max / sum (and the argmax, and the
// label-smoothing sum), a second pass writing the gradient over the logits in place, the
// true-class gradient recomputed once in f32 after a barrier, then the loss with class weights,
// label smoothing, z-loss and Gemma-style tanh softcapping), element_mul_kernel (utils.py: the
// in-place gradient times a scalar grad_output), and the wrappers cross_entropy_forward
// (BLOCK_SIZE = min(MAX_FUSED_SIZE = 32768, next_power_of_2(V)), the target checks, n_non_ignore
// and the weight sums, num_warps 32 except 8 for 16-bit inputs on Blackwell, the reductions) and
// cross_entropy_backward (grad_output 1: nothing; a vector for reduction none: a broadcast
// multiply; a scalar: element_mul_kernel).
//
// Deviations: LigerCrossEntropyFunction's autograd plumbing is left out; `softcap = None` is
// softcap 0 with HAS_SOFTCAPPING false (a scalar argument cannot be None); sum_non_ignore_weight
// is always an f32 argument (Triton types it int without weights, where the kernel never reads
// it); the wrapper's device reductions that end in .item() (n_non_ignore, the target bounds, the
// weight sums) read the targets on the host; libdevice's tanh is tl::tanh.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "autotune/do_bench.h"
#include "liger_utils.h"
#include "ops/ops.h"
#include "runtime/cuda_device.h"
#include "suite.h"

namespace {

namespace tl = tritium::tl;
using tritium::DType;
using tritium::Meta;
using tritium::Tensor;
using P = tl::ptr<tl::any>;

// log2(e): lets us emit the hardware ex2.approx instruction via e^x = 2^(x * LOG2_E)
constexpr double LOG2_E = 1.4426950408889634;

tl::tensor tanh(const tl::tensor& x) { return tl::tanh(x); }  // libdevice.tanh

auto liger_cross_entropy_kernel = tritium::kernel(
    "liger_cross_entropy_kernel",
    [](P X_ptr, tl::i32 X_stride, P Y_ptr, tl::i32 Y_stride, P weight_ptr, P loss_ptr, P z_loss_ptr,
       tl::i32 loss_stride, P token_accuracy_ptr, tl::i32 token_accuracy_stride, P predicted_tokens_ptr,
       tl::i32 predicted_tokens_stride, tl::i32 n_cols, tl::i32 n_non_ignore, tl::f32 sum_non_ignore_weight,
       tl::f32 weight_sum, tl::i32 ignore_index, double lse_square_scale, double label_smoothing,
       std::string reduction,  // constexpr: reduction is always known at compile time
       tl::f32 softcap, bool RETURN_Z_LOSS, bool RETURN_TOKEN_ACCURACY, bool RETURN_PREDICTED_TOKENS,
       int BLOCK_SIZE, bool HAS_WEIGHT, bool HAS_SOFTCAPPING, bool HAS_GRADIENTS) {
      // https://github.com/triton-lang/triton/issues/1058
      // If B*T*V is too large, program_id * stride will overflow out of int32, so we convert to int64
      auto program_id = tl::program_id(0).to(tl::int64);

      // 1. Load Y_ptr first because if the target is ignore_index, we can return right away
      Y_ptr += program_id * Y_stride;
      auto y = tl::load(Y_ptr);

      // 2. locate the start index
      X_ptr += program_id * X_stride;

      tl::if_(y == ignore_index, [&] {
        // set all X_ptr as 0
        for (auto i : tl::range(0, n_cols, BLOCK_SIZE)) {
          auto X_offsets = i + tl::arange(0, BLOCK_SIZE);
          tl::store(X_ptr + X_offsets, 0.0, X_offsets < n_cols);
        }
        // For ignored tokens, set token accuracy to 0
        if (RETURN_TOKEN_ACCURACY) {
          token_accuracy_ptr += program_id * token_accuracy_stride;
          tl::store(token_accuracy_ptr, 0.0);
        }
        if (RETURN_PREDICTED_TOKENS) {
          predicted_tokens_ptr += program_id * predicted_tokens_stride;
          tl::store(predicted_tokens_ptr, -1);
        }
        tl::return_();
      });

      loss_ptr += program_id * loss_stride;
      if (RETURN_Z_LOSS) z_loss_ptr += program_id * loss_stride;
      if (RETURN_TOKEN_ACCURACY) token_accuracy_ptr += program_id * token_accuracy_stride;
      if (RETURN_PREDICTED_TOKENS) predicted_tokens_ptr += program_id * predicted_tokens_stride;

      if (HAS_SOFTCAPPING) softcap = softcap.to(tl::float32);
      if (HAS_WEIGHT) {
        sum_non_ignore_weight = sum_non_ignore_weight.to(tl::float32);
        weight_sum = weight_sum.to(tl::float32);
      }

      tl::tensor weight_y;
      if (HAS_WEIGHT) weight_y = tl::load(weight_ptr + y).to(tl::float32);

      // Online softmax: 2 loads + 1 store (compared with 3 loads + 1 store for the safe softmax)
      // Refer to Algorithm 3 in the paper: https://arxiv.org/pdf/1805.02867

      // 3. [Online softmax] first pass: find max + sum
      tl::tensor m = tl::full({}, -INFINITY, tl::float32);  // m is the max value
      tl::tensor d = tl::full({}, 0.0, tl::float32);        // d is the sum
      // Track the index of the maximum value for token accuracy / predicted tokens computation
      tl::tensor argmax_idx = tl::full({}, 0, tl::int32);
      // we need to store the original value of X_y for the loss calculation
      auto ori_X_y = tl::load(X_ptr + y).to(tl::float32);
      if (HAS_SOFTCAPPING) ori_X_y = softcap * tanh(ori_X_y / softcap);

      // Label smoothing is a general case of normal cross entropy
      // See the full derivation at https://github.com/linkedin/Liger-Kernel/pull/198#issue-2503665310
      tl::tensor scaled_x_sum = tl::full({}, 0.0, tl::float32);
      auto eps = label_smoothing / n_cols;

      for (auto i : tl::range(0, n_cols, BLOCK_SIZE)) {
        auto X_offsets = i + tl::arange(0, BLOCK_SIZE);
        // Ensure float32 precision for softmax calculation
        auto X_block = tl::load(X_ptr + X_offsets, X_offsets < n_cols, -INFINITY).to(tl::float32);
        if (HAS_SOFTCAPPING) X_block = softcap * tanh(X_block / softcap);
        auto block_max = tl::max(X_block);

        // Track argmax for accuracy / predicted tokens computation
        if (RETURN_TOKEN_ACCURACY || RETURN_PREDICTED_TOKENS) {
          // Find the index of the maximum value in this block
          auto is_max_mask = X_block == block_max;
          // Mask out invalid indices with a value larger than n_cols
          auto masked_offsets = tl::where(is_max_mask, X_offsets, n_cols);
          // Get the first (smallest) index where max occurs
          auto current_block_argmax_idx = tl::min(masked_offsets);

          auto is_new_max = block_max > m;
          argmax_idx = tl::where(is_new_max, current_block_argmax_idx, argmax_idx);
        }

        if (label_smoothing > 0) {
          // scale X beforehand to avoid overflow
          if (HAS_WEIGHT) {
            auto weight_block = tl::load(weight_ptr + X_offsets, X_offsets < n_cols);
            scaled_x_sum += tl::sum(tl::where(X_offsets < n_cols, -eps * X_block * weight_block, 0.0));
          } else {
            scaled_x_sum += tl::sum(tl::where(X_offsets < n_cols, -eps * X_block, 0.0));
          }
        }
        auto m_new = tl::maximum(m, block_max);
        d = d * tl::exp2((m - m_new) * LOG2_E) + tl::sum(tl::exp2((X_block - m_new) * LOG2_E));
        m = m_new;
      }

      // log (sum(e^(X_i))) = max(X) + log (sum(e ^ (X_i - max(X)))) = m + log d
      auto lse = m + tl::log(d);

      // 4. [Online Softmax] Second pass: compute gradients (see the original for the derivation:
      // dx_i = ((1 + 2 * lse_square_scale * lse) * softmax(x_i) - label_smoothing / V) / N, and
      // dx_y = dx_i - (1 - label_smoothing) / N; no 1 / N for 'sum')
      if (HAS_GRADIENTS) {
        for (auto i : tl::range(0, n_cols, BLOCK_SIZE)) {
          auto X_offsets = i + tl::arange(0, BLOCK_SIZE);
          auto X_block = tl::load(X_ptr + X_offsets, X_offsets < n_cols, -INFINITY).to(tl::float32);
          tl::tensor intermediate;
          if (HAS_SOFTCAPPING) {
            intermediate = tanh(X_block / softcap);
            X_block = softcap * intermediate;
          }

          if (!HAS_WEIGHT) {
            // softmax(x_i)
            X_block = tl::exp2((X_block - m) * LOG2_E) / d;
            // derivative of z-loss: 2 * lse_square_scale * lse * softmax(x_i)
            X_block += 2 * lse_square_scale * lse * X_block;
            // smoothing term
            X_block += -eps;
            // reduction scale
            if (reduction == "mean") X_block = X_block / n_non_ignore;
          } else {
            auto weight_block = tl::load(weight_ptr + X_offsets, X_offsets < n_cols);
            auto softmax_X = tl::exp2((X_block - m) * LOG2_E) / d;
            // derivative of original_loss
            auto dloss_ori = (1 - label_smoothing) * softmax_X;
            dloss_ori = dloss_ori * weight_y;
            // derivative of smooth_loss
            auto dloss_smooth = eps * (-weight_block + softmax_X * weight_sum);
            // derivative of z-loss
            auto dz_loss = 2 * lse_square_scale * lse * softmax_X;
            // reduction scale
            if (reduction == "mean") {
              dloss_ori = dloss_ori / sum_non_ignore_weight;
              dloss_smooth = dloss_smooth / sum_non_ignore_weight;
              // TODO: Implement weighted z_loss. Currently, z_loss is not scaled by weight.
              dz_loss = dz_loss / n_non_ignore;
            }
            // derivative of total_loss
            X_block = dloss_ori + dloss_smooth + dz_loss;
          }

          // chain rule softcapping
          // d(softcap * tanh(x / softcap)) = (1 - tanh^2(x / softcap))
          if (HAS_SOFTCAPPING) X_block = X_block * (1 - intermediate * intermediate);

          tl::store(X_ptr + X_offsets, X_block, X_offsets < n_cols);
        }

        // dx_y correction: recompute the true-class gradient once, in fp32, and overwrite X[y]
        // (the -(1 - label_smoothing) term folded in before rounding to X's dtype: a
        // read-modify-write of the stored value would cancel catastrophically in bf16/fp16).
        // Barrier first so the loop's in-place store to X[y] cannot land after this store.
        tl::debug_barrier();
        auto softmax_X_y = tl::exp2((ori_X_y - m) * LOG2_E) / d;
        tl::tensor dx_y;
        if (!HAS_WEIGHT) {
          dx_y = softmax_X_y;
          dx_y += 2 * lse_square_scale * lse * dx_y;
          dx_y += -eps;
          dx_y += -(1 - label_smoothing);
          if (reduction == "mean") dx_y = dx_y / n_non_ignore;
        } else {
          auto dloss_ori_y = (1 - label_smoothing) * softmax_X_y - (1 - label_smoothing);
          dloss_ori_y = dloss_ori_y * weight_y;
          auto dloss_smooth_y = eps * (-weight_y + softmax_X_y * weight_sum);
          auto dz_loss_y = 2 * lse_square_scale * lse * softmax_X_y;
          if (reduction == "mean") {
            dloss_ori_y = dloss_ori_y / sum_non_ignore_weight;
            dloss_smooth_y = dloss_smooth_y / sum_non_ignore_weight;
            dz_loss_y = dz_loss_y / n_non_ignore;
          }
          dx_y = dloss_ori_y + dloss_smooth_y + dz_loss_y;
        }
        if (HAS_SOFTCAPPING) {
          auto t_y = ori_X_y / softcap;
          dx_y = dx_y * (1 - t_y * t_y);
        }
        tl::store(X_ptr + y, dx_y);
      }

      // We need tl.debug_barrier() to ensure the new result of X_ptr is written (Triton's
      // python/triton/ops/cross_entropy.py does the same)
      tl::debug_barrier();

      // 5. Calculate the loss
      // loss = log (softmax(X_y)) = X_y - m - log d = X_y - lse (d >= 1: no overflow)
      tl::tensor loss = lse - ori_X_y;
      if (HAS_WEIGHT) loss = weight_y * loss;

      // H(q', p) = (1 - label_smoothing) * H(q, p) + (sum(-eps * x_i) + label_smoothing * (m + logd))
      // (section 7 of https://arxiv.org/pdf/1512.00567; Liger-Kernel PR 198)
      if (label_smoothing > 0) {
        tl::tensor smooth_loss;
        if (HAS_WEIGHT)
          smooth_loss = scaled_x_sum + eps * lse * weight_sum;
        else
          smooth_loss = scaled_x_sum + label_smoothing * lse;
        loss = loss * (1 - label_smoothing) + smooth_loss;
      }

      // An auxiliary loss, z_loss (PaLM, https://www.jmlr.org/papers/v24/22-1144.html)
      tl::tensor z_loss = lse_square_scale * lse * lse;
      // Normalize the loss by the number of non-ignored elements if reduction is "mean"
      if (reduction == "mean") {
        if (HAS_WEIGHT)
          loss = loss / sum_non_ignore_weight;
        else
          loss = loss / n_non_ignore;
        // TODO: Implement weighted z_loss. Currently, z_loss is not scaled by weight.
        z_loss = z_loss / n_non_ignore;
      }
      loss += z_loss;

      tl::store(loss_ptr, loss);
      if (RETURN_Z_LOSS) tl::store(z_loss_ptr, z_loss);
      if (RETURN_TOKEN_ACCURACY) {
        // Store 1.0 if prediction is correct, 0.0 otherwise (Python's `1.0 if c else 0.0` on a tensor)
        auto is_correct = tl::where(argmax_idx == y, 1.0f, 0.0f);
        tl::store(token_accuracy_ptr, is_correct);
      }
      if (RETURN_PREDICTED_TOKENS) tl::store(predicted_tokens_ptr, argmax_idx);
    },
    {"X_ptr", "X_stride", "Y_ptr", "Y_stride", "weight_ptr", "loss_ptr", "z_loss_ptr", "loss_stride",
     "token_accuracy_ptr", "token_accuracy_stride", "predicted_tokens_ptr", "predicted_tokens_stride", "n_cols",
     "n_non_ignore", "sum_non_ignore_weight", "weight_sum", "ignore_index", "lse_square_scale", "label_smoothing",
     "reduction", "softcap", "RETURN_Z_LOSS", "RETURN_TOKEN_ACCURACY", "RETURN_PREDICTED_TOKENS", "BLOCK_SIZE",
     "HAS_WEIGHT", "HAS_SOFTCAPPING", "HAS_GRADIENTS"});

// utils.py's element_mul_kernel: X *= grad_output (a device scalar), in place, one program a row.
auto element_mul_kernel = tritium::kernel(
    "element_mul_kernel",
    [](P X_ptr, tl::i32 X_stride, P grad_output_ptr, tl::i32 n_cols, int BLOCK_SIZE) {
      // Get the program ID and convert it to int64 to avoid overflow
      auto program_id = tl::program_id(0).to(tl::int64);
      // Locate the start index
      X_ptr += program_id * X_stride;
      // Load the gradient output value
      auto grad_output = tl::load(grad_output_ptr);
      // Perform the element-wise multiplication
      for (auto i : tl::range(0, n_cols, BLOCK_SIZE)) {
        auto X_offsets = i + tl::arange(0, BLOCK_SIZE);
        auto X_block = tl::load(X_ptr + X_offsets, X_offsets < n_cols);
        tl::store(X_ptr + X_offsets, X_block * grad_output, X_offsets < n_cols);
      }
    },
    {"X_ptr", "X_stride", "grad_output_ptr", "n_cols", "BLOCK_SIZE"});

// The hard limit of TRITON_MAX_TENSOR_NUMEL is 1048576; 65536 // 2 is faster (less register
// spilling) on CUDA (XPU uses 4096, NPU 2048).
constexpr int64_t MAX_FUSED_SIZE = 65536 / 2;

bool g_poison = false;  // while checking: token accuracy and predicted tokens start poisoned

int32_t i32(int64_t v) {
  if (v > INT32_MAX || v < INT32_MIN) tritium::fail("cross_entropy: {} does not fit the kernel's int32 arguments", v);
  return static_cast<int32_t>(v);
}

struct Forward {
  Tensor loss, z_loss, token_accuracy, predicted_tokens, input;
};

// cross_entropy_forward(_input [BT, V], target [BT] i64, weight [V] or undefined, ...); softcap 0
// is None. `input_requires_grad` is _input.requires_grad (HAS_GRADIENTS).
Forward cross_entropy_forward(Tensor _input, Tensor target, Tensor weight, int ignore_index, double lse_square_scale,
                              double label_smoothing, const std::string& reduction, double softcap, bool return_z_loss,
                              bool return_token_accuracy, bool return_predicted_tokens, bool input_requires_grad) {
  const int64_t BT = _input.size(0), V = _input.size(1);
  const int64_t n_rows = BT;
  const tritium::Device device = _input.device();

  const int BLOCK_SIZE = static_cast<int>(std::min(MAX_FUSED_SIZE, liger::next_power_of_2(V)));

  // unreduced loss
  Tensor loss_1d = tritium::ops::zeros({n_rows}, _input.dtype(), device);
  Tensor z_loss_1d = return_z_loss ? tritium::ops::zeros({n_rows}, _input.dtype(), device) : Tensor();
  Tensor token_accuracy_1d =
      return_token_accuracy ? tritium::ops::full({n_rows}, g_poison ? NAN : 0.0, DType::f32, device) : Tensor();
  Tensor predicted_tokens_1d =
      return_predicted_tokens ? tritium::ops::full({n_rows}, g_poison ? -7 : -1, DType::i64, device) : Tensor();

  // target_mask = target != ignore_index; n_non_ignore = target_mask.sum().item(); the bounds
  // asserts and the weight sums (all .item()s: read on the host here).
  const std::vector<int64_t> t = target.to(DType::i64).to_vector<int64_t>();
  int64_t n_non_ignore = 0, t_max = 0, t_min = 0;
  for (int64_t v : t) {
    const int64_t masked = v != ignore_index ? v : 0;  // target * target_mask
    n_non_ignore += v != ignore_index;
    t_max = std::max(t_max, masked), t_min = std::min(t_min, masked);
  }
  if (!(t_max < V)) tritium::fail("Target {} is out of bounds. Expected < {}", t_max, V);
  if (!(t_min >= 0)) tritium::fail("Target {} is out of bounds. Expected >= 0", t_min);
  double sum_non_ignore_weight = double(n_non_ignore);
  double weight_sum = 0.0;
  if (weight.defined()) {
    if (weight.size(0) != V) tritium::fail("If given, weight has to be a Tensor of size V. Got: [{}]", weight.size(0));
    if (!tritium::is_float(weight.dtype()))
      tritium::fail("If given, weight has to be a Tensor of floating point dtype. Got: {}", tritium::dtype_name(weight.dtype()));
    const std::vector<double> w = liger::host(weight);
    sum_non_ignore_weight = 0;
    for (int64_t v : t)
      if (v != ignore_index) sum_non_ignore_weight += w[size_t(v)];
    for (double x : w) weight_sum += x;
    // ensure weight is contiguous
    if (weight.stride(-1) != 1) weight = tritium::ops::contiguous(weight);
  }

  // ensure _input and target are contiguous in the last dimension
  if (_input.stride(-1) != 1) _input = tritium::ops::contiguous(_input);
  if (target.stride(-1) != 1) target = tritium::ops::contiguous(target);

  // num_warps is dtype- and arch-dependent (measured on CE, full fwd+bwd): Blackwell bf16/fp16 8
  // (instruction-issue-bound), otherwise 32 (bandwidth-bound); is_hip() is false here.
  const bool is_blackwell = device.is_cuda() && tritium::runtime::cuda::properties(device.index).cc_major >= 10;
  const int ce_num_warps = (_input.element_size() == 2 && is_blackwell) ? 8 : 32;

  // Here we use a trick to store X_ptr gradient in X_ptr so we can save memory
  liger_cross_entropy_kernel[{n_rows}](
      _input, i32(_input.stride(-2)), target, i32(target.stride(-1)), weight, loss_1d, z_loss_1d, i32(loss_1d.stride(-1)),
      token_accuracy_1d, return_token_accuracy ? i32(token_accuracy_1d.stride(-1)) : 0, predicted_tokens_1d,
      return_predicted_tokens ? i32(predicted_tokens_1d.stride(-1)) : 0, i32(V), i32(n_non_ignore),
      float(sum_non_ignore_weight), float(weight_sum), ignore_index, lse_square_scale, label_smoothing, reduction,
      float(softcap), return_z_loss, return_token_accuracy, return_predicted_tokens, BLOCK_SIZE, weight.defined(),
      softcap != 0.0, input_requires_grad, liger::warps(ce_num_warps));

  Forward f;
  if (reduction == "none") {
    f.loss = loss_1d;
    f.z_loss = z_loss_1d;
    f.token_accuracy = token_accuracy_1d;
  } else {
    f.loss = tritium::ops::sum(loss_1d);
    if (return_z_loss) f.z_loss = tritium::ops::sum(z_loss_1d);
    // For accuracy, we compute the mean across all non-ignored tokens
    if (return_token_accuracy) f.token_accuracy = tritium::ops::div(tritium::ops::sum(token_accuracy_1d), double(n_non_ignore));
  }
  f.predicted_tokens = predicted_tokens_1d;
  f.input = _input;
  return f;
}

// cross_entropy_backward(_input (the gradient, in place), grad_output (a 0-d or [BT] tensor)).
Tensor cross_entropy_backward(Tensor _input, const Tensor& grad_output) {
  // If cross entropy is the last layer, grad_output is 1.0. Skip the mul to save time
  if (grad_output.dim() == 0 && liger::host(grad_output)[0] == 1.0) return _input;
  // If reduction is 'none'
  if (grad_output.dim() > 0) return tritium::ops::mul(_input, grad_output.unsqueeze(1));
  // If reduction is ['mean', 'sum'], grad_output is just a scalar: a kernel multiplies in place
  const int64_t BT = _input.size(0), V = _input.size(1);
  const int64_t n_rows = BT;
  const int BLOCK_SIZE = static_cast<int>(std::min(MAX_FUSED_SIZE, liger::next_power_of_2(V)));
  element_mul_kernel[{n_rows}](_input, i32(_input.stride(-2)), grad_output, i32(V), BLOCK_SIZE, liger::warps(32));
  return _input;
}

// ---- check ------------------------------------------------------------------------------------

struct Case {
  int64_t BT, V;
  DType dtype;
  std::string reduction;
  bool weighted;
  double label_smoothing, lse_square_scale, softcap;
  bool z_loss, accuracy, predicted, grads;
  double grad_output;  // NaN: a [BT] vector (reduction none)
};

struct Reference {
  std::vector<double> loss_rows, z_rows, grad;
  std::vector<int64_t> argmax;
};

// The loss terms and their gradient by the definitions, in float64, from the rounded inputs.
Reference reference(const Case& c, const std::vector<double>& x, const std::vector<int64_t>& target,
                    const std::vector<double>& w, int ignore_index) {
  Reference r;
  r.loss_rows.assign(size_t(c.BT), 0.0), r.z_rows.assign(size_t(c.BT), 0.0), r.grad.assign(x.size(), 0.0);
  r.argmax.assign(size_t(c.BT), -1);
  double N = 0, Wn = 0, W = 0;
  for (double v : w) W += v;
  for (int64_t y : target)
    if (y != ignore_index) N += 1, Wn += c.weighted ? w[size_t(y)] : 1.0;
  const bool mean = c.reduction == "mean";
  const double eps = c.label_smoothing / double(c.V);
  for (int64_t i = 0; i < c.BT; ++i) {
    const int64_t y = target[size_t(i)];
    if (y == ignore_index) continue;
    std::vector<double> z(size_t(c.V));
    double m = -INFINITY;
    int64_t arg = 0;
    for (int64_t j = 0; j < c.V; ++j) {
      const double v = x[size_t(i * c.V + j)];
      z[size_t(j)] = c.softcap != 0 ? c.softcap * std::tanh(v / c.softcap) : v;
      if (z[size_t(j)] > m) m = z[size_t(j)], arg = j;
    }
    double s = 0;
    for (double v : z) s += std::exp(v - m);
    const double lse = m + std::log(s);
    const double wy = c.weighted ? w[size_t(y)] : 1.0;
    // loss = (1 - ls) w_y (lse - z_y) + ls-term, ls-term = sum_j -eps z_j w_j + eps lse W (weighted)
    // or sum_j -eps z_j + ls lse; z-loss = lss lse^2
    double smooth = 0;
    for (int64_t j = 0; j < c.V; ++j) smooth -= eps * z[size_t(j)] * (c.weighted ? w[size_t(j)] : 1.0);
    smooth += c.weighted ? eps * lse * W : c.label_smoothing * lse;
    double loss = wy * (lse - z[size_t(y)]);
    if (c.label_smoothing > 0) loss = loss * (1 - c.label_smoothing) + smooth;
    double zl = c.lse_square_scale * lse * lse;
    const double loss_scale = mean ? 1.0 / (c.weighted ? Wn : N) : 1.0, z_scale = mean ? 1.0 / N : 1.0;
    r.loss_rows[size_t(i)] = loss * loss_scale + zl * z_scale;
    r.z_rows[size_t(i)] = zl * z_scale;
    r.argmax[size_t(i)] = arg;
    for (int64_t j = 0; j < c.V; ++j) {
      const double p = std::exp(z[size_t(j)] - lse), wj = c.weighted ? w[size_t(j)] : 1.0;
      // d/dz_j of each term, then through the softcap: dz/dx = 1 - tanh^2(x / softcap)
      double g = (1 - c.label_smoothing) * wy * (p - (j == y ? 1.0 : 0.0)) * loss_scale;
      g += (c.weighted ? -eps * wj + eps * W * p : -eps + c.label_smoothing * p) * loss_scale;
      g += 2 * c.lse_square_scale * lse * p * z_scale;
      if (c.softcap != 0) {
        const double t = std::tanh(x[size_t(i * c.V + j)] / c.softcap);
        g *= 1 - t * t;
      }
      r.grad[size_t(i * c.V + j)] = g;
    }
  }
  return r;
}

// One case: the losses, token accuracy, predicted tokens and the in-place gradient (after
// cross_entropy_backward) against float64; returns the worst relative error (infinity on a wrong
// index or accuracy).
double relative_error(const tritium::Device& device, const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<double> xv;
  Tensor X = liger::random_tensor({c.BT, c.V}, c.dtype, device, rng, xv, 2.0);
  const int ignore_index = -100;
  std::vector<int64_t> target(size_t(c.BT));
  for (int64_t i = 0; i < c.BT; ++i) target[size_t(i)] = (i % 4 == 1) ? ignore_index : int64_t(rng() % uint32_t(c.V));
  // Some targets at the row's argmax, so that token accuracy sees both answers.
  for (int64_t i = 0; i < c.BT; i += 3)
    if (target[size_t(i)] != ignore_index)
      target[size_t(i)] = std::max_element(xv.begin() + i * c.V, xv.begin() + (i + 1) * c.V) - (xv.begin() + i * c.V);
  Tensor T = Tensor::from_vector(target, {c.BT}, device);
  std::vector<double> w(size_t(c.V), 1.0);
  Tensor W;
  if (c.weighted) {
    std::uniform_real_distribution<double> u(0.2, 2.0);
    for (auto& v : w) v = u(rng);
    W = Tensor::from_vector(w, {c.V}, device).to(DType::f32);
    w = liger::host(W);
  }
  const Reference r = reference(c, xv, target, w, ignore_index);

  g_poison = true;
  Forward f = cross_entropy_forward(X, T, W, ignore_index, c.lse_square_scale, c.label_smoothing, c.reduction, c.softcap,
                                    c.z_loss, c.accuracy, c.predicted, c.grads);
  g_poison = false;

  double worst = 0;
  auto reduce = [&](const std::vector<double>& rows) {
    if (c.reduction == "none") return rows;
    double s = 0;
    for (double v : rows) s += v;
    return std::vector<double>{s};
  };
  worst = std::max(worst, liger::rel_error(liger::host(f.loss), reduce(r.loss_rows)));
  if (c.z_loss) worst = std::max(worst, liger::rel_error(liger::host(f.z_loss), reduce(r.z_rows)));
  if (c.accuracy) {
    std::vector<double> acc(size_t(c.BT), 0.0);
    double n = 0, hits = 0;
    for (int64_t i = 0; i < c.BT; ++i)
      if (target[size_t(i)] != ignore_index) n += 1, hits += acc[size_t(i)] = r.argmax[size_t(i)] == target[size_t(i)];
    const std::vector<double> want = c.reduction == "none" ? acc : std::vector<double>{hits / n};
    if (liger::rel_error(liger::host(f.token_accuracy), want) > 1e-6) return INFINITY;
  }
  if (c.predicted && f.predicted_tokens.to_vector<int64_t>() != r.argmax) return INFINITY;

  std::vector<double> grad = r.grad;
  if (c.grads) {
    Tensor go;
    std::vector<double> gov(size_t(c.BT));
    if (std::isnan(c.grad_output)) {
      std::uniform_real_distribution<double> u(0.5, 1.5);
      for (auto& v : gov) v = u(rng);
      go = Tensor::from_vector(gov, {c.BT}, device);
    } else {
      go = Tensor::from_vector(std::vector<double>{c.grad_output}, {1}, device).view({});
      std::fill(gov.begin(), gov.end(), c.grad_output);
    }
    Tensor g = cross_entropy_backward(f.input, go);
    for (int64_t i = 0; i < c.BT; ++i)
      for (int64_t j = 0; j < c.V; ++j) grad[size_t(i * c.V + j)] *= gov[size_t(i)];
    worst = std::max(worst, liger::rel_error(liger::host(g), grad));
  } else {
    // Without gradients the logits stay as they were, but for the ignored rows' zeros.
    std::vector<double> kept = xv;
    for (int64_t i = 0; i < c.BT; ++i)
      if (target[size_t(i)] == ignore_index) std::fill(kept.begin() + i * c.V, kept.begin() + (i + 1) * c.V, 0.0);
    if (liger::host(f.input) != kept) return INFINITY;
  }
  return worst;
}

bool check(const tritium::Device& device) {
  const double vec = NAN;  // grad_output a [BT] vector
  // Every fourth row ignore_index; a vocabulary over MAX_FUSED_SIZE (40000: two chunks, the second
  // partial) and ones under a block; mean / sum / none; class weights, label smoothing, z-loss,
  // softcapping; token accuracy and predicted tokens; grad_output 1 (no multiply), a scalar
  // (element_mul_kernel) and a vector (reduction none); f32, bf16 and f16.
  const std::vector<Case> cases = {
      {6, 40000, DType::f32, "mean", false, 0.0, 0.0, 0.0, false, true, true, true, 1.0},
      {9, 700, DType::f32, "mean", false, 0.1, 1e-4, 30.0, true, false, false, true, 0.5},
      {9, 700, DType::f32, "mean", true, 0.1, 1e-4, 0.0, true, true, true, true, 2.0},
      {7, 1100, DType::bf16, "none", false, 0.0, 0.0, 0.0, false, true, true, true, vec},
      {8, 900, DType::f16, "sum", true, 0.05, 0.0, 20.0, false, false, true, true, 0.5},
      {5, 600, DType::f32, "sum", false, 0.0, 1e-3, 0.0, true, true, false, false, 1.0},
  };
  bool ok = true;
  double worst = 0;
  std::string detail;
  for (const Case& c : cases) {
    const double rel = relative_error(device, c, uint32_t(c.BT * 31 + c.V));
    const double bound = liger::bound_for(c.dtype);
    ok = ok && rel <= bound;
    worst = std::max(worst, rel / bound);
    std::string extras = c.weighted ? " weight" : "";
    if (c.label_smoothing > 0) extras += " smooth";
    if (c.z_loss) extras += " z";
    if (c.softcap != 0) extras += " softcap";
    if (!c.grads) extras += " no-grad";
    detail += fmt::format("{}{} {}x{} {}{} {:.1e}", detail.empty() ? "(" : ", ", tritium::dtype_name(c.dtype), c.BT, c.V,
                          c.reduction, extras, rel);
  }
  // The wrapper's target check: a target past V is an error naming it.
  bool refused = false;
  try {
    Tensor X = tritium::ops::zeros({2, 10}, DType::f32, device);
    Tensor T = Tensor::from_vector(std::vector<int64_t>{3, 10}, {2}, device);
    cross_entropy_forward(X, T, Tensor(), -100, 0, 0, "mean", 0, false, false, false, true);
  } catch (const tritium::Error& e) {
    refused = std::string(e.what()).find("Target 10 is out of bounds. Expected < 10") != std::string::npos;
  }
  ok = ok && refused;
  detail += fmt::format("; bounds f32 1e-5, f16 1e-3, bf16 1e-2; shown: worst error / bound; target past V {})",
                        refused ? "refused" : "NOT REFUSED");
  return suite::report("cross_entropy", device, ok ? worst : INFINITY, 1.0, detail);
}

// ---- bench ------------------------------------------------------------------------------------

// benchmark_cross_entropy.py: the default model's vocabulary (llama_3_8b: V = 128256), fp32
// randn logits that require grad, random targets, mean reduction, a sweep of BT. The forward
// computes the loss and the gradient in place (the backward with grad_output 1 does nothing).
// GB/s from the bytes moved (the logits read twice and written once).
std::vector<suite::Row> bench(const tritium::Device& device) {
  const int64_t V = 128256;
  std::vector<int64_t> bts = device.is_cuda() ? std::vector<int64_t>{1024, 2048, 4096, 8192} : std::vector<int64_t>{16};
  std::vector<suite::Row> rows;
  for (int64_t BT : bts) {
    auto& gen = tritium::ops::default_generator();
    Tensor X = tritium::ops::randn({BT, V}, gen, DType::f32, device);
    Tensor T = tritium::ops::randint(0, V, {BT}, gen, DType::i64, device);
    const double bytes = 3.0 * double(BT) * double(V) * 4.0;
    const double fwd = tritium::do_bench([&] {
                         cross_entropy_forward(X, T, Tensor(), -100, 0.0, 0.0, "mean", 0.0, false, false, false, true);
                       }, device).median_ms;
    rows.push_back({fmt::format("fwd+grad BT={} V={} f32 mean", BT, V), fwd, bytes * 1e-9 / (fwd * 1e-3), "GB/s"});
  }
  return rows;
}

const bool registered = suite::add({.name = "cross_entropy",
                                    .source = "linkedin/Liger-Kernel src/liger_kernel/ops/cross_entropy.py",
                                    .category = "row",
                                    .check = check,
                                    .bench = bench});

}  // namespace
