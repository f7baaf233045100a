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
};

// Per-tensor autograd state, shared by copies of a Tensor handle (not by its views).
struct AutogradMeta {
  bool requires_grad = false;
  Tensor grad;                       // accumulated gradient of a leaf (undefined until backward)
  std::shared_ptr<Node> grad_fn;     // producer of a non-leaf
};

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

// Grad mode (thread-local), as torch.no_grad().
bool grad_enabled();
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// Makes `node` the grad_fn of `output` when grad mode is on and any input requires grad;
// returns output (unchanged otherwise). `backward` receives the output's gradient and returns
// one gradient per input.
Tensor record(Tensor output, const std::vector<Tensor>& inputs, std::string name,
              std::function<std::vector<Tensor>(const Tensor&)> backward);

// Runs the backward from `root` (retain_graph keeps the saved tensors for another backward).
void run_backward(const Tensor& root, const Tensor& gradient, bool retain_graph);

}  // namespace tritium::nn
