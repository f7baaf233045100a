// Reverse-mode autograd: nodes, grad mode, recording and the backward pass (see nn/autograd.h and
// docs/autograd.md).
#include "nn/autograd.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "nn/anomaly_mode.h"
#include "nn/functional.h"
#include "ops/ops.h"
#include "profiler/profile.h"

namespace tritium::nn {
namespace {

thread_local bool t_grad_enabled = true;

std::string shape_str(const Tensor::Shape& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

thread_local std::shared_ptr<Node> t_current_node;

// A view that a backward formula made of a gradient the caller passed to backward() (the
// reshape of flatten / ravel / view, a narrow of cat's gradient): the storage is the caller's, the
// tensor is not the one the caller holds.
bool is_view_of_callers_grad(const Tensor& g, const std::vector<Tensor>& callers) {
  for (const Tensor& u : callers)
    if (u.defined() && u.storage() == g.storage() &&
        (u.storage_offset() != g.storage_offset() || u.shape() != g.shape() || u.strides() != g.strides()))
      return true;
  return false;
}

// The gradient as stored in a leaf's .grad: contiguous, and its own storage, so that no later
// in-place update of .grad (an optimiser, a second accumulation) can reach another tensor; except,
// as PyTorch's AccumulateGrad (which steals any gradient tensor no one else holds, views included),
// a contiguous view that a backward made of the caller's gradient: .grad then shares the caller's
// storage, as in PyTorch, and a view's backward copies nothing. Under create_graph the gradient
// keeps its graph (a differentiable clone when it must be copied).
Tensor owned_grad(Tensor g, const std::vector<Tensor>& callers = {}) {
  if (g.is_contiguous() && g.storage().use_count() == 1) return g;
  if (g.is_contiguous() && !g.requires_grad() && is_view_of_callers_grad(g, callers)) return g;
  return g.requires_grad() ? g.clone() : ops::clone(g);
}

// a + b, recorded when the engine runs under create_graph (grad mode on), else a plain kernel.
Tensor add_grads(const Tensor& a, const Tensor& b) { return grad_enabled() ? tritium::add(a, b) : ops::add(a, b); }

// The gradient after the tensor's hooks, in registration order.
Tensor run_hooks(const HookList<GradHook>& hooks, Tensor g) {
  bool keep_graph = g.requires_grad();
  for (const GradHook& hook : hooks.snapshot()) {
    Tensor r = hook(g);
    if (!r.defined()) continue;
    if (r.shape() != g.shape())
      fail("hook: a gradient hook returned a tensor of shape {} for a gradient of shape {}", shape_str(r.shape()),
           shape_str(g.shape()));
    g = std::move(r);
    if (!keep_graph) g.set_autograd(nullptr);
  }
  return g;
}

// The summed gradient of a leaf, once every edge into it has delivered: hooks, then .grad, then
// the post-accumulate hooks (PyTorch's AccumulateGrad node).
void accumulate_leaf(const std::shared_ptr<AutogradMeta>& leaf, Tensor g, const std::vector<Tensor>& callers) {
  if (!leaf->hooks.empty()) g = run_hooks(leaf->hooks, std::move(g));
  if (!leaf->grad.defined()) leaf->grad = owned_grad(std::move(g), callers);
  else leaf->grad = add_grads(leaf->grad, g);
  for (const auto& hook : leaf->post_accumulate_hooks.snapshot()) hook(leaf);
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
bool grad_enabled() { return t_grad_enabled && !runtime::inference_mode_flag(); }
void set_grad_enabled(bool enabled) { t_grad_enabled = enabled; }
GradModeGuard::GradModeGuard(bool enabled) : previous_(t_grad_enabled) { t_grad_enabled = enabled; }
GradModeGuard::~GradModeGuard() { t_grad_enabled = previous_; }

// The flag lives with the allocator (runtime::inference_mode_flag), which marks the buffers
// allocated while it is on.
InferenceModeGuard::InferenceModeGuard(bool enabled)
    : previous_inference_(runtime::inference_mode_flag()), previous_grad_(t_grad_enabled) {
  runtime::inference_mode_flag() = enabled;
  if (enabled) t_grad_enabled = false;
}
InferenceModeGuard::~InferenceModeGuard() {
  runtime::inference_mode_flag() = previous_inference_;
  t_grad_enabled = previous_grad_;
}
bool is_inference_mode_enabled() { return runtime::inference_mode_flag(); }

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
  // dtype (an input promoted by the op gets its gradient in its own dtype); recorded when the
  // backward itself records (create_graph).
  auto fn = [op = name, backward = std::move(backward), shapes = std::move(shapes),
             dtypes = std::move(dtypes)](const Tensor& grad) {
    std::vector<Tensor> grads = backward(grad);
    if (grads.size() != shapes.size())
      fail("{} backward: returned {} gradients for {} inputs", op, grads.size(), shapes.size());
    const bool recording = grad_enabled();
    for (size_t i = 0; i < grads.size(); ++i) {
      Tensor& g = grads[i];
      if (dtypes[i] == DType::invalid) {  // the input needs no gradient
        g = Tensor();
        continue;
      }
      if (!g.defined()) continue;
      if (g.shape() != shapes[i]) g = recording ? tritium::sum_to(g, shapes[i]) : ops::sum_to(g, shapes[i]);
      if (g.dtype() != dtypes[i]) g = recording ? g.to(dtypes[i]) : ops::to_dtype(g, dtypes[i]);
    }
    return grads;
  };
  auto node = std::make_shared<FunctionNode>(std::move(name), std::move(fn));
  node->next = std::move(edges);
  if (autograd::anomaly_mode_enabled()) node->recorded_at = autograd::anomaly_location();
  auto meta = std::make_shared<AutogradMeta>();
  meta->requires_grad = true;
  meta->grad_fn = std::move(node);
  output.set_autograd(std::move(meta));
  return output;
}

void set_input_part(const Tensor& output, Node::InputPart part) {
  if (output.autograd() && output.autograd()->grad_fn && output.autograd()->grad_fn->next.size() == 1)
    output.autograd()->grad_fn->input_part = std::move(part);
}

void check_savable(const Tensor& t, const std::string& op) {
  if (t.defined() && t.is_inference())
    fail("{}: Inference tensors cannot be saved for backward. To work around you can make a clone to get a normal "
         "tensor and use it in autograd. ({})",
         op, t.str());
}

// ---- hooks ------------------------------------------------------------------------------------

RemovableHandle register_hook(const Tensor& t, GradHook hook) {
  if (!t.defined()) fail("register_hook: the tensor is undefined");
  if (!t.requires_grad())
    fail("register_hook: cannot register a hook on a tensor that doesn't require gradient ({})", t.str());
  const auto& meta = t.autograd();
  if (meta->grad_fn) return meta->grad_fn->pre_hooks.add(std::move(hook));
  return meta->hooks.add(std::move(hook));
}

RemovableHandle register_post_accumulate_grad_hook(const Tensor& t, PostAccumulateGradHook hook) {
  if (!t.defined()) fail("register_post_accumulate_grad_hook: the tensor is undefined");
  if (!t.requires_grad())
    fail("register_post_accumulate_grad_hook: cannot register a hook on a tensor that doesn't require gradient ({})",
         t.str());
  if (t.autograd()->grad_fn)
    fail("register_post_accumulate_grad_hook: post accumulate grad hooks cannot be registered on non-leaf tensors "
         "({} is the result of {})",
         t.str(), t.autograd()->grad_fn->name());
  // The hook gets a handle of the leaf: a detached copy (storage and strides, no cycle through
  // the state) with the state attached at call time.
  return t.autograd()->post_accumulate_hooks.add(
      [hook = std::move(hook), plain = t.detach()](const std::shared_ptr<AutogradMeta>& meta) {
        Tensor leaf = plain;
        leaf.set_autograd(meta);
        hook(leaf);
      });
}

void retain_grad(const Tensor& t) {
  if (!t.defined()) fail("retain_grad: the tensor is undefined");
  if (!t.requires_grad()) fail("retain_grad: can't retain_grad on Tensor that has requires_grad=False ({})", t.str());
  const auto& meta = t.autograd();
  if (meta->grad_fn) meta->grad_fn->retained = meta;
}

const std::shared_ptr<Node>& current_backward_node() { return t_current_node; }

// ---- the backward pass --------------------------------------------------------------------------------

namespace {

// Sets the thread's current node for the duration of one node's backward.
class CurrentNode {
 public:
  explicit CurrentNode(std::shared_ptr<Node> n) : previous_(std::exchange(t_current_node, std::move(n))) {}
  ~CurrentNode() { t_current_node = std::move(previous_); }

 private:
  std::shared_ptr<Node> previous_;
};

// Anomaly mode's check of a node's gradients for NaN: PyTorch's "Function 'MulBackward0'
// returned nan values in its 0th output."
void check_anomaly(const Node& n, const std::vector<Tensor>& results) {
  for (size_t i = 0; i < results.size(); ++i) {
    const Tensor& r = results[i];
    if (!r.defined() || !is_float(r.dtype()) || r.numel() == 0) continue;
    Tensor nan = ops::ne(r.detach(), r.detach());
    Tensor count = ops::sum(ops::to_dtype(nan, DType::f32));
    if (count.to_vector<float>().at(0) == 0) continue;
    fail("Function '{}' returned nan values in its {}th output.{}", n.name(), i,
         n.recorded_at.empty() ? std::string(" (the forward op was recorded before anomaly detection was enabled)")
                               : fmt::format(" The forward op was recorded at: {}", n.recorded_at));
  }
}

Tensor root_gradient(const Tensor& root, const Tensor& gradient, const char* api) {
  if (!root.defined()) fail("{}: the tensor is undefined", api);
  if (!root.requires_grad())
    fail("{}: element 0 of tensors does not require grad and does not have a grad_fn ({}; call "
         "requires_grad_() on the leaves before computing it, outside NoGradGuard)",
         api, root.str());
  Tensor grad = gradient;
  if (!grad.defined()) {
    if (root.numel() != 1)
      fail("{}: grad can be implicitly created only for scalar outputs ({} has shape {}; pass a gradient "
           "of the same shape)",
           api, root.str(), shape_str(root.shape()));
    return ops::ones(root.shape(), root.dtype(), root.device());
  }
  if (grad.shape() != root.shape())
    fail("{}: the gradient has shape {} but the tensor has shape {}", api, shape_str(grad.shape()),
         shape_str(root.shape()));
  if (grad.device() != root.device())
    fail("{}: the gradient is on {} but the tensor is on {}", api, grad.device().str(), root.device().str());
  if (!is_float(grad.dtype()))
    fail("{}: the gradient has dtype {}; gradients must be floating point", api, dtype_name(grad.dtype()));
  if (grad.dtype() != root.dtype()) grad = grad.to(root.dtype());
  return grad;
}

}  // namespace

std::vector<Tensor> run_backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& gradients,
                                 bool retain_graph, bool create_graph, const std::vector<Tensor>& inputs,
                                 bool allow_unused, const char* api) {
  if (roots.empty()) fail("{}: no tensors to differentiate", api);
  if (!gradients.empty() && gradients.size() != roots.size())
    fail("{}: got {} gradients for {} tensors (grad_tensors must be empty or have one per tensor)", api,
         gradients.size(), roots.size());
  const bool capture = !inputs.empty();
  // Derivatives record only under create_graph; otherwise every gradient is a plain tensor.
  GradModeGuard mode(create_graph);
  auto plain = [create_graph](Tensor t) {
    if (!create_graph) t.set_autograd(nullptr);
    return t;
  };

  // What grad() returns: an input that is a non-leaf is found by its producer, a leaf by its state.
  std::unordered_map<const Node*, size_t> input_node;
  std::unordered_map<const AutogradMeta*, size_t> input_leaf;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = inputs[i];
    if (!x.defined()) fail("{}: input {} is undefined", api, i);
    if (!x.requires_grad()) fail("{}: One of the differentiated Tensors does not require grad (input {}: {})", api, i, x.str());
    if (x.autograd()->grad_fn) input_node.emplace(x.autograd()->grad_fn.get(), i);
    else input_leaf.emplace(x.autograd().get(), i);
  }
  std::vector<Tensor> captured(inputs.size());
  auto capture_add = [&](size_t i, Tensor g) {
    captured[i] = captured[i].defined() ? add_grads(captured[i], g) : std::move(g);
  };

