// The op declaration: one record per op saying what PyTorch's native_functions.yaml and
// derivatives.yaml say together (its name and PyTorch name, its tensor arguments and attributes,
// its forward kernel, its dtype rule, its autocast class and the derivative of each input as a
// formula over op-library calls), and the registry that holds them all by name. Autograd
// (nn/dispatch.h) runs every differentiable op through one generic dispatch that reads this
// record; AMP (the autocast class), the profiler (the names) and the tests (the list of ops to
// gradcheck) read it too instead of each keeping its own list. docs/ops.md shows how to declare
// an op. One file per op family under ops/decl/ holds the declarations.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "ops/ops.h"

namespace tritium::ops {

// ---- attributes: the non-tensor arguments of a call ------------------------------------------------

// One value of an attribute. The forward may also write attributes (dropout stores the random
// stream it used), and the backward reads what the forward left.
using AttrValue = std::variant<bool, int, double, Scalar, std::vector<int>, Shape, std::optional<double>,
                               Generator*, DropoutState, int64_t, std::string, std::vector<Tensor>>;

class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<std::string, AttrValue>> values) : values_(values) {}
  // The value of `name` as a T; a clear error when it is missing or of another type.
  template <class T>
  const T& get(std::string_view name) const {
    const AttrValue& v = find(name);
    if (const T* p = std::get_if<T>(&v)) return *p;
    wrong_type(name);
  }
  bool has(std::string_view name) const;
  void set(std::string name, AttrValue value);
  const std::vector<std::pair<std::string, AttrValue>>& values() const { return values_; }

 private:
  const AttrValue& find(std::string_view name) const;
  [[noreturn]] void wrong_type(std::string_view name) const;
  std::vector<std::pair<std::string, AttrValue>> values_;
};

// ---- dtype rules ---------------------------------------------------------------------------------

// Which dtypes a tensor argument accepts (checked before the forward, with an error naming the op,
// the argument and the dtype).
enum class Accepts { any, non_bool, floating, integral_index, boolean };

// How the result dtype follows from the inputs that take part in it (`promotes` arguments).
enum class ResultDType {
  promote,           // PyTorch's type promotion (bool < integers < floats; a Scalar attribute joins)
  promote_to_float,  // promotion, then integers and bool give f32 (true division)
  int_to_float,      // the input's dtype if floating, else f32 (exp, log, ...)
  same_as_input,     // the input's dtype
  same_across,       // every promoting input has one dtype (an error otherwise), and that is the result
  sum,               // the input's dtype if floating, else i64
  custom,            // OpDecl::custom_result_dtype decides
};

// PyTorch's autocast op classes (torch.amp): which precision an op runs in under autocast.
enum class AutocastClass {
  lower_precision_fp,  // cast to the autocast dtype (f16 / bf16): matmul, attention
  fp32,                // cast to f32: exp, log, pow, softmax, losses, norms, sums
  promote,             // run in the widest input dtype
  none,                // run in the inputs' own dtypes (not listed by PyTorch)
};
const char* autocast_class_name(AutocastClass c);

// ---- what a derivative formula sees ---------------------------------------------------------------

struct OpDecl;

// The saved values of one recorded call: the inputs and outputs its derivatives declared they use
// (inputs with their autograd state, for double backward; outputs detached) and the version of
// each one's storage then (reading one modified in place since is PyTorch's error), every input's
// shape and dtype, the attributes after the forward, and which
// inputs need a gradient.
class DerivativeContext {
 public:
  DerivativeContext(const OpDecl& op, std::vector<Tensor> saved_inputs, std::vector<Tensor> saved_outputs,
                    std::vector<Shape> input_shapes, std::vector<bool> needs_input_grad, Attrs attrs);
  // A saved input or output by its declared name ("self", "other", "result"); an error when the
  // derivative that asked for it did not declare it in `saves`.
  const Tensor& saved(std::string_view name) const;
  const Shape& input_shape(std::string_view name) const;
  bool needs_input_grad(std::string_view name) const;
  const Attrs& attrs() const { return attrs_; }
  const OpDecl& op() const { return *op_; }
  // Every tensor argument's shape, in call order (a variadic list gives one per tensor).
  const std::vector<Shape>& input_shapes() const { return shapes_; }
  // Under create_graph: the saved first output gets the autograd state `meta` (its producer, the
  // node being differentiated), so formulas reading "result" differentiate through it. Saved
  // outputs are otherwise detached: a node must not keep its own output's state alive.
  void attach_output_history(std::shared_ptr<nn::AutogradMeta> meta);
  const std::vector<Tensor>& saved_inputs() const { return inputs_; }

