// The per-channel statistics and per-channel affine kernels that batch_norm, group_norm and
// rms_norm share (ops/norm_batch.cpp, ops/norm_group.cpp, ops/norm_rms.cpp). A tensor is seen as
// (N, C, S) with any strides (sN, sC, sS): a channel c holds N * S elements. Contiguous NCHW is
// (C*S, S, 1); channels-last collapses N into S and is (-, 1, C); group norm's rows and rms_norm's
// columns are other (N, C, S) views of the same kernels.
#pragma once
#include <utility>

#include "ops/ops.h"

namespace tritium {
class Kernel;
}

namespace tritium::ops::detail {

struct ChannelView {
  Tensor base;  // the tensor read (its data pointer is element (0, 0, 0))
  int64_t N = 1, C = 1, S = 1;
  int64_t sN = 0, sC = 0, sS = 0;
};

// [N, C] or [N, C, *] read in place when contiguous or channels-last (dims >= 3: C has stride 1,
// the spatial dims are dense after it), else a contiguous copy.
ChannelView channel_view(const Tensor& x);
// A tensor of x's shape and strides (x dense in one of the two layouts of channel_view).
Tensor empty_like_layout(const ChannelView& v, const Tensor& x, DType dtype);
// The view of `t` read with the strides of `like` (t converted to like's layout when they differ).
ChannelView same_view(const ChannelView& like, const Tensor& t_shaped_like);

// Where element (n, c, s)'s statistics live in mean / rstd: index n*stN + s*stS when stS != 0
// (statistics per position: rms_norm's columns), else n*stN + c/cpg.
struct StatIndex {
  int64_t stN = 0, stS = 0, cpg = 1;
};

enum class ChannelSum {
  values = 0,        // A = sum x
  squared_dev = 1,   // A = sum (x - mean)^2 (mean 0 when no mean is given)
  grad = 2,          // A = sum dy, B = sum dy * xhat, xhat = (x - mean) * rstd (mean 0 when none)
};

// Per-channel sums ([C], `acc` dtype) over N and S. The (N, S) range is split across programs
// when the channels alone give too few programs to fill the device (then a second launch adds the
// partial sums). `mean` may be undefined (no centring); `dy` only for ChannelSum::grad.
std::pair<Tensor, Tensor> channel_sums(const ChannelView& x, const ChannelView* dy, const Tensor& mean,
                                       const Tensor& rstd, const StatIndex& at, ChannelSum what, DType acc);

// out(n, c, s) = a[k] * u(n, c, s) + b[k] * v(n, c, s) + d[k], k = n*cN + c (cN 0: per channel, C:
// per sample and channel); `b` and `v` may be undefined. `out` has u's strides; v must too.
// `center` (indexed as a) is subtracted from u or v before the product (no cancellation).
enum class Centre { none = 0, u = 1, v = 2 };
void channel_affine(const ChannelView& u, const ChannelView* v, Tensor& out, const Tensor& a, const Tensor& b,
                    const Tensor& d, int64_t cN, const Tensor& center = Tensor(), Centre which = Centre::none);

// The kernels behind the two functions (exposed for tests/test_cuda_codegen_norm.cpp).
Kernel& channel_sums_kernel();
Kernel& channel_affine_kernel();

}  // namespace tritium::ops::detail
