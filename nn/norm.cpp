// The normalisation functions (one dispatch call each on ops/decl/norm.cpp's declarations) and
// modules of nn/norm.h.
#include "nn/norm.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "nn/autograd.h"
#include "nn/dispatch.h"

namespace tritium {

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum, double eps) {
  return nn::call("batch_norm", {input, running_mean, running_var, weight, bias},
                  ops::Attrs{{"training", training}, {"momentum", momentum}, {"eps", eps}});
}

Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight, const Tensor& bias, double eps) {
  return nn::call("group_norm", {input, weight, bias}, ops::Attrs{{"num_groups", num_groups}, {"eps", eps}});
}

Tensor rms_norm(const Tensor& input, const std::vector<int64_t>& normalized_shape, const Tensor& weight,
                std::optional<double> eps) {
  return nn::call("rms_norm", {input, weight}, ops::Attrs{{"normalized_shape", normalized_shape}, {"eps", eps}});
}

namespace nn {

namespace {
const char* py_bool(bool b) { return b ? "True" : "False"; }
std::string py_float(std::optional<double> v) { return v ? fmt::format("{}", *v) : "None"; }
// Python's tuple: "(4,)", "(3, 4)".
std::string py_tuple(const std::vector<int64_t>& v) {
  return v.size() == 1 ? fmt::format("({},)", v[0]) : fmt::format("({})", fmt::join(v, ", "));
}
}  // namespace

// ---- BatchNorm ----------------------------------------------------------------------------------

BatchNorm::BatchNorm(int64_t n, double eps_, std::optional<double> momentum_, bool affine_, bool track, bool bias_)
    : num_features(n), eps(eps_), momentum(momentum_), affine(affine_), track_running_stats(track) {
  if (n <= 0) fail("BatchNorm: num_features must be positive, got {}", n);
  NoGradGuard no_grad;
  if (affine) {
    weight = register_parameter("weight", ops::ones({n}));
    if (bias_) bias = register_parameter("bias", ops::zeros({n}));
  }
  if (track_running_stats) {
    running_mean = register_buffer("running_mean", ops::zeros({n}));
    running_var = register_buffer("running_var", ops::ones({n}));
    num_batches_tracked = register_buffer("num_batches_tracked", ops::zeros({}, DType::i64));
  }
}

void BatchNorm::reset_running_stats() {
  if (!track_running_stats) return;
  ops::fill_(running_mean, Scalar(0.0));
  ops::fill_(running_var, Scalar(1.0));
  ops::fill_(num_batches_tracked, Scalar(int64_t{0}));
}

BatchNorm::BatchNorm(ShareTensors, const BatchNorm& from)
    : num_features(from.num_features), eps(from.eps), momentum(from.momentum), affine(from.affine),
      track_running_stats(from.track_running_stats) {
  if (from.weight.defined()) weight = register_parameter("weight", from.weight, from.weight.requires_grad());
  if (from.bias.defined()) bias = register_parameter("bias", from.bias, from.bias.requires_grad());
  if (track_running_stats) {
    running_mean = register_buffer("running_mean", from.running_mean);
    running_var = register_buffer("running_var", from.running_var);
    num_batches_tracked = register_buffer("num_batches_tracked", from.num_batches_tracked);
  }
  train(from.is_training());
}

Tensor BatchNorm::forward(const Tensor& x) {
  if (replaced_by_sync_)
    fail("{}::forward: this module was replaced by a SyncBatchNorm (SyncBatchNorm::convert_sync_batchnorm) but is "
         "still called: its parent calls it through a member handle, which the conversion cannot change (call the "
         "children through Sequential / named_children(), or build the model with SyncBatchNorm)",
         type_name());
  if (!x.defined()) fail("{}::forward: the input is undefined", type_name());
  check_input_dim(x);
  double factor = momentum.value_or(0.0);
  if (is_training() && track_running_stats) {
    Tensor count = ops::add(num_batches_tracked, Scalar(int64_t{1}));
    ops::copy_(num_batches_tracked, count);
    if (!momentum) factor = 1.0 / static_cast<double>(count.to_vector<int64_t>()[0]);  // the cumulative average
  }
  // Batch statistics in training, and in evaluation too when no running statistics are kept.
  const bool use_batch = is_training() || !track_running_stats;
  const bool pass_running = !is_training() || track_running_stats;
  return tritium::batch_norm(x, pass_running ? running_mean : Tensor(), pass_running ? running_var : Tensor(), weight,
                             bias, use_batch, factor, eps);
}

std::string BatchNorm::str() const {
  return fmt::format("{}({}, eps={}, momentum={}, affine={}, bias={}, track_running_stats={})", type_name(),
                     num_features, eps, py_float(momentum), py_bool(affine), py_bool(bias.defined()),
                     py_bool(track_running_stats));
}

void BatchNorm::parameters_moved() {
  if (weight.defined()) weight = parameter("weight");
  if (bias.defined()) bias = parameter("bias");
  if (track_running_stats) {
    running_mean = buffer("running_mean");
    running_var = buffer("running_var");
    num_batches_tracked = buffer("num_batches_tracked");
  }
}

void BatchNorm1d::check_input_dim(const Tensor& x) const {
  if (x.dim() != 2 && x.dim() != 3) fail("BatchNorm1d: expected 2D or 3D input (got {}D input)", x.dim());
}

void BatchNorm2d::check_input_dim(const Tensor& x) const {
  if (x.dim() != 4) fail("BatchNorm2d: expected 4D input (got {}D input)", x.dim());
}

// ---- GroupNorm ------------------------------------------------------------------------------------

GroupNorm::GroupNorm(int64_t groups, int64_t channels, double eps_, bool affine_, bool bias_)
    : num_groups(groups), num_channels(channels), eps(eps_), affine(affine_) {
  if (groups <= 0 || channels <= 0 || channels % groups != 0)
    fail("GroupNorm: num_channels ({}) must be divisible by num_groups ({})", channels, groups);
  if (affine) {
    NoGradGuard no_grad;
    weight = register_parameter("weight", ops::ones({channels}));
    if (bias_) bias = register_parameter("bias", ops::zeros({channels}));
  }
}

Tensor GroupNorm::forward(const Tensor& x) {
  if (!x.defined()) fail("GroupNorm::forward: the input is undefined");
  return tritium::group_norm(x, num_groups, weight, bias, eps);
}

std::string GroupNorm::str() const {
  return fmt::format("GroupNorm({}, {}, eps={}, affine={}, bias={})", num_groups, num_channels, eps, py_bool(affine),
                     py_bool(bias.defined()));
}

void GroupNorm::parameters_moved() {
  if (weight.defined()) weight = parameter("weight");
  if (bias.defined()) bias = parameter("bias");
}

// ---- RMSNorm ------------------------------------------------------------------------------------

RMSNorm::RMSNorm(std::vector<int64_t> shape, std::optional<double> eps_, bool elementwise_affine)
    : normalized_shape(std::move(shape)), eps(eps_) {
  if (normalized_shape.empty()) fail("RMSNorm: normalized_shape is empty");
  for (int64_t d : normalized_shape)
    if (d <= 0) fail("RMSNorm: normalized_shape must be positive, got {}", py_tuple(normalized_shape));
  if (elementwise_affine) {
    NoGradGuard no_grad;
    weight = register_parameter("weight", ops::ones(normalized_shape));
  }
}

Tensor RMSNorm::forward(const Tensor& x) {
  if (!x.defined()) fail("RMSNorm::forward: the input is undefined");
  return tritium::rms_norm(x, normalized_shape, weight, eps);
}

std::string RMSNorm::str() const {
  return fmt::format("RMSNorm({}, eps={}, elementwise_affine={})", py_tuple(normalized_shape), py_float(eps),
                     py_bool(weight.defined()));
}

void RMSNorm::parameters_moved() {
  if (weight.defined()) weight = parameter("weight");
}

}  // namespace nn
}  // namespace tritium
