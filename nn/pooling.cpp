// Differentiable pooling / interpolate and their modules (nn/pooling.h): every function is one
// nn::call of the op declared in ops/decl/pool.cpp; modules hold their options and print them as
// PyTorch's repr does.
#include "nn/pooling.h"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "nn/dispatch.h"
#include "ops/interpolate.h"

namespace tritium {

namespace {

using ops::Attrs;

Attrs max_attrs(const Ints& k, const Ints& s, const Ints& p, const Ints& d, bool ceil) {
  return {{"kernel_size", k}, {"stride", s}, {"padding", p}, {"dilation", d}, {"ceil_mode", ceil}};
}

Attrs avg_attrs(const Ints& k, const Ints& s, const Ints& p, bool ceil, bool count_pad, std::optional<int> divisor) {
  if (divisor && *divisor == 0) fail("avg_pool2d: divisor must be not zero");
  return {{"kernel_size", k}, {"stride", s},           {"padding", p},
          {"ceil_mode", ceil}, {"count_include_pad", count_pad}, {"divisor_override", divisor.value_or(0)}};
}

std::pair<Tensor, Tensor> both(const char* op, const Tensor& x, Attrs attrs) {
  std::vector<Tensor> out = nn::call(ops::op_decl(op), {x}, std::move(attrs));
  return {out[0], out[1]};
}

}  // namespace

Tensor max_pool2d(const Tensor& x, Ints k, Ints s, Ints p, Ints d, bool ceil) {
  return nn::call("max_pool2d", {x}, max_attrs(k, s, p, d, ceil));
}
Tensor max_pool1d(const Tensor& x, Ints k, Ints s, Ints p, Ints d, bool ceil) {
  return nn::call("max_pool1d", {x}, max_attrs(k, s, p, d, ceil));
}
std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, Ints k, Ints s, Ints p, Ints d, bool ceil) {
  return both("max_pool2d", x, max_attrs(k, s, p, d, ceil));
}
std::pair<Tensor, Tensor> max_pool1d_with_indices(const Tensor& x, Ints k, Ints s, Ints p, Ints d, bool ceil) {
  return both("max_pool1d", x, max_attrs(k, s, p, d, ceil));
}
Tensor avg_pool2d(const Tensor& x, Ints k, Ints s, Ints p, bool ceil, bool count_pad, std::optional<int> divisor) {
  return nn::call("avg_pool2d", {x}, avg_attrs(k, s, p, ceil, count_pad, divisor));
}
Tensor avg_pool1d(const Tensor& x, Ints k, Ints s, Ints p, bool ceil, bool count_pad) {
  return nn::call("avg_pool1d", {x}, avg_attrs(k, s, p, ceil, count_pad, std::nullopt));
}
Tensor adaptive_avg_pool2d(const Tensor& x, Ints output_size) {
  return nn::call("adaptive_avg_pool2d", {x}, Attrs{{"output_size", output_size}});
}

Tensor interpolate(const Tensor& x, Ints size, std::vector<double> scale_factor, const std::string& mode,
                   std::optional<bool> align_corners) {
  // The plan checks the arguments with PyTorch's messages (counts, one of size / scale_factor,
  // align_corners with nearest); the op's attributes then carry at most two scale factors.
  if (x.defined()) ops::interpolate_plan(x, ops::interpolate_mode(mode), size, scale_factor, align_corners);
  std::optional<double> sf, sf_w;
  if (!scale_factor.empty()) sf = scale_factor[0];
  if (scale_factor.size() == 2) sf_w = scale_factor[1];
  return nn::call("interpolate", {x},
                  Attrs{{"mode", mode},
                        {"size", size},
                        {"scale_factor", sf},
                        {"scale_factor_w", sf_w},
                        {"align_corners", align_corners.value_or(false)}});
}

