// `tritium-bench --ops`: the table of op benchmarks and what one entry says. Every entry names
// an op of the registry (ops/decl/op_decl.h) and says how to make its inputs at about N elements;
// the runner (bench/ops_bench.cpp) calls the op through the generic dispatch (nn::call) by name,
// forward and, for a differentiable op, forward + backward through autograd, and writes what it
// ran (shapes, dtypes, fills, attributes) to JSON so that bench/compare_ops.py can run the same
// calls in PyTorch. Adding an op is one line in bench/ops_bench_table.cpp.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "ops/decl/op_decl.h"

namespace tritium::bench {

using ops::Attrs;
using runtime::Tensor;
using ops::Shape;

// How an input's values are drawn (the PyTorch side draws the same way).
enum class Fill {
  uniform,    // U[-1, 1)
  positive,   // U[0.5, 1.5): log, sqrt, divisors
  unit,       // U[-0.9, 0.9): inside the open interval (-1, 1) of asin, acos, atanh, erfinv
  above_one,  // U[1.5, 2.5): acosh's domain (x >= 1) away from its edge
  index,      // integers in [0, high), i64
  mask,       // bool, true with probability 1/2
};

struct InputSpec {
  Shape shape;
  DType dtype = DType::invalid;  // invalid: the case's dtype (f32 / bf16)
  Fill fill = Fill::uniform;
  int64_t high = 0;              // Fill::index: the exclusive bound
  bool grad = true;              // requires grad in the forward+backward mode (floating inputs only)
  bool channels_last = false;    // a 4-D input laid out NHWC (torch.channels_last), issue 30
};

// Shorthands for the table.
inline InputSpec in(Shape s, Fill f = Fill::uniform) { return {.shape = std::move(s), .fill = f}; }
inline InputSpec index_in(Shape s, int64_t high) {
  return {.shape = std::move(s), .dtype = DType::i64, .fill = Fill::index, .high = high, .grad = false};
}
inline InputSpec mask_in(Shape s) { return {.shape = std::move(s), .dtype = DType::i1, .fill = Fill::mask, .grad = false}; }
inline InputSpec no_grad(InputSpec s) { s.grad = false; return s; }
inline InputSpec channels_last(InputSpec s) { s.channels_last = true; return s; }

// One call of an op at one size: its tensor inputs, its attributes, and attributes that are
// lists of tensors (index's `indices`), made from specs like the inputs.
struct OpCall {
  std::vector<InputSpec> inputs;
  Attrs attrs;
  std::vector<std::pair<std::string, std::vector<InputSpec>>> tensor_attrs;
};

// A callable that runs an op which is not in the registry (argmax, comparisons, copies): the
// op library's function on the inputs. Such an op is timed forward only.
using DirectOp = std::function<Tensor(const std::vector<Tensor>& inputs, const Attrs& attrs)>;

struct OpBench {
  std::string op;       // the registry name (or, with `direct`, the name the JSON and PyTorch side use)
  std::string variant;  // which case of the op ("dim -1", "broadcast row"); "" for the plain one
  // The call at about `n` elements (the row length is 1024 where the op has rows).
  std::function<OpCall(int64_t n)> make;
  std::vector<DType> dtypes = {DType::f32, DType::bf16};
  bool sorting = false;  // timed at n / 16 elements (2^20 at the default 2^24), as issue 29 asks
  DirectOp direct = {};
};

// The table: one entry per op case (bench/ops_bench_table.cpp).
const std::vector<OpBench>& op_benchmarks();

// The `--ops` mode (bench/ops_bench.cpp).
int ops_bench(int argc, char** argv);

}  // namespace tritium::bench