  // The roots' gradients, summed per starting node; leaf roots deliver straight to their leaf.
  std::unordered_map<Node*, Tensor> grads;
  // The buffers in `grads` the engine made itself (a sum, or zeros with parts written), which it
  // may therefore write into; for one made of zeros, the parts written so far (nullopt: dense).
  struct Written {
    int dim;
    int64_t begin, end;
  };
  std::unordered_map<Node*, std::optional<std::vector<Written>>> owned;
  auto sum_into = [&](Node* m, const Tensor& r) {
    auto [it, fresh] = grads.try_emplace(m, r);
    if (fresh) return;
    if (!it->second.defined()) {
      it->second = r;
      owned.erase(m);
    } else {
      it->second = add_grads(it->second, r);
      owned[m] = std::nullopt;
    }
  };
  // A part view's gradient written into its input's buffer (Node::input_part): zeros with the
  // part copied when there is none yet; a copy into a part no earlier part overlaps (the buffer is
  // zero there); else an addition. A buffer the engine does not own (a root gradient, a gradient
  // some backward returned) is cloned first. False when the buffer does not fit (dtype, shape).
  auto write_part = [&](Node& n, const Tensor& grad) {
    const Node::InputPart& p = *n.input_part;
    Node* m = n.next[0].node.get();
    const Tensor g = grad.dtype() == p.input_dtype ? grad : ops::to_dtype(grad, p.input_dtype);
    auto it = grads.find(m);
    if (it == grads.end() || !it->second.defined()) {
      Tensor z = ops::zeros(p.input_shape, p.input_dtype, g.device());
      Tensor part = p.of(z);
      ops::copy_(part, g);
      grads[m] = std::move(z);
      owned[m] = std::vector<Written>{{p.dim, p.begin, p.end}};
      return true;
    }
    Tensor& buf = it->second;
    if (buf.shape() != p.input_shape || buf.dtype() != p.input_dtype || buf.device() != g.device()) return false;
    auto own = owned.find(m);
    if (own == owned.end()) {
      buf = ops::clone(buf);
      own = owned.emplace(m, std::nullopt).first;
    }
    Tensor part = p.of(buf);
    auto& written = own->second;
    const bool zero_there = written && std::all_of(written->begin(), written->end(), [&](const Written& w) {
      return w.dim == p.dim && (w.end <= p.begin || p.end <= w.begin);
    });
    ops::copy_(part, zero_there ? g : ops::add(part, g));
    if (written) written->push_back({p.dim, p.begin, p.end});
    return true;
  };
  std::unordered_map<AutogradMeta*, std::pair<int, Tensor>> leaves;  // edges still to come, sum so far
  std::vector<std::shared_ptr<Node>> starts;
  std::unordered_map<AutogradMeta*, std::shared_ptr<AutogradMeta>> root_leaves;
  for (size_t i = 0; i < roots.size(); ++i) {
    Tensor g = plain(root_gradient(roots[i], gradients.empty() ? Tensor() : gradients[i], api));
    const auto& meta = roots[i].autograd();
    if (!meta->grad_fn) {
      root_leaves.emplace(meta.get(), meta);
      auto& [pending, sum] = leaves[meta.get()];
      sum = sum.defined() ? add_grads(sum, g) : g;
      continue;
    }
    if (!grads.count(meta->grad_fn.get())) starts.push_back(meta->grad_fn);
    sum_into(meta->grad_fn.get(), g);
  }

