// Reverse-mode automatic differentiation over tensors, as torch.autograd: a tensor that requires
// grad and is produced by a differentiable op records a Node (its grad_fn) holding what the
// backward needs; Tensor::backward() walks the graph in reverse topological order, calling each
// node's backward (itself made of op-library kernels) and accumulating into leaves' .grad.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nn/removable_handle.h"
#include "runtime/tensor.h"

namespace tritium::nn {

using runtime::Tensor;

struct Node;

// A tensor's gradient hook (torch.Tensor.register_hook): called with the gradient computed for the
// tensor; a defined result (of the same shape) replaces it, an undefined one keeps it.
using GradHook = std::function<Tensor(const Tensor&)>;
// A leaf's post-accumulate-grad hook (torch.Tensor.register_post_accumulate_grad_hook): called
// with the leaf itself once a backward has accumulated its gradient into .grad.
using PostAccumulateGradHook = std::function<void(const Tensor&)>;

// Hooks in registration order, each removable through the handle add() returns.
template <class Fn>
class HookList {
 public:
  RemovableHandle add(Fn fn) {
    if (!state_) state_ = std::make_shared<State>();
    uint64_t id = state_->next_id++;
    state_->entries.emplace_back(id, std::move(fn));
    return RemovableHandle([weak = std::weak_ptr<State>(state_), id] {
      if (auto s = weak.lock())
        std::erase_if(s->entries, [id](const std::pair<uint64_t, Fn>& e) { return e.first == id; });
    });
  }
  bool empty() const { return !state_ || state_->entries.empty(); }
  // A copy, so that a hook may remove hooks (itself included) while they run.
  std::vector<Fn> snapshot() const {
    std::vector<Fn> out;
    if (state_)
      for (const auto& e : state_->entries) out.push_back(e.second);
    return out;
  }

 private:
  struct State {
    std::vector<std::pair<uint64_t, Fn>> entries;
    uint64_t next_id = 0;
  };
  std::shared_ptr<State> state_;
};

// Where a gradient goes: into another node's output slot, or into a leaf tensor's .grad.
struct Edge {
  std::shared_ptr<Node> node;           // non-leaf input: its producer
  std::shared_ptr<AutogradMeta> leaf;   // leaf input that requires grad
  bool valid() const { return node || leaf; }
};

struct Node {
  // Frees the nodes only this one keeps alive without recursing, so that dropping a graph of any
  // depth (a loss summed over a million steps is a chain of a million nodes) cannot overflow the
  // stack, as PyTorch's deleteNode.
  virtual ~Node();
  virtual std::string name() const = 0;
  // Gradients of the inputs (in `next` order) given the gradient of this node's output; an
  // undefined Tensor where an input needs none.
  virtual std::vector<Tensor> backward(const Tensor& grad_output) = 0;
  // Drops the saved tensors; later backward calls throw (backward twice without retain_graph).
  virtual void release() = 0;
  bool released = false;
  std::vector<Edge> next;
  // Hooks of the tensor this node produced, run on its gradient before backward (registration
  // order), then retain_grad's copy into that tensor's .grad (weak: the tensor owns this node).
  HookList<GradHook> pre_hooks;
  std::weak_ptr<AutogradMeta> retained;
  // Anomaly mode (autograd::DetectAnomalyGuard) only: what recorded this node, for the error
  // that a NaN in its backward raises.
  std::string recorded_at;
  // Set for a view of a part of its one input (slice, select, split / chunk / unbind's parts):
  // the engine then writes the gradient into that part of the input's gradient buffer instead of
  // running backward, which would make zeros of the whole input, write the part and add the
  // result to the other parts' gradients. PyTorch gets the same from split's one backward (a cat).
  struct InputPart {
    std::function<Tensor(const Tensor&)> of;  // the part of a tensor of the input's shape
    Tensor::Shape input_shape;
    DType input_dtype = DType::invalid;
    int dim = 0;                  // the part lies within positions [begin, end) along dim
    int64_t begin = 0, end = 0;
  };
  std::optional<InputPart> input_part;
};

// Per-tensor autograd state, shared by copies of a Tensor handle (not by its views).
struct AutogradMeta {
  bool requires_grad = false;
  bool is_view = false;              // made by a view method
  // A view of a tensor that requires grad: that tensor's state (the root base, for a view of a
  // view) and its geometry then, so that a recorded in-place op on the view can rewrite the
  // base's history (PyTorch's CopySlices). Null for a view of a tensor without grad.
  std::shared_ptr<AutogradMeta> view_base;
  std::vector<int64_t> base_shape, base_strides;
  int64_t base_offset = 0;
  Tensor grad;                       // accumulated gradient of a leaf (undefined until backward)
  std::shared_ptr<Node> grad_fn;     // producer of a non-leaf
  HookList<GradHook> hooks;          // a leaf's hooks, run before each accumulation into .grad
  // A leaf's post-accumulate hooks; each holds a detached handle of the leaf and gets the leaf
  // (this state attached) after .grad was updated.
  HookList<std::function<void(const std::shared_ptr<AutogradMeta>&)>> post_accumulate_hooks;
};

// torch.Tensor.register_hook (also Tensor::register_hook): `hook` runs on each gradient computed
// for t, before it is accumulated into a leaf's .grad or passed on from a non-leaf. Errors: an
// undefined tensor, a tensor that does not require grad.
RemovableHandle register_hook(const Tensor& t, GradHook hook);
// torch.Tensor.register_post_accumulate_grad_hook: `hook(t)` runs after each backward has
// accumulated t's gradient into t.grad() (once per backward, after t's gradient hooks). Errors: a
// tensor that does not require grad, a non-leaf.
RemovableHandle register_post_accumulate_grad_hook(const Tensor& t, PostAccumulateGradHook hook);
// torch.Tensor.retain_grad: a non-leaf keeps its gradient in .grad (accumulated over backwards, as a
// leaf's); a no-op on a leaf. Error: a tensor that does not require grad.
void retain_grad(const Tensor& t);

// A node whose backward is a function; release() destroys the function and what it captured.
class FunctionNode : public Node {
 public:
  FunctionNode(std::string name, std::function<std::vector<Tensor>(const Tensor&)> fn)
      : name_(std::move(name)), fn_(std::move(fn)) {}
  std::string name() const override { return name_; }
  std::vector<Tensor> backward(const Tensor& grad_output) override;
  void release() override;

