// torch.nn.functional.interpolate, modes nearest and bilinear, and its backward, as Tritium kernels
// (ops/interpolate.cpp). Inputs [N, C, W] (nearest only) or [N, C, H, W], any strides; a
// channels-last input gives a channels-last output. The source index formulas are PyTorch's
// (UpSample.h): nearest takes min(floor(dst * scale), in - 1) in f32, with scale 1 / scale_factor
// when a scale factor was given, else in / out, and exact copies for out == in and out == 2 in;
// bilinear's source coordinate is scale * dst with align_corners (scale (in - 1) / (out - 1)),
// else max(scale * (dst + 0.5) - 0.5, 0).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ops/ops.h"

namespace tritium::ops {

enum class InterpolateMode { nearest, bilinear };
InterpolateMode interpolate_mode(const std::string& name);  // "nearest" / "bilinear"; an error otherwise

// What F.interpolate works out from its arguments: the output's spatial size and the scale factor
// of each spatial dim that the kernels use (set only when scale_factor was given). Exactly one of
// size and scale_factor is non-empty; each is one value for every spatial dim or one per dim.
struct InterpolatePlan {
  Shape output_size;                          // one per spatial dim
  std::vector<std::optional<double>> scales;  // one per spatial dim
};
InterpolatePlan interpolate_plan(const Tensor& x, InterpolateMode mode, const std::vector<int>& size,
                                 const std::vector<double>& scale_factor, std::optional<bool> align_corners);

Tensor interpolate(const Tensor& x, InterpolateMode mode, const InterpolatePlan& plan, bool align_corners);
// The gradient at the input: each output gradient is added (atomically) to the input elements it
// was read from, with the bilinear weights.
Tensor interpolate_backward(const Tensor& grad, const Tensor& x, InterpolateMode mode, const InterpolatePlan& plan,
                            bool align_corners);

}  // namespace tritium::ops