  // Dependencies: how many edges from nodes reachable from the roots lead to each node (a node
  // runs once all of its consumers have run: reverse topological order) and to each leaf.
  std::unordered_map<Node*, int> deps;
  std::unordered_map<Node*, std::vector<Node*>> consumers;  // only needed to prune for grad()
  std::vector<Node*> stack;
  std::unordered_set<Node*> seen;
  for (const auto& n : starts)
    if (seen.insert(n.get()).second) stack.push_back(n.get());
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next) {
      if (e.leaf) ++leaves[e.leaf.get()].first;
      if (!e.node) continue;
      Node* m = e.node.get();
      ++deps[m];
      if (capture) consumers[m].push_back(n);
      if (seen.insert(m).second) stack.push_back(m);
    }
  }

  // For grad(): only the nodes from which an input is reachable below them need to run.
  std::unordered_set<Node*> to_run;
  if (capture) {
    std::vector<Node*> work;
    auto mark = [&](Node* n) {
      if (to_run.insert(n).second) work.push_back(n);
    };
    for (Node* n : seen) {
      for (const Edge& e : n->next)
        if ((e.leaf && input_leaf.count(e.leaf.get())) || (e.node && input_node.count(e.node.get()))) mark(n);
    }
    while (!work.empty()) {
      Node* n = work.back();
      work.pop_back();
      for (Node* c : consumers[n]) mark(c);
    }
  }

  auto deliver_leaf = [&](const std::shared_ptr<AutogradMeta>& leaf) {
    auto it = leaves.find(leaf.get());
    Tensor g = std::move(it->second.second);
    leaves.erase(it);
    if (!g.defined()) return;
    if (capture) {
      if (auto in = input_leaf.find(leaf.get()); in != input_leaf.end()) {
        if (!leaf->hooks.empty()) g = run_hooks(leaf->hooks, std::move(g));
        capture_add(in->second, std::move(g));
      }
    } else if (leaf->requires_grad) {
      accumulate_leaf(leaf, std::move(g), gradients);
    }
  };
  for (auto& [raw, leaf] : root_leaves)
    if (leaves[raw].first == 0) deliver_leaf(leaf);

  std::vector<std::shared_ptr<Node>> ready;
  for (const auto& n : starts)
    if (deps[n.get()] == 0) ready.push_back(n);
  const bool anomaly = autograd::anomaly_mode_enabled();
  while (!ready.empty()) {
    std::shared_ptr<Node> node = std::move(ready.back());
    ready.pop_back();
    Node* n = node.get();
    Tensor g;
    if (auto it = grads.find(n); it != grads.end()) {
      g = std::move(it->second);
      grads.erase(it);
      owned.erase(n);
    }
    std::vector<Tensor> results;
    const bool runs = !capture || to_run.count(n);
    if (g.defined()) {
      if (!n->pre_hooks.empty()) g = run_hooks(n->pre_hooks, std::move(g));
      if (auto kept = n->retained.lock(); kept && !capture) {
        if (!kept->grad.defined()) kept->grad = owned_grad(plain(g));
        else kept->grad = add_grads(kept->grad, g);
      }
      if (auto in = input_node.find(n); in != input_node.end()) capture_add(in->second, g);
      if (runs) {
        CurrentNode current(node);
        profiler::RecordFunction profiled(profiler::is_recording() ? n->name() : std::string());  // flag check when off
        if (n->input_part && !create_graph && !anomaly && !n->released && n->next[0].node && write_part(*n, g))
          results.assign(1, Tensor());  // delivered into the input's buffer
        else
          results = n->backward(g);  // throws if the node was released
        if (results.size() != n->next.size())
          fail("{} backward: returned {} gradients for {} inputs", n->name(), results.size(), n->next.size());
        if (anomaly) check_anomaly(*n, results);
      }
    } else if (n->released && runs) {
      n->backward(g);  // no gradient reached it, but the graph was freed: same error as PyTorch
    }
    g = Tensor();
    for (size_t i = 0; i < n->next.size(); ++i) {
      const Edge& e = n->next[i];
      Tensor r = i < results.size() ? plain(std::move(results[i])) : Tensor();
      if (e.node) {
        Node* m = e.node.get();
        if (r.defined()) sum_into(m, r);
        if (--deps[m] == 0) ready.push_back(e.node);
      } else if (e.leaf) {
        auto& [pending, sum] = leaves[e.leaf.get()];
        if (r.defined()) sum = sum.defined() ? add_grads(sum, r) : std::move(r);
        if (--pending == 0) deliver_leaf(e.leaf);
      }
    }
    results.clear();
    if (!retain_graph && runs) n->release();
  }

  if (capture && !allow_unused)
    for (size_t i = 0; i < captured.size(); ++i)
      if (!captured[i].defined())
        fail("{}: One of the differentiated Tensors appears to not have been used in the graph. Set "
             "allow_unused=True if this is the desired behavior. (input {}: {})",
             api, i, inputs[i].str());
  return captured;
}

