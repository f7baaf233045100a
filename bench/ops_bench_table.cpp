// The op benchmark table of `tritium-bench --ops`: one line per op case. Sizes follow the
// element count n: row ops work on [n / 1024, 1024], matmul on two square matrices of about n
// elements each (the batched products on 16 matrices of about n / 16), attention on [B, H, 1024, 64] with B * H * 1024 * 64 = n. Ops of the registry
// without a line here are listed as "not benchmarked" by the runner. bench/compare_ops.py has
// the PyTorch call of each op name (keep the two in step when adding an op).
#include <cmath>

#include "bench/ops_bench.h"

#include "ops/ops.h"

// Entries name only the fields they set (designated initializers); GCC 12 warns about the rest
// although they have default member initializers.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace tritium::bench {
namespace {

using Dims = std::vector<int>;
using ops::Scalar;
constexpr int64_t kCols = 1024;

int64_t rows(int64_t n) { return std::max<int64_t>(1, n / kCols); }
Shape mat(int64_t n) { return {rows(n), kCols}; }
// The side of a square matrix of about n elements, a multiple of 64.
int64_t square_side(int64_t n) { return std::max<int64_t>(64, static_cast<int64_t>(std::sqrt(double(n))) / 64 * 64); }

// A call of an op with one input of shape [n/1024, 1024] and the given attributes.
std::function<OpCall(int64_t)> unary(Fill fill = Fill::uniform, Attrs attrs = {}) {
  return [=](int64_t n) { return OpCall{.inputs = {in(mat(n), fill)}, .attrs = attrs}; };
}
std::function<OpCall(int64_t)> binary(Fill other_fill = Fill::uniform) {
  return [=](int64_t n) { return OpCall{.inputs = {in(mat(n)), in(mat(n), other_fill)}}; };
}
std::function<OpCall(int64_t)> with_scalar(Scalar s, const char* attr = "other") {
  return unary(Fill::uniform, Attrs{{attr, s}});
}
std::function<OpCall(int64_t)> reduce(Dims dims, bool keepdim = false) {
  return unary(Fill::uniform, Attrs{{"dims", dims}, {"keepdim", keepdim}});
}
std::function<OpCall(int64_t)> along(int dim, Fill fill = Fill::uniform) { return unary(fill, Attrs{{"dim", dim}}); }

const std::vector<DType> kF32 = {DType::f32};
std::function<OpCall(int64_t)> ternary(Fill third_fill = Fill::uniform, Attrs attrs = {}) {
  return [=](int64_t n) { return OpCall{.inputs = {in(mat(n)), in(mat(n)), in(mat(n), third_fill)}, .attrs = attrs}; };
}
// The batch of the batched products and the side of its square matrices: 16 of about n / 16
// elements each, so that each operand holds about n elements like matmul's.
constexpr int64_t kBatch = 16;
int64_t batch_side(int64_t n) { return square_side(n / kBatch); }
// beta and alpha of the add* products: neither 1, so that both scalings are done.
Attrs scales() { return Attrs{{"beta", 0.5}, {"alpha", 2.0}}; }


// conv1d / conv2d attributes (issue 30 item 1): dilation 1, groups 1.
Attrs conv_attrs(Dims stride, Dims padding) {
  return Attrs{{"stride", stride}, {"padding", padding}, {"dilation", Dims(stride.size(), 1)}, {"groups", 1}};
}

// [B, 64, 56, 56] with B * 64 * 56 * 56 about n (at least 1): the pooling entries' input.
Shape cnn_planes(int64_t n) { return {std::max<int64_t>(1, n / (64 * 56 * 56)), 64, 56, 56}; }

std::vector<OpBench> make_table() {
  using F = Fill;
  std::vector<OpBench> t = {
      // ---- elementwise ----
      {"add", "", binary()},
      {"add", "broadcast row", [](int64_t n) { return OpCall{.inputs = {in(mat(n)), in({kCols})}}; }},
      {"sub", "", binary()},
      {"mul", "", binary()},
      {"div", "", binary(F::positive)},
      {"add.Scalar", "", with_scalar(2.5)},
      {"sub.Scalar", "", with_scalar(2.5)},
      {"rsub.Scalar", "", with_scalar(2.5)},
      {"mul.Scalar", "", with_scalar(-1.5)},
      {"div.Scalar", "", with_scalar(4.0)},
      {"pow", "", unary(F::positive, Attrs{{"exponent", Scalar(3.0)}})},
      {"neg", "", unary()},
      {"exp", "", unary()},
      {"log", "", unary(F::positive)},
      {"sqrt", "", unary(F::positive)},
      {"tanh", "", unary()},
      {"sigmoid", "", unary()},
      {"relu", "", unary()},
      {"gelu", "", unary()},
      {"where", "", [](int64_t n) { return OpCall{.inputs = {mask_in(mat(n)), in(mat(n)), in(mat(n))}}; }},

      // ---- unary math (ops/decl/unary_math.cpp), each in its domain ----
      {"abs", "", unary()},
      {"sign", "", unary()},
      {"square", "", unary()},
      {"floor", "", unary()},
      {"ceil", "", unary()},
      {"trunc", "", unary()},
      {"round", "", unary(F::uniform, Attrs{{"decimals", 0}})},
      {"frac", "", unary()},
      {"sin", "", unary()},
      {"cos", "", unary()},
      {"tan", "", unary()},
      {"asin", "", unary(F::unit)},
      {"acos", "", unary(F::unit)},
      {"atan", "", unary()},
      {"sinh", "", unary()},
      {"cosh", "", unary()},
      {"asinh", "", unary()},
      {"acosh", "", unary(F::above_one)},
      {"atanh", "", unary(F::unit)},
      {"log1p", "", unary(F::positive)},
      {"expm1", "", unary()},
      {"log2", "", unary(F::positive)},
      {"log10", "", unary(F::positive)},
      {"exp2", "", unary()},
      {"reciprocal", "", unary(F::positive)},
      {"rsqrt", "", unary(F::positive)},
      {"erf", "", unary()},
      {"erfc", "", unary()},
      {"erfinv", "", unary(F::unit)},
      {"nan_to_num", "", unary(F::uniform, Attrs{{"nan", std::optional<double>(0.0)}, {"posinf", std::optional<double>()},
                                                  {"neginf", std::optional<double>()}})},
      {"minimum", "", binary()},
      {"maximum", "", binary()},
      {"fmin", "", binary()},
      {"fmax", "", binary()},
      {"atan2", "", binary(F::positive)},
      {"hypot", "", binary()},
      {"copysign", "", binary()},
      {"logaddexp", "", binary()},
      {"fmod", "", binary(F::positive)},
      {"remainder", "", binary(F::positive)},
      {"fmod.Scalar", "", with_scalar(0.3)},
      {"remainder.Scalar", "", with_scalar(0.3)},
      {"clamp", "min and max", unary(F::uniform, Attrs{{"has_min", true}, {"has_max", true}, {"min", Scalar(-0.5)}, {"max", Scalar(0.5)}})},
      {"clamp.Tensor", "min and max", ternary()},
      {"lerp.Scalar", "", [](int64_t n) { return OpCall{.inputs = {in(mat(n)), in(mat(n))}, .attrs = {{"weight", Scalar(0.3)}}}; }},
      {"lerp.Tensor", "", ternary()},
      {"addcmul", "", ternary(F::uniform, Attrs{{"value", Scalar(0.5)}})},
      {"addcdiv", "", ternary(F::positive, Attrs{{"value", Scalar(0.5)}})},

      // ---- activations (ops/decl/activations.cpp), PyTorch's default parameters ----
      {"leaky_relu", "", unary(F::uniform, Attrs{{"negative_slope", 0.01}})},
      {"silu", "", unary()},
      {"softplus", "", unary(F::uniform, Attrs{{"beta", 1.0}, {"threshold", 20.0}})},
      {"elu", "", unary(F::uniform, Attrs{{"alpha", 1.0}, {"scale", 1.0}, {"input_scale", 1.0}})},
      {"mish", "", unary()},
      {"hardswish", "", unary()},
      {"hardsigmoid", "", unary()},
      {"hardtanh", "", unary(F::uniform, Attrs{{"min_val", -0.5}, {"max_val", 0.5}})},
      {"softsign", "", unary()},
      {"tanhshrink", "", unary()},
      {"gelu.tanh", "", unary()},
      // Not in the registry (not differentiable): the op library's function, forward only.
      {"eq", "", binary(), {DType::f32, DType::bf16}, false,
       [](const std::vector<Tensor>& x, const Attrs&) { return ops::eq(x[0], x[1]); }},
      {"gt.Scalar", "", with_scalar(0.0), {DType::f32, DType::bf16}, false,
       [](const std::vector<Tensor>& x, const Attrs& a) { return ops::gt(x[0], a.get<Scalar>("other")); }},
      {"to_dtype", "f32 -> bf16", unary(), kF32, false,
       [](const std::vector<Tensor>& x, const Attrs&) { return ops::to_dtype(x[0], DType::bf16); }},
      {"contiguous", "of a transpose", unary(), {DType::f32, DType::bf16}, false,
       [](const std::vector<Tensor>& x, const Attrs&) { return ops::contiguous(x[0].t()); }},

      // ---- reductions ----
      {"sum", "all", reduce({})},
      {"sum", "dim -1", reduce({-1})},
      {"sum", "dim 0", reduce({0})},
      {"mean", "dim -1", reduce({-1})},
      {"sum", "dims 0,2,3 of NCHW (a bias gradient)", [](int64_t n) {
         return OpCall{.inputs = {in(cnn_planes(n))}, .attrs = {{"dims", Dims{0, 2, 3}}, {"keepdim", false}}};
       }},
      {"amax", "dim -1", reduce({-1})},
      {"amin", "dim 0", reduce({0})},
      {"var", "dim -1", unary(F::uniform, Attrs{{"dims", Dims{-1}}, {"correction", 1.0}, {"keepdim", false}})},
      {"std", "dim -1", unary(F::uniform, Attrs{{"dims", Dims{-1}}, {"correction", 1.0}, {"keepdim", false}})},
      // Positive factors: a product of U[-1, 1) values underflows to zero within a row.
      {"prod", "all", unary(F::positive)},
      {"prod.dim_int", "dim -1", unary(F::positive, Attrs{{"dim", -1}, {"keepdim", false}})},
      {"logsumexp", "dim -1", reduce({-1})},
      {"linalg_vector_norm", "ord 2, dim -1", unary(F::uniform, Attrs{{"ord", 2.0}, {"dims", Dims{-1}}, {"keepdim", false}})},
      {"max.dim", "dim -1", unary(F::uniform, Attrs{{"dim", -1}, {"keepdim", false}})},
      {"min.dim", "dim 0", unary(F::uniform, Attrs{{"dim", 0}, {"keepdim", false}})},
      // Scans along the rows.
      {"cumsum", "dim -1", along(-1)},
      {"cumprod", "dim -1", along(-1, F::positive)},
      {"cummax", "dim -1", along(-1)},
      {"cummin", "dim -1", along(-1)},
      // Sorting and selection: at n / 16 elements (issue 29).
      {"sort", "dim -1", unary(F::uniform, Attrs{{"dim", -1}, {"descending", false}}), {DType::f32, DType::bf16}, true},
      {"topk", "k 8, dim -1", unary(F::uniform, Attrs{{"k", int64_t(8)}, {"dim", -1}, {"largest", true}, {"sorted", true}}),
       {DType::f32, DType::bf16}, true},
      {"kthvalue", "k 100, dim -1", unary(F::uniform, Attrs{{"k", int64_t(100)}, {"dim", -1}, {"keepdim", false}}),
       {DType::f32, DType::bf16}, true},
      {"median", "all", unary(), {DType::f32, DType::bf16}, true},
      {"median.dim", "dim -1", unary(F::uniform, Attrs{{"dim", -1}, {"keepdim", false}}), {DType::f32, DType::bf16}, true},
      {"argmax", "dim -1", along(-1), {DType::f32, DType::bf16}, false,
       [](const std::vector<Tensor>& x, const Attrs& a) { return ops::argmax(x[0], a.get<int>("dim")); }},
      {"argmin", "dim 0", along(0), {DType::f32, DType::bf16}, false,
       [](const std::vector<Tensor>& x, const Attrs& a) { return ops::argmin(x[0], a.get<int>("dim")); }},

      // ---- softmax, norms, losses, dropout ----
      {"softmax", "dim -1", along(-1)},
      {"log_softmax", "dim -1", along(-1)},
      {"layer_norm", "[*, 1024]",
       [](int64_t n) {
         return OpCall{.inputs = {in(mat(n)), in({kCols}), in({kCols})},
                       .attrs = {{"normalized_shape", Shape{kCols}}, {"eps", 1e-5}}};
       }},
      {"cross_entropy", "1024 classes",
       [](int64_t n) { return OpCall{.inputs = {in(mat(n)), index_in({rows(n)}, kCols)}}; }},
      {"dropout", "p 0.1", unary(F::uniform, Attrs{{"p", 0.1}})},
      // issue 30 item 1 (wt-norm): normalisation at a CNN layer's size ([N, 64, 56, 56], N from n),
      // rms_norm on [2n / 4096, 4096] (8192 rows at the default n), cross_entropy over GPT-2's
      // 50304 classes on [n / 2048, 50304] (8192 rows at the default) with weight, ignore_index
      // and label smoothing.
      {"batch_norm", "[N, 64, 56, 56] training",
       [](int64_t n) {
         int64_t N = std::max<int64_t>(2, n / (64 * 56 * 56));
         return OpCall{.inputs = {in({N, 64, 56, 56}), no_grad(in({64})), no_grad(in({64}, F::positive)),
                                  in({64}, F::positive), in({64})},
                       .attrs = {{"training", true}, {"momentum", 0.1}, {"eps", 1e-5}}};
       }},
      {"group_norm", "[N, 64, 56, 56] 32 groups",
       [](int64_t n) {
         int64_t N = std::max<int64_t>(1, n / (64 * 56 * 56));
         return OpCall{.inputs = {in({N, 64, 56, 56}), in({64}, F::positive), in({64})},
                       .attrs = {{"num_groups", int64_t{32}}, {"eps", 1e-5}}};
       }},
      {"rms_norm", "[*, 4096]",
       [](int64_t n) {
         return OpCall{.inputs = {in({std::max<int64_t>(1, 2 * n / 4096), 4096}), in({4096}, F::positive)},
                       .attrs = {{"normalized_shape", Shape{4096}}, {"eps", std::optional<double>(1e-6)}}};
       }},
      {"cross_entropy_loss", "50304 classes, weight, ignore_index, smoothing 0.1",
       [](int64_t n) {
         int64_t R = std::max<int64_t>(1, n / 2048);
         return OpCall{.inputs = {in({R, 50304}), index_in({R}, 50304), no_grad(in({50304}, F::positive))},
                       .attrs = {{"ignore_index", int64_t{0}}, {"reduction", std::string("mean")},
                                 {"label_smoothing", 0.1}}};
       }},
      {"nll_loss", "1024 classes",
       [](int64_t n) {
         return OpCall{.inputs = {in(mat(n)), index_in({rows(n)}, kCols), no_grad(in({kCols}, F::positive))},
                       .attrs = {{"ignore_index", int64_t{-100}}, {"reduction", std::string("mean")}}};
       }},

      // ---- matmul, attention ----
      {"matmul", "square",
       [](int64_t n) {
         int64_t s = square_side(n);
         return OpCall{.inputs = {in({s, s}), in({s, s})}};
       }},
      // The matmul family: each matrix operand of about n elements, vectors of the matching length.
      {"mm", "square", [](int64_t n) {
         int64_t s = square_side(n);
         return OpCall{.inputs = {in({s, s}), in({s, s})}};
       }},
      {"bmm", "16 square", [](int64_t n) {
         int64_t s = batch_side(n);
         return OpCall{.inputs = {in({kBatch, s, s}), in({kBatch, s, s})}};
       }},
      {"mv", "[*, 1024] @ [1024]", [](int64_t n) { return OpCall{.inputs = {in(mat(n)), in({kCols})}}; }},
      {"dot", "", [](int64_t n) { return OpCall{.inputs = {in({n}), in({n})}}; }},
      {"vdot", "", [](int64_t n) { return OpCall{.inputs = {in({n}), in({n})}}; }},
      {"addmm", "square, beta 0.5, alpha 2", [](int64_t n) {
         int64_t s = square_side(n);
         return OpCall{.inputs = {in({s, s}), in({s, s}), in({s, s})}, .attrs = scales()};
       }},
      {"addmv", "[*, 1024] @ [1024], beta 0.5, alpha 2", [](int64_t n) {
         return OpCall{.inputs = {in({rows(n)}), in(mat(n)), in({kCols})}, .attrs = scales()};
       }},
      {"addr", "[*] x [1024], beta 0.5, alpha 2", [](int64_t n) {
         return OpCall{.inputs = {in(mat(n)), in({rows(n)}), in({kCols})}, .attrs = scales()};
       }},
      {"baddbmm", "16 square, beta 0.5, alpha 2", [](int64_t n) {
         int64_t s = batch_side(n);
         return OpCall{.inputs = {in({kBatch, s, s}), in({kBatch, s, s}), in({kBatch, s, s})}, .attrs = scales()};
       }},
      {"addbmm", "16 square, beta 0.5, alpha 2", [](int64_t n) {
         int64_t s = batch_side(n);
         return OpCall{.inputs = {in({s, s}), in({kBatch, s, s}), in({kBatch, s, s})}, .attrs = scales()};
       }},
      // issue 31 (autocast): F.linear, the op nn::Linear runs.
      {"linear", "[*, 1024] x [1024, 1024]^T + [1024]", [](int64_t n) {
         return OpCall{.inputs = {in(mat(n)), in({kCols, kCols}), in({kCols})}};
       }},
      {"scaled_dot_product_attention", "causal, S 1024, D 64",
       [](int64_t n) {
         int64_t bh = std::max<int64_t>(1, n / (1024 * 64));
         Shape s = {1, bh, 1024, 64};
         return OpCall{.inputs = {in(s), in(s), in(s)},
                       .attrs = {{"is_causal", true}, {"scale", std::optional<double>()}}};
       }},

      // ---- indexing ----
      {"gather", "dim 1", [](int64_t n) {
         return OpCall{.inputs = {in(mat(n)), index_in(mat(n), kCols)}, .attrs = {{"dim", 1}}};
       }},
      {"scatter", "dim 1", [](int64_t n) {
         return OpCall{.inputs = {in(mat(n)), index_in(mat(n), kCols), in(mat(n))}, .attrs = {{"dim", 1}}};
       }},
      {"scatter.value", "dim 1", [](int64_t n) {
         return OpCall{.inputs = {in(mat(n)), index_in(mat(n), kCols)}, .attrs = {{"dim", 1}, {"value", Scalar(2.0)}}};
       }},
      {"scatter_add", "dim 1", [](int64_t n) {
         return OpCall{.inputs = {in(mat(n)), index_in(mat(n), kCols), in(mat(n))}, .attrs = {{"dim", 1}}};
       }},
      {"scatter_reduce", "amax, dim 1", [](int64_t n) {
         return OpCall{.inputs = {in(mat(n)), index_in(mat(n), kCols), in(mat(n))},
                       .attrs = {{"dim", 1}, {"reduce", std::string("amax")}, {"include_self", true}}};
       }},
      {"index_select", "dim 0", [](int64_t n) {
         return OpCall{.inputs = {in(mat(n)), index_in({rows(n)}, rows(n))}, .attrs = {{"dim", 0}}};
       }},
      {"index_add", "dim 0", [](int64_t n) {
         return OpCall{.inputs = {in(mat(n)), index_in({rows(n)}, rows(n)), in(mat(n))},
                       .attrs = {{"dim", 0}, {"alpha", Scalar(1.0)}}};
       }},
      {"masked_fill", "", [](int64_t n) {
         return OpCall{.inputs = {in(mat(n)), mask_in(mat(n))}, .attrs = {{"value", Scalar(0.0)}}};
       }},
      {"masked_select", "", [](int64_t n) { return OpCall{.inputs = {in(mat(n)), mask_in(mat(n))}}; }},
      {"index", "rows by a tensor", [](int64_t n) {
         return OpCall{.inputs = {in(mat(n))}, .tensor_attrs = {{"indices", {index_in({rows(n)}, rows(n))}}}};
       }},
      {"index_put", "rows, accumulate", [](int64_t n) {
         return OpCall{.inputs = {in(mat(n)), in(mat(n))}, .attrs = {{"accumulate", true}},
                       .tensor_attrs = {{"indices", {index_in({rows(n)}, rows(n))}}}};
       }},

      // ---- shape: views (host work only forward) and copies ----
      {"flatten", "", unary(F::uniform, Attrs{{"start_dim", 0}, {"end_dim", -1}})},
      {"unflatten", "", unary(F::uniform, Attrs{{"dim", 1}, {"sizes", Shape{32, 32}}})},
      {"ravel", "", unary()},
      {"broadcast_to", "[1024] to rows", [](int64_t n) {
         return OpCall{.inputs = {in({kCols})}, .attrs = {{"size", mat(n)}}};
       }},
      {"narrow", "half the columns", unary(F::uniform, Attrs{{"dim", 1}, {"start", int64_t(256)}, {"length", int64_t(512)}})},
      {"unfold", "dim 1, size 8, step 8", unary(F::uniform, Attrs{{"dim", 1}, {"size", int64_t(8)}, {"step", int64_t(8)}})},
      {"movedim", "", unary(F::uniform, Attrs{{"source", Dims{0}}, {"destination", Dims{1}}})},
      {"diagonal", "", unary(F::uniform, Attrs{{"offset", int64_t(0)}, {"dim1", 0}, {"dim2", 1}})},
      {"repeat", "2x rows", [](int64_t n) {
         return OpCall{.inputs = {in({rows(n) / 2, kCols})}, .attrs = {{"repeats", Shape{2, 1}}}};
       }},
      {"flip", "dim -1", unary(F::uniform, Attrs{{"dims", Dims{-1}}})},
      {"roll", "dim -1", unary(F::uniform, Attrs{{"shifts", Shape{3}}, {"dims", Dims{-1}}})},
      {"tril", "", unary(F::uniform, Attrs{{"diagonal", int64_t(0)}})},
      {"triu", "", unary(F::uniform, Attrs{{"diagonal", int64_t(0)}})},
      {"cat", "4 tensors, dim 0", [](int64_t n) {
         Shape q = {rows(n) / 4, kCols};
         return OpCall{.inputs = {in(q), in(q), in(q), in(q)}, .attrs = {{"dim", 0}}};
       }},
      {"stack", "4 tensors, dim 0", [](int64_t n) {
         Shape q = {rows(n) / 4, kCols};
         return OpCall{.inputs = {in(q), in(q), in(q), in(q)}, .attrs = {{"dim", 0}}};
       }},

      // ---- issue 30 item 1 (wt-conv): convolutions, the batch from n ----
      {"conv2d", "ResNet-50 layer1 64->64 3x3 56x56", [](int64_t n) {
         const int64_t b = std::max<int64_t>(1, n / (64 * 56 * 56));
         return OpCall{.inputs = {in({b, 64, 56, 56}), in({64, 64, 3, 3}), in({64})}, .attrs = conv_attrs({1, 1}, {1, 1})};
       }},
      // Channels-last input and weight, as a channels-last ResNet-50 runs (the GPU target: bf16).
      {"conv2d", "ResNet-50 layer1 64->64 3x3 56x56 channels-last", [](int64_t n) {
         const int64_t b = std::max<int64_t>(1, n / (64 * 56 * 56));
         return OpCall{.inputs = {channels_last(in({b, 64, 56, 56})), channels_last(in({64, 64, 3, 3})), in({64})},
                       .attrs = conv_attrs({1, 1}, {1, 1})};
       }},
      {"conv2d", "ResNet-50 layer2 128->512 1x1 28x28 channels-last", [](int64_t n) {
         const int64_t b = std::max<int64_t>(1, n / (128 * 28 * 28));
         return OpCall{.inputs = {channels_last(in({b, 128, 28, 28})), channels_last(in({512, 128, 1, 1})), in({512})},
                       .attrs = conv_attrs({1, 1}, {0, 0})};
       }},
      {"conv2d", "ResNet-50 layer3 256->256 3x3 stride 2 28x28", [](int64_t n) {
         const int64_t b = std::max<int64_t>(1, n / (256 * 28 * 28));
         return OpCall{.inputs = {in({b, 256, 28, 28}), in({256, 256, 3, 3}), in({256})}, .attrs = conv_attrs({2, 2}, {1, 1})};
       }},
      // More of ResNet-50's shapes channels-last (issue 30's bar): a strided 3x3 (dgrad by output
      // phase), a 1x1 reducing channels, the last stage's 7x7 planes.
      {"conv2d", "ResNet-50 layer3 256->256 3x3 stride 2 28x28 channels-last", [](int64_t n) {
         const int64_t b = std::max<int64_t>(1, n / (256 * 28 * 28));
         return OpCall{.inputs = {channels_last(in({b, 256, 28, 28})), channels_last(in({256, 256, 3, 3})), in({256})},
                       .attrs = conv_attrs({2, 2}, {1, 1})};
       }},
      {"conv2d", "ResNet-50 layer1 256->64 1x1 56x56 channels-last", [](int64_t n) {
         const int64_t b = std::max<int64_t>(1, n / (256 * 56 * 56));
         return OpCall{.inputs = {channels_last(in({b, 256, 56, 56})), channels_last(in({64, 256, 1, 1})), in({64})},
                       .attrs = conv_attrs({1, 1}, {0, 0})};
       }},
      {"conv2d", "ResNet-50 layer4 512->512 3x3 7x7 channels-last", [](int64_t n) {
         const int64_t b = std::max<int64_t>(1, n / (512 * 7 * 7));
         return OpCall{.inputs = {channels_last(in({b, 512, 7, 7})), channels_last(in({512, 512, 3, 3})), in({512})},
                       .attrs = conv_attrs({1, 1}, {1, 1})};
       }},
      {"conv2d", "small CNN 1->32 3x3 28x28", [](int64_t n) {
         const int64_t b = std::max<int64_t>(1, n / (32 * 28 * 28));
         return OpCall{.inputs = {in({b, 1, 28, 28}), in({32, 1, 3, 3}), in({32})}, .attrs = conv_attrs({1, 1}, {1, 1})};
       }},
      {"conv2d", "small CNN 32->64 3x3 28x28", [](int64_t n) {
         const int64_t b = std::max<int64_t>(1, n / (32 * 28 * 28));
         return OpCall{.inputs = {in({b, 32, 28, 28}), in({64, 32, 3, 3}), in({64})}, .attrs = conv_attrs({1, 1}, {1, 1})};
       }},
      {"conv1d", "64->64 k3 L 1024", [](int64_t n) {
         const int64_t b = std::max<int64_t>(1, n / (64 * 1024));
         return OpCall{.inputs = {in({b, 64, 1024}), in({64, 64, 3}), in({64})}, .attrs = conv_attrs({1}, {1})};
       }},
      {"conv_transpose2d", "64->32 2x2 stride 2 28x28", [](int64_t n) {
         const int64_t b = std::max<int64_t>(1, n / (64 * 28 * 28));
         return OpCall{.inputs = {in({b, 64, 28, 28}), in({64, 32, 2, 2}), in({32})},
                       .attrs = {{"stride", Dims{2, 2}}, {"padding", Dims{0, 0}}, {"output_padding", Dims{0, 0}},
                                 {"groups", 1}, {"dilation", Dims{1, 1}}}};
       }},
      // ---- issue 30 item 1: pooling, interpolate, embedding ----
      // CNN-like planes: [B, 64, 56, 56] (ResNet's first pool) with B from n; embedding at a GPT-like
      // size whatever n (vocab 50304, dim 768, 8192 tokens).
      {"max_pool2d", "3x3 s2 p1, [*,64,56,56]", [](int64_t n) {
         return OpCall{.inputs = {in(cnn_planes(n))},
                       .attrs = {{"kernel_size", Dims{3}}, {"stride", Dims{2}}, {"padding", Dims{1}},
                                 {"dilation", Dims{1}}, {"ceil_mode", false}}};
       }},
      {"max_pool2d", "2x2 s2, [*,32,28,28]", [](int64_t n) {  // the Fashion-MNIST CNN's first pool
         return OpCall{.inputs = {in({std::max<int64_t>(1, n / (32 * 28 * 28)), 32, 28, 28})},
                       .attrs = {{"kernel_size", Dims{2}}, {"stride", Dims{2}}, {"padding", Dims{0}},
                                 {"dilation", Dims{1}}, {"ceil_mode", false}}};
       }},
      {"avg_pool2d", "2x2 s2, [*,64,56,56]", [](int64_t n) {
         return OpCall{.inputs = {in(cnn_planes(n))},
                       .attrs = {{"kernel_size", Dims{2}}, {"stride", Dims{2}}, {"padding", Dims{0}}, {"ceil_mode", false},
                                 {"count_include_pad", true}, {"divisor_override", 0}}};
       }},
      {"adaptive_avg_pool2d", "to 1x1, [*,64,56,56]", [](int64_t n) {
         return OpCall{.inputs = {in(cnn_planes(n))}, .attrs = {{"output_size", Dims{1, 1}}}};
       }},
      {"interpolate", "bilinear x2, [*,64,56,56]", [](int64_t n) {
         Shape s = cnn_planes(n);
         s[0] = std::max<int64_t>(1, s[0] / 4);  // the output is 4x the input
         return OpCall{.inputs = {in(s)},
                       .attrs = {{"mode", std::string("bilinear")}, {"size", Dims{}}, {"scale_factor", std::optional<double>(2.0)},
                                 {"scale_factor_w", std::optional<double>()}, {"align_corners", false}}};
       }},
      {"max_pool1d", "3 s2 p1, [*,64,3136]", [](int64_t n) {
         Shape s = cnn_planes(n);
         return OpCall{.inputs = {in({s[0], 64, 56 * 56})},
                       .attrs = {{"kernel_size", Dims{3}}, {"stride", Dims{2}}, {"padding", Dims{1}},
                                 {"dilation", Dims{1}}, {"ceil_mode", false}}};
       }},
      {"avg_pool1d", "2 s2, [*,64,3136]", [](int64_t n) {
         Shape s = cnn_planes(n);
         return OpCall{.inputs = {in({s[0], 64, 56 * 56})},
                       .attrs = {{"kernel_size", Dims{2}}, {"stride", Dims{2}}, {"padding", Dims{0}}, {"ceil_mode", false},
                                 {"count_include_pad", true}, {"divisor_override", 0}}};
       }},
      {"embedding", "50304 x 768, 8192 tokens", [](int64_t) {
         return OpCall{.inputs = {in({50304, 768}), index_in({8192}, 50304)}, .attrs = {{"padding_idx", int64_t{-1}}}};
       }},
      // ---- issue 30 item 1 (wt-rnn): the LSTM time loop at a fixed realistic size (seq 64, batch 32,
      // hidden 256) whatever n; compare_ops.py runs the same loop in eager PyTorch (addmm + gate ops
      // per step). tritium-bench --rnn times whole modules against torch.nn.LSTM / GRU / RNN.
      {"rnn_recurrence", "lstm T 64, B 32, H 256", [](int64_t) {
         return OpCall{.inputs = {in({64, 32, 1024}), in({32, 256}), in({32, 256}), in({1024, 256}), in({1024}), in({1024})},
                       .attrs = {{"mode", std::string("lstm")}, {"reverse", false}}};
       }, {DType::f32}},
  };
  return t;
}

}  // namespace

const std::vector<OpBench>& op_benchmarks() {
  static const std::vector<OpBench> table = make_table();
  return table;
}

}  // namespace tritium::bench