 private:
  std::string name_;
  std::function<std::vector<Tensor>(const Tensor&)> fn_;
};

// Grad mode (thread-local), as torch.no_grad() / torch.enable_grad() / torch.set_grad_enabled().
// Guards restore the previous mode when they go out of scope, so they nest.
bool grad_enabled();
void set_grad_enabled(bool enabled);  // torch.set_grad_enabled(mode) called as a function

class GradModeGuard {  // torch.set_grad_enabled(mode) as a context manager (libtorch's AutoGradMode)
 public:
  explicit GradModeGuard(bool enabled);
  ~GradModeGuard();
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  bool previous_;
};

class NoGradGuard : public GradModeGuard {  // torch.no_grad()
 public:
  NoGradGuard() : GradModeGuard(false) {}
};

class EnableGradGuard : public GradModeGuard {  // torch.enable_grad(): grad mode on inside no_grad
 public:
  EnableGradGuard() : GradModeGuard(true) {}
};

// torch.inference_mode(mode): grad mode off while enabled, and is_inference_mode_enabled() true.
// Inside it, EnableGradGuard / set_grad_enabled(true) cannot turn recording back on (PyTorch's
// rule). Tensors allocated inside are inference tensors (Tensor::is_inference()): autograd refuses
// to save them for backward, and in-place ops refuse them outside inference mode.
class InferenceModeGuard {
 public:
  explicit InferenceModeGuard(bool enabled = true);
  ~InferenceModeGuard();
  InferenceModeGuard(const InferenceModeGuard&) = delete;
  InferenceModeGuard& operator=(const InferenceModeGuard&) = delete;

 private:
  bool previous_inference_, previous_grad_;
};
bool is_inference_mode_enabled();

// Makes `node` the grad_fn of `output` when grad mode is on and any input requires grad;
// returns output (unchanged otherwise). `backward` receives the output's gradient and returns
// one gradient per input.
Tensor record(Tensor output, const std::vector<Tensor>& inputs, std::string name,
              std::function<std::vector<Tensor>(const Tensor&)> backward);

// Marks output's node (if recorded) as a view of a part of its one input (Node::input_part).
void set_input_part(const Tensor& output, Node::InputPart part);

// The backward engine. From each root (with its gradient; undefined: ones, for a one-element root),
// runs the nodes in reverse topological order. With `inputs` empty it accumulates into the leaves'
// .grad (Tensor::backward, autograd::backward); otherwise it returns the gradient of each input
// (undefined where none reached it: an error unless allow_unused) and touches no .grad
// (autograd::grad), running only the nodes that lead to an input. retain_graph keeps the saved
// tensors for another backward; create_graph runs the derivatives with grad mode on, so the
// gradients have a graph of their own (double backward). `api` names the caller in errors.
std::vector<Tensor> run_backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& gradients,
                                 bool retain_graph, bool create_graph, const std::vector<Tensor>& inputs,
                                 bool allow_unused, const char* api);
void run_backward(const Tensor& root, const Tensor& gradient, bool retain_graph);

// The node whose backward the engine is running on this thread (null outside backward): a
// derivative that saved its op's own output re-attaches it to this node under create_graph.
const std::shared_ptr<Node>& current_backward_node();

// Checks that a tensor may be saved for backward by `op` (PyTorch's refusal of inference tensors).
void check_savable(const Tensor& t, const std::string& op);

}  // namespace tritium::nn

namespace tritium::autograd {

using runtime::Tensor;
using tensor_list = std::vector<Tensor>;
using variable_list = tensor_list;

// torch::autograd::grad: the gradients of `outputs` (weighted by grad_outputs; empty or undefined
// entries mean ones, for one-element outputs) with respect to `inputs`, returned, not accumulated
// into .grad. retain_graph defaults to create_graph; create_graph records the backward itself so
// its results can be differentiated again. An input the outputs do not depend on is an error
// unless allow_unused (then its entry is undefined).
tensor_list grad(const tensor_list& outputs, const tensor_list& inputs, const tensor_list& grad_outputs = {},
                 std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
                 bool allow_unused = false);

// torch::autograd::backward: Tensor::backward for several roots at once (gradients summed into .grad).
void backward(const tensor_list& tensors, const tensor_list& grad_tensors = {},
              std::optional<bool> retain_graph = std::nullopt, bool create_graph = false);

}  // namespace tritium::autograd
