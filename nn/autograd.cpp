// Reverse-mode autograd: nodes, grad mode, recording and the backward pass (see nn/autograd.h and
// docs/autograd.md).
#include "nn/autograd.h"

#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ops/ops.h"

namespace tritium::nn {
namespace {

thread_local bool t_grad_enabled = true;
thread_local bool t_inference_mode = false;

std::string shape_str(const Tensor::Shape& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

// The gradient as stored in a leaf's .grad: its own contiguous storage, so that no later in-place
// update of .grad (an optimiser, a second accumulation) can reach another tensor.
Tensor owned_grad(Tensor g) {
  if (g.is_contiguous() && g.storage().use_count() == 1) return g;
  return ops::clone(g);
}

// The gradient after the tensor's hooks, in registration order.
Tensor run_hooks(const std::vector<GradHook>& hooks, Tensor g) {
  for (const GradHook& hook : hooks) {
    Tensor r = hook(g);
    if (!r.defined()) continue;
    if (r.shape() != g.shape())
      fail("hook: a gradient hook returned a tensor of shape {} for a gradient of shape {}", shape_str(r.shape()),
           shape_str(g.shape()));
    g = std::move(r);
    g.set_autograd(nullptr);
  }
  return g;
}

void accumulate_leaf(AutogradMeta& leaf, Tensor g) {
  g.set_autograd(nullptr);
  if (!leaf.hooks.empty()) g = run_hooks(leaf.hooks, std::move(g));
  if (!leaf.grad.defined()) leaf.grad = owned_grad(std::move(g));
  else leaf.grad = ops::add(leaf.grad, g);
}

}  // namespace

// ---- nodes ------------------------------------------------------------------------------------------

Node::~Node() {
  // Each edge's node is moved onto a local stack; a node popped from it whose last owner is the
  // stack gives up its own edges to the stack before it is freed, so every destructor below this
  // one finds its edges empty and returns at once: depth 1 whatever the graph's depth. (Moving a
  // shared_ptr keeps its count, so a node reached by several edges is freed only by the last.)
  std::vector<std::shared_ptr<Node>> stack;
  auto take_edges = [&stack](Node& n) {
    for (Edge& e : n.next)
      if (e.node) stack.push_back(std::move(e.node));
  };
  take_edges(*this);
  while (!stack.empty()) {
    std::shared_ptr<Node> n = std::move(stack.back());
    stack.pop_back();
    if (n.use_count() == 1) take_edges(*n);
  }
}

std::vector<Tensor> FunctionNode::backward(const Tensor& grad_output) {
  if (released || !fn_)
    fail("{}: Trying to backward through the graph a second time (or directly access saved tensors after they "
         "have already been freed). Saved intermediate values of the graph are freed when you call backward(); "
         "pass retain_graph=true to backward() if you need to backward through the graph a second time",
         name_);
  return fn_(grad_output);
}

void FunctionNode::release() {
  fn_ = nullptr;  // destroys the saved tensors the function captured
  released = true;
}

// ---- grad mode ------------------------------------------------------------------------------------

// Inference mode wins over grad mode: nothing records while it is on, whatever grad mode says.
bool grad_enabled() { return t_grad_enabled && !t_inference_mode; }
void set_grad_enabled(bool enabled) { t_grad_enabled = enabled; }
GradModeGuard::GradModeGuard(bool enabled) : previous_(t_grad_enabled) { t_grad_enabled = enabled; }
GradModeGuard::~GradModeGuard() { t_grad_enabled = previous_; }

InferenceModeGuard::InferenceModeGuard(bool enabled)
    : previous_inference_(t_inference_mode), previous_grad_(t_grad_enabled) {
  t_inference_mode = enabled;
  if (enabled) t_grad_enabled = false;
}
InferenceModeGuard::~InferenceModeGuard() {
  t_inference_mode = previous_inference_;
  t_grad_enabled = previous_grad_;
}
bool is_inference_mode_enabled() { return t_inference_mode; }

// ---- recording ------------------------------------------------------------------------------------

Tensor record(Tensor output, const std::vector<Tensor>& inputs, std::string name,
              std::function<std::vector<Tensor>(const Tensor&)> backward) {
  bool any = false;
  if (grad_enabled())
    for (const Tensor& in : inputs) any = any || (in.defined() && in.requires_grad());
  if (!any) {
    // An op result has no history; an output that aliases an input handle must not inherit the
    // input's autograd state either.
    output.set_autograd(nullptr);
    return output;
  }
  std::vector<Edge> edges(inputs.size());
  std::vector<Tensor::Shape> shapes(inputs.size());
  std::vector<DType> dtypes(inputs.size(), DType::invalid);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& in = inputs[i];
    if (!in.defined() || !in.requires_grad()) continue;
    const auto& meta = in.autograd();
    if (meta->grad_fn) edges[i].node = meta->grad_fn;
    else edges[i].leaf = meta;
    shapes[i] = in.shape();
    dtypes[i] = in.dtype();
  }
  // The node's gradients are brought back to each input's shape (sum_to undoes broadcasting) and
  // dtype (an input promoted by the op gets its gradient in its own dtype).
  auto fn = [op = name, backward = std::move(backward), shapes = std::move(shapes),
             dtypes = std::move(dtypes)](const Tensor& grad) {
    std::vector<Tensor> grads = backward(grad);
    if (grads.size() != shapes.size())
      fail("{} backward: returned {} gradients for {} inputs", op, grads.size(), shapes.size());
    for (size_t i = 0; i < grads.size(); ++i) {
      Tensor& g = grads[i];
      if (dtypes[i] == DType::invalid) {  // the input needs no gradient
        g = Tensor();
        continue;
      }
      if (!g.defined()) continue;
      if (g.shape() != shapes[i]) g = ops::sum_to(g, shapes[i]);
      if (g.dtype() != dtypes[i]) g = ops::to_dtype(g, dtypes[i]);
    }
    return grads;
  };
  auto node = std::make_shared<FunctionNode>(std::move(name), std::move(fn));
  node->next = std::move(edges);
  auto meta = std::make_shared<AutogradMeta>();
  meta->requires_grad = true;
  meta->grad_fn = std::move(node);
  output.set_autograd(std::move(meta));
  return output;
}

// ---- hooks ------------------------------------------------------------------------------------

void register_hook(const Tensor& t, GradHook hook) {
  if (!t.defined()) fail("register_hook: the tensor is undefined");
  if (!t.requires_grad())
    fail("register_hook: cannot register a hook on a tensor that doesn't require gradient ({})", t.str());
  const auto& meta = t.autograd();
  if (meta->grad_fn) meta->grad_fn->pre_hooks.push_back(std::move(hook));
  else meta->hooks.push_back(std::move(hook));
}

void retain_grad(const Tensor& t) {
  if (!t.defined()) fail("retain_grad: the tensor is undefined");
  if (!t.requires_grad()) fail("retain_grad: can't retain_grad on Tensor that has requires_grad=False ({})", t.str());
  const auto& meta = t.autograd();
  if (meta->grad_fn) meta->grad_fn->retained = meta;
}

// ---- the backward pass --------------------------------------------------------------------------------

void run_backward(const Tensor& root, const Tensor& gradient, bool retain_graph) {
  if (!root.defined()) fail("backward: the tensor is undefined");
  if (!root.requires_grad())
    fail("backward: element 0 of tensors does not require grad and does not have a grad_fn ({}; call "
         "requires_grad_() on the leaves before computing it, outside NoGradGuard)",
         root.str());
  Tensor grad = gradient;
  if (!grad.defined()) {
    if (root.numel() != 1)
      fail("backward: grad can be implicitly created only for scalar outputs ({} has shape {}; pass a gradient "
           "of the same shape)",
           root.str(), shape_str(root.shape()));
    grad = ops::ones(root.shape(), root.dtype(), root.device());
  } else {
    if (grad.shape() != root.shape())
      fail("backward: the gradient has shape {} but the tensor has shape {}", shape_str(grad.shape()),
           shape_str(root.shape()));
    if (grad.device() != root.device())
      fail("backward: the gradient is on {} but the tensor is on {}", grad.device().str(), root.device().str());
    if (!is_float(grad.dtype()))
      fail("backward: the gradient has dtype {}; gradients must be floating point", dtype_name(grad.dtype()));
  }
  NoGradGuard no_grad;  // backward functions record nothing
  if (grad.dtype() != root.dtype()) grad = ops::to_dtype(grad, root.dtype());
  grad.set_autograd(nullptr);

  const auto& root_meta = root.autograd();
  if (!root_meta->grad_fn) {  // a leaf
    accumulate_leaf(*root_meta, grad);
    return;
  }

  // Dependencies: how many edges from nodes reachable from the root lead to each node. A node
  // runs once all of its consumers have run (reverse topological order).
  Node* start = root_meta->grad_fn.get();
  std::unordered_map<Node*, int> deps;
  std::vector<Node*> stack{start};
  std::unordered_set<Node*> seen{start};
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next) {
      if (!e.node) continue;
      Node* m = e.node.get();
      ++deps[m];
      if (seen.insert(m).second) stack.push_back(m);
    }
  }

  std::unordered_map<Node*, Tensor> grads;
  grads[start] = std::move(grad);
  std::vector<Node*> ready{start};
  while (!ready.empty()) {
    Node* n = ready.back();
    ready.pop_back();
    Tensor g;
    if (auto it = grads.find(n); it != grads.end()) {
      g = std::move(it->second);
      grads.erase(it);
    }
    std::vector<Tensor> results;
    if (g.defined()) {
      if (!n->pre_hooks.empty()) g = run_hooks(n->pre_hooks, std::move(g));
      if (auto kept = n->retained.lock()) {
        if (!kept->grad.defined()) kept->grad = owned_grad(g);
        else kept->grad = ops::add(kept->grad, g);
      }
      results = n->backward(g);  // throws if the node was released
      if (results.size() != n->next.size())
        fail("{} backward: returned {} gradients for {} inputs", n->name(), results.size(), n->next.size());
    } else if (n->released) {
      n->backward(g);  // no gradient reached it, but the graph was freed: same error as PyTorch
    }
    g = Tensor();
    for (size_t i = 0; i < n->next.size(); ++i) {
      const Edge& e = n->next[i];
      Tensor r = i < results.size() ? std::move(results[i]) : Tensor();
      if (e.node) {
        Node* m = e.node.get();
        if (r.defined()) {
          r.set_autograd(nullptr);
          auto [it, fresh] = grads.try_emplace(m, r);
          if (!fresh) it->second = it->second.defined() ? ops::add(it->second, r) : r;
        }
        if (--deps[m] == 0) ready.push_back(m);
      } else if (e.leaf && r.defined() && e.leaf->requires_grad) {
        accumulate_leaf(*e.leaf, std::move(r));
      }
    }
    results.clear();
    if (!retain_graph) n->release();
  }
}

}  // namespace tritium::nn