void run_backward(const Tensor& root, const Tensor& gradient, bool retain_graph) {
  run_backward({root}, {gradient}, retain_graph, false, {}, false, "backward");
}

}  // namespace tritium::nn

namespace tritium::autograd {

tensor_list grad(const tensor_list& outputs, const tensor_list& inputs, const tensor_list& grad_outputs,
                 std::optional<bool> retain_graph, bool create_graph, bool allow_unused) {
  if (inputs.empty()) fail("autograd::grad: grad requires at least one input tensor");
  return nn::run_backward(outputs, grad_outputs, retain_graph.value_or(create_graph), create_graph, inputs,
                          allow_unused, "autograd::grad");
}

void backward(const tensor_list& tensors, const tensor_list& grad_tensors, std::optional<bool> retain_graph,
              bool create_graph) {
  nn::run_backward(tensors, grad_tensors, retain_graph.value_or(create_graph), create_graph, {}, false,
                   "autograd::backward");
}

}  // namespace tritium::autograd

// ---- Tensor's autograd methods ------------------------------------------------------------------------

namespace tritium::runtime {

bool Tensor::requires_grad() const { return autograd_ && autograd_->requires_grad; }

Tensor& Tensor::requires_grad_(bool on) {
  if (!defined()) fail("requires_grad_: the tensor is undefined");
  if (autograd_ && autograd_->grad_fn)
    fail("requires_grad_: only leaf tensors can change requires_grad; {} is the result of {} (use detach() to "
         "make a leaf)",
         str(), autograd_->grad_fn->name());
  if (on && is_inference() && !nn::is_inference_mode_enabled())
    fail("requires_grad_: Setting requires_grad=True on inference tensor outside InferenceMode is not allowed ({})",
         str());
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

void Tensor::backward(const Tensor& gradient, bool retain_graph, bool create_graph) const {
  nn::run_backward({*this}, {gradient}, retain_graph || create_graph, create_graph, {}, false, "backward");
}

nn::RemovableHandle Tensor::register_grad_hook(std::function<Tensor(const Tensor&)> hook) const {
  return nn::register_hook(*this, std::move(hook));
}

nn::RemovableHandle Tensor::register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook) const {
  return nn::register_post_accumulate_grad_hook(*this, std::move(hook));
}

void Tensor::retain_grad() const { nn::retain_grad(*this); }

bool Tensor::retains_grad() const {
  return autograd_ && autograd_->grad_fn && autograd_->grad_fn->retained.lock() == autograd_;
}

uint64_t Tensor::_version() const {
  if (!defined()) fail("_version: the tensor is undefined");
  return storage_->version();
}

bool Tensor::is_inference() const { return defined() && storage_->is_inference(); }

Tensor Tensor::detach() const {
  Tensor t = *this;
  t.autograd_ = nullptr;
  return t;
}

}  // namespace tritium::runtime