 private:
  // An error when a saved tensor's storage was modified in place after it was saved.
  void check_version(const Tensor& t, uint64_t saved_version, std::string_view name, bool is_output) const;

  const OpDecl* op_;
  std::vector<Tensor> inputs_, outputs_;
  std::vector<uint64_t> input_versions_, output_versions_;  // storage versions when saved
  std::vector<Shape> shapes_;
  std::vector<bool> needs_;
  Attrs attrs_;
};

// d(input) = formula(grad of the first output, saved values), as a derivatives.yaml line
// "self: grad * other". The gradient comes back at the input's shape and dtype without the formula
// doing it: the dispatch reduces broadcast dims (sum_to) and converts the dtype.
using DerivativeFormula = std::function<Tensor(const Tensor& grad, const DerivativeContext& ctx)>;
// A fused backward kernel that gives every input's gradient at once (undefined where none).
using FusedBackward = std::function<std::vector<Tensor>(const Tensor& grad, const DerivativeContext& ctx)>;

struct Derivative {
  std::string input;                // the input it differentiates
  std::vector<std::string> saves;   // inputs and outputs it reads (saved only if the input needs grad)
  std::string text;                 // the formula as written, for docs and error messages
  DerivativeFormula formula;
};

// ---- the declaration ---------------------------------------------------------------------------------

struct TensorArg {
  std::string name;
  Accepts accepts = Accepts::any;
  bool promotes = true;       // takes part in the result dtype
  bool optional = false;      // may be an undefined Tensor
  bool differentiable = true; // has a derivative (declared in `derivatives` or by `fused_backward`)
  // The last argument only: a list of one or more tensors (cat's and stack's `tensors`). An op
  // with one differentiates it through a fused backward (one gradient per tensor of the list).
  bool variadic = false;
};

// Random inputs for the registry's gradient check (tests/test_op_registry.cpp): float64 tensors
// on `device` in the op's domain (positive for log, away from relu's kink), and the attributes,
// made afresh for each evaluation (dropout's generator restarts so every evaluation draws the
// same mask).
struct GradcheckSample {
  std::string what;
  std::vector<Tensor> inputs;
  std::function<Attrs()> attrs;
  double tol = 1e-6;  // f64 samples; ops without f64 kernels (attention) sample f32 with looser bounds
  double eps = 1e-6;  // the finite-difference step
};