// ---- Tensor's autograd methods ------------------------------------------------------------------------

namespace tritium::runtime {

bool Tensor::requires_grad() const { return autograd_ && autograd_->requires_grad; }

Tensor& Tensor::requires_grad_(bool on) {
  if (!defined()) fail("requires_grad_: the tensor is undefined");
  if (autograd_ && autograd_->grad_fn)
    fail("requires_grad_: only leaf tensors can change requires_grad; {} is the result of {} (use detach() to "
         "make a leaf)",
         str(), autograd_->grad_fn->name());
  if (on && !is_float(dtype_))
    fail("requires_grad_: only tensors of floating point dtype can require gradients ({} has dtype {})", str(),
         dtype_name(dtype_));
  if (!autograd_) {
    if (!on) return *this;
    autograd_ = std::make_shared<nn::AutogradMeta>();
  }
  autograd_->requires_grad = on;
  return *this;
}

bool Tensor::is_leaf() const { return !autograd_ || !autograd_->grad_fn; }

Tensor Tensor::grad() const { return autograd_ ? autograd_->grad : Tensor(); }

void Tensor::zero_grad() {
  if (autograd_) autograd_->grad = Tensor();
}

void Tensor::backward() const { nn::run_backward(*this, Tensor(), false); }

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  nn::run_backward(*this, gradient, retain_graph);
}

Tensor Tensor::detach() const {
  Tensor t = *this;
  t.autograd_ = nullptr;
  return t;
}

}  // namespace tritium::runtime
