// The op benchmark table of `tritium-bench --ops`: one line per op case. Sizes follow the
// element count n: row ops work on [n / 1024, 1024], matmul on two square matrices of about n
// elements each, attention on [B, H, 1024, 64] with B * H * 1024 * 64 = n. Ops of the registry
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
      {"amax", "dim -1", reduce({-1})},
      {"amin", "dim 0", reduce({0})},
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

      // ---- matmul, attention ----
      {"matmul", "square",
       [](int64_t n) {
         int64_t s = square_side(n);
         return OpCall{.inputs = {in({s, s}), in({s, s})}};
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
  };
  return t;
}

}  // namespace

const std::vector<OpBench>& op_benchmarks() {
  static const std::vector<OpBench> table = make_table();
  return table;
}

}  // namespace tritium::bench