struct OpDecl {
  std::string name;        // our name, the registry key ("add", "add.Scalar", "softmax")
  std::string torch_name;  // PyTorch's ("torch.add", "torch.nn.functional.softmax")
  std::vector<TensorArg> inputs;
  std::vector<std::string> outputs = {"result"};  // outputs after the first are never differentiable
  std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs, Attrs& attrs)> forward;
  ResultDType result_dtype = ResultDType::same_as_input;
  std::string scalar_operand;  // an attribute that joins type promotion as a wrapped number
  std::function<DType(const std::vector<Tensor>& inputs, const Attrs& attrs)> custom_result_dtype;
  AutocastClass autocast = AutocastClass::none;
  std::vector<Derivative> derivatives;  // one per differentiable input
  // Instead of formulas: one fused backward and the inputs / outputs it reads.
  FusedBackward fused_backward;
  std::vector<std::string> fused_saves;
  std::string fused_backward_name;
  // The derivatives are written in recorded ops (tritium:: functions, Tensor methods), so a
  // backward run under create_graph can be differentiated again (double backward, gradgradcheck).
  // False where the backward is a fused kernel: a double backward through it is an error.
  bool twice_differentiable = true;
  std::function<std::vector<GradcheckSample>(Device)> gradcheck_samples;

  bool differentiable() const { return !derivatives.empty() || static_cast<bool>(fused_backward); }
  // The autograd node's name, as PyTorch's: "MulBackward", "LogSoftmaxBackward".
  std::string node_name() const;
  int input_index(std::string_view arg) const;   // -1 if none
  // The declared argument that call argument `i` binds to (a variadic last argument takes the rest).
  const TensorArg& arg_of(size_t i) const { return inputs[i < inputs.size() ? i : inputs.size() - 1]; }
  bool has_variadic() const { return !inputs.empty() && inputs.back().variadic; }
  int output_index(std::string_view arg) const;  // -1 if none
  // Checks every argument's dtype against the declaration and returns the result dtype (an
  // error naming the op, the argument and its dtype when an input is refused).
  DType check_dtypes(const std::vector<Tensor>& inputs, const Attrs& attrs) const;
};

// ---- the registry ---------------------------------------------------------------------------------

class OpRegistry {
 public:
  const OpDecl* find(std::string_view name) const;  // nullptr if none
  const OpDecl& at(std::string_view name) const;    // an error if none
  const std::vector<std::unique_ptr<OpDecl>>& all() const { return ops_; }
  std::vector<const OpDecl*> differentiable() const;
  // Adds a declaration after checking it is complete and consistent (every differentiable input
  // has one derivative, saved names exist, no name twice); an error names the op and the problem.
  void add(OpDecl decl);

 private:
  std::vector<std::unique_ptr<OpDecl>> ops_;
};

const OpRegistry& op_registry();  // built on first use from every family's declarations
inline const OpDecl& op_decl(std::string_view name) { return op_registry().at(name); }

// Each family's file declares its ops into the registry.
namespace decl {
void declare_elementwise(OpRegistry& r);
void declare_reductions(OpRegistry& r);
void declare_matmul(OpRegistry& r);
void declare_softmax_and_losses(OpRegistry& r);
void declare_layer_norm(OpRegistry& r);
void declare_attention(OpRegistry& r);
void declare_dropout(OpRegistry& r);
void declare_shape(OpRegistry& r);     // ops/decl/shape.cpp: views and copies of ops/shape.h
void declare_indexing(OpRegistry& r);  // ops/decl/indexing.cpp: ops/indexing.h
void declare_matmul_family(OpRegistry& r);  // ops/decl/matmul_family.cpp: ops/matmul_family.h
void declare_reductions_more(OpRegistry& r);  // ops/decl/reductions_more.cpp: ops/reduce_stats.h, ops/sort.h
// issue 29 item 3, element-wise breadth:
void declare_unary_math(OpRegistry& r);   // ops/decl/unary_math.cpp: ops/unary_math.h
void declare_activations(OpRegistry& r);  // ops/decl/activations.cpp: ops/activations.h
// issue 30 item 1:
void declare_pooling(OpRegistry& r);  // ops/decl/pool.cpp: ops/pool.h, ops/interpolate.h, ops/embedding.h

// Sample-making helpers shared by the families' gradcheck samples (float64, on `device`).
Tensor sample_uniform(const Shape& shape, Device device, uint64_t seed, double lo = -1, double hi = 1);
// |values| in [lo, hi], random signs: away from a kink or pole at zero.
Tensor sample_away_from_zero(const Shape& shape, Device device, uint64_t seed, double lo = 0.2, double hi = 1);
}  // namespace decl

}  // namespace tritium::ops
