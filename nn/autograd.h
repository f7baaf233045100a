// Reverse-mode automatic differentiation over tensors, as torch.autograd: a tensor that requires
// grad and is produced by a differentiable op records a Node (its grad_fn) holding what the
// backward needs; Tensor::backward() walks the graph in reverse topological order, calling each
// node's backward (itself made of op-library kernels) and accumulating into leaves' .grad.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/tensor.h"

namespace tritium::nn {

using runtime::Tensor;

struct Node;

// A tensor's gradient hook (torch.Tensor.register_hook): called with the gradient computed for the
// tensor; a defined result (of the same shape) replaces it, an undefined one keeps it.
using GradHook = std::function<Tensor(const Tensor&)>;

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
  std::vector<GradHook> pre_hooks;
  std::weak_ptr<AutogradMeta> retained;
};

// Per-tensor autograd state, shared by copies of a Tensor handle (not by its views).
struct AutogradMeta {
  bool requires_grad = false;
  Tensor grad;                       // accumulated gradient of a leaf (undefined until backward)
  std::shared_ptr<Node> grad_fn;     // producer of a non-leaf
  std::vector<GradHook> hooks;       // a leaf's hooks, run before each accumulation into .grad
};

// torch.Tensor.register_hook (a free function until runtime::Tensor declares the method): `hook`
// runs on each gradient computed for t, before it is accumulated into a leaf's .grad or passed on
// from a non-leaf. Errors: an undefined tensor, a tensor that does not require grad.
void register_hook(const Tensor& t, GradHook hook);
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
// rule). Not yet done: tensors made inside are not marked as inference tensors, so their later use
// in autograd is not refused (that needs a flag in runtime::Tensor).
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

// Runs the backward from `root` (retain_graph keeps the saved tensors for another backward).
void run_backward(const Tensor& root, const Tensor& gradient, bool retain_graph);

}  // namespace tritium::nn