namespace nn {

namespace {

// PyTorch's repr of an int or tuple argument: 3 for one value, (3, 2) for several; `tuple1`
// prints one value as a 1-tuple, (3,), as the 1-d average pool stores its arguments.
std::string arg(const Ints& v, bool tuple1 = false) {
  if (v.size() == 1) return tuple1 ? fmt::format("({},)", v[0]) : fmt::format("{}", v[0]);
  return fmt::format("({})", fmt::join(v, ", "));
}

std::string py_float(double v) {
  std::string s = fmt::format("{}", v);
  return s.find_first_of(".eEn") == std::string::npos ? s + ".0" : s;
}

const char* py_bool(bool b) { return b ? "True" : "False"; }

PoolWindow make_window(Ints k, Ints s, Ints p, Ints d) { return {k, s.empty() ? k : s, p, d}; }

}  // namespace

MaxPool2d::MaxPool2d(Ints k, Ints s, Ints p, Ints d, bool ceil) : window(make_window(k, s, p, d)), ceil_mode(ceil) {}
Tensor MaxPool2d::forward(const Tensor& x) {
  return max_pool2d(x, window.kernel_size, window.stride, window.padding, window.dilation, ceil_mode);
}
std::pair<Tensor, Tensor> MaxPool2d::forward_with_indices(const Tensor& x) {
  return max_pool2d_with_indices(x, window.kernel_size, window.stride, window.padding, window.dilation, ceil_mode);
}
std::string MaxPool2d::str() const {
  return fmt::format("MaxPool2d(kernel_size={}, stride={}, padding={}, dilation={}, ceil_mode={})",
                     arg(window.kernel_size), arg(window.stride), arg(window.padding), arg(window.dilation),
                     py_bool(ceil_mode));
}

MaxPool1d::MaxPool1d(Ints k, Ints s, Ints p, Ints d, bool ceil) : window(make_window(k, s, p, d)), ceil_mode(ceil) {}
Tensor MaxPool1d::forward(const Tensor& x) {
  return max_pool1d(x, window.kernel_size, window.stride, window.padding, window.dilation, ceil_mode);
}
std::pair<Tensor, Tensor> MaxPool1d::forward_with_indices(const Tensor& x) {
  return max_pool1d_with_indices(x, window.kernel_size, window.stride, window.padding, window.dilation, ceil_mode);
}
std::string MaxPool1d::str() const {
  return fmt::format("MaxPool1d(kernel_size={}, stride={}, padding={}, dilation={}, ceil_mode={})",
                     arg(window.kernel_size), arg(window.stride), arg(window.padding), arg(window.dilation),
                     py_bool(ceil_mode));
}

AvgPool2d::AvgPool2d(Ints k, Ints s, Ints p, bool ceil, bool count_pad, std::optional<int> divisor)
    : window(make_window(k, s, p, {1})), ceil_mode(ceil), count_include_pad(count_pad), divisor_override(divisor) {}
Tensor AvgPool2d::forward(const Tensor& x) {
  return avg_pool2d(x, window.kernel_size, window.stride, window.padding, ceil_mode, count_include_pad,
                    divisor_override);
}
std::string AvgPool2d::str() const {
  return fmt::format("AvgPool2d(kernel_size={}, stride={}, padding={})", arg(window.kernel_size), arg(window.stride),
                     arg(window.padding));
}

AvgPool1d::AvgPool1d(Ints k, Ints s, Ints p, bool ceil, bool count_pad)
    : window(make_window(k, s, p, {1})), ceil_mode(ceil), count_include_pad(count_pad) {}
Tensor AvgPool1d::forward(const Tensor& x) {
  return avg_pool1d(x, window.kernel_size, window.stride, window.padding, ceil_mode, count_include_pad);
}
std::string AvgPool1d::str() const {
  return fmt::format("AvgPool1d(kernel_size={}, stride={}, padding={})", arg(window.kernel_size, true),
                     arg(window.stride, true), arg(window.padding, true));
}

AdaptiveAvgPool2d::AdaptiveAvgPool2d(Ints size) : output_size(std::move(size)) {
  if (output_size.empty() || output_size.size() > 2)
    fail("AdaptiveAvgPool2d: output_size must be one or two values, got {}", output_size.size());
}
Tensor AdaptiveAvgPool2d::forward(const Tensor& x) { return adaptive_avg_pool2d(x, output_size); }
std::string AdaptiveAvgPool2d::str() const {
  if (output_size.size() == 1) return fmt::format("AdaptiveAvgPool2d(output_size={})", output_size[0]);
  auto one = [](int v) { return v == -1 ? std::string("None") : std::to_string(v); };
  return fmt::format("AdaptiveAvgPool2d(output_size=({}, {}))", one(output_size[0]), one(output_size[1]));
}

Upsample::Upsample(Ints size_, std::vector<double> scale, std::string mode_, std::optional<bool> align)
    : size(std::move(size_)), scale_factor(std::move(scale)), mode(std::move(mode_)), align_corners(align) {
  ops::interpolate_mode(mode);  // an unknown mode fails here, not at the first forward
}
Tensor Upsample::forward(const Tensor& x) { return interpolate(x, size, scale_factor, mode, align_corners); }
std::string Upsample::str() const {
  std::string info;
  if (!scale_factor.empty()) {
    std::vector<std::string> parts;
    for (double s : scale_factor) parts.push_back(py_float(s));
    info = "scale_factor=" + (parts.size() == 1 ? parts[0] : fmt::format("({})", fmt::join(parts, ", ")));
  } else {
    info = "size=" + arg(size);
  }
  return fmt::format("Upsample({}, mode='{}')", info, mode);
}

}  // namespace nn
}  // namespace tritium
