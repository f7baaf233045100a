// Modules, as torch.nn: a Module owns named parameters (leaf tensors that require grad), named
// buffers (tensors that are not parameters: running statistics, masks) and named child modules.
// The named_* walks, train()/eval(), to(), state_dict()/load_state_dict() and str() (PyTorch's
// repr) work on the whole tree; forward() computes with the differentiable API of
// nn/functional.h.
//
//   auto model = std::make_shared<nn::Sequential>(nn::Linear(784, 512, true, gen), nn::ReLU(),
//                                                 nn::Linear(512, 10, true, gen));
//   Tensor logits = (*model)(x);
//   for (auto& [name, p] : model->named_parameters()) ...   // "0.weight", "0.bias", "2.weight", ...
//
// Parameters and buffers are Tensor handles: the copy a module registers shares storage and
// autograd state with the member a subclass keeps (Linear::weight), so optimisers that update the
// storage in place and gradients accumulated by backward() are seen through both. to() replaces
// the registered tensors and calls parameters_moved() so subclasses refresh their members.
// Modules can be moved, not copied (a copy would share parameters silently).
//
// Several inputs or outputs (libtorch's forward of any signature + AnyModule, in C++ terms that
// a container can call): forward_many(inputs) -> outputs is the general entry point. Its default
// calls forward(x) with exactly one input; a module of two inputs or two outputs overrides
// forward_many (and may add a typed forward(a, b) of its own). Sequential passes the output list
// of one module on as the input list of the next. docs/nn.md shows both kinds.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nn/functional.h"
#include "nn/state_dict.h"

namespace tritium::nn {

using runtime::Tensor;

// What load_state_dict() reports (PyTorch's _IncompatibleKeys), in the model's / the dict's order.
struct LoadStateDictResult {
  std::vector<std::string> missing_keys;     // expected by the model, absent from the dict
  std::vector<std::string> unexpected_keys;  // in the dict, not expected by the model
};

class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  Module(Module&&) = default;
  Module& operator=(Module&&) = default;

  // The computation of a one-input, one-output module. The base class has none (a
  // tritium::Error names the module).
  virtual Tensor forward(const Tensor& x);
  // The general entry point (several inputs and/or outputs). The default requires one input and
  // returns {forward(x)}.
  virtual std::vector<Tensor> forward_many(const std::vector<Tensor>& inputs);
  Tensor operator()(const Tensor& x) { return forward(x); }
  // m(a, b, ...): two or more inputs go to forward_many.
  template <class... Ts>
    requires(std::is_convertible_v<const Ts&, const Tensor&> && ...)
  std::vector<Tensor> operator()(const Tensor& a, const Tensor& b, const Ts&... rest) {
    return forward_many({a, b, rest...});
  }

  // PyTorch's repr: "Linear(in_features=784, out_features=512, bias=True)", and for a module with
  // children the nested tree ("Sequential(\n  (0): Linear(...)\n  (1): ReLU()\n)").
  virtual std::string str() const;
  // What goes between the parentheses of this module's own line (PyTorch's extra_repr).
  virtual std::string extra_repr() const { return ""; }
  // The class name str() prints ("Linear").
  virtual std::string type_name() const { return "Module"; }

  // ---- walks (depth first, registration order; with recurse=false only this module's own; a
  // tensor reachable under several names, as a shared module's, is listed once under its first,
  // as PyTorch's remove_duplicate) ----
  std::vector<Tensor> parameters(bool recurse = true) const;
  // Dotted names: "weight", "0.weight", "encoder.0.bias".
  std::vector<std::pair<std::string, Tensor>> named_parameters(bool recurse = true) const;
  // Buffers (persistent or not).
  std::vector<Tensor> buffers(bool recurse = true) const;
  std::vector<std::pair<std::string, Tensor>> named_buffers(bool recurse = true) const;
  // Direct children, in registration order.
  std::vector<std::shared_ptr<Module>> children() const;
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& named_children() const { return children_; }
  // This module ("" first) and every descendant, each once (a module registered twice is listed
  // under its first name), pre-order. Pointers into the tree: valid while the tree lives.
  std::vector<std::pair<std::string, Module*>> named_modules();
  std::vector<std::pair<std::string, const Module*>> named_modules() const;
  std::vector<Module*> modules();
  // fn on every descendant, then on this module (PyTorch's order); returns *this.
  Module& apply(const std::function<void(Module&)>& fn);
  // Elements of the parameters (all, or those that require grad).
  int64_t num_parameters(bool trainable_only = false) const;

  // Sets the training flag of this module and every descendant (Dropout reads it).
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  // Sets requires_grad of every parameter (freezing / unfreezing); returns *this.
  Module& requires_grad_(bool on = true);

  // Drops the accumulated .grad of every parameter.
  void zero_grad();

  // Moves every parameter and buffer of the tree to `device`: each parameter becomes a new leaf
  // there with the same requires_grad. Build optimisers after moving: they hold the tensors.
  Module& to(Device device);
  // Converts the floating parameters and buffers (f16, bf16, f32, f64) to the floating `dtype`;
  // integer and bool buffers keep theirs (PyTorch's Module.to(dtype)). A non-floating dtype is
  // an error.
  Module& to(DType dtype);

  // ---- state dict --------------------------------------------------------------------------
  // Parameters and persistent buffers of the tree, in PyTorch's key order; the tensors are
  // detached handles sharing the module's storage (a copy is the caller's to make).
  StateDict state_dict() const;
  // Copies the dict's tensors into the parameters and buffers of the same names (in place, no
  // grad; floating values are converted to the parameter's floating dtype). Errors, raised before
  // anything is copied (so a failed load changes nothing): a shape mismatch (naming the key and
  // both shapes), a dtype of another kind (float into an integer buffer or back), and with
  // `strict` any missing or unexpected key (all named). Without strict they are returned.
  LoadStateDictResult load_state_dict(const StateDict& dict, bool strict = true);

  // ---- registration (public, as libtorch's) --------------------------------------------------
  // Registers a parameter and returns it; the tensor is made a leaf that requires grad (or not,
  // for a frozen parameter). Errors: an empty or dotted name, a name already used, an undefined
  // tensor, a tensor that is not a leaf.
  Tensor register_parameter(const std::string& name, Tensor tensor, bool requires_grad = true);
  // Registers a buffer (no grad; moved by to(); in state_dict() when persistent). Errors as above.
  Tensor register_buffer(const std::string& name, Tensor tensor, bool persistent = true);
  // Registers a child; errors as above, or a null module.
  std::shared_ptr<Module> register_module(const std::string& name, std::shared_ptr<Module> module);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    register_module(name, std::static_pointer_cast<Module>(module));
    return module;
  }
  // Replaces a registered child (libtorch's replace_module, PyTorch's add_module on a present name:
  // ModuleDict's assignment, SyncBatchNorm::convert_sync_batchnorm). Errors: no child of that name,
  // a null module.
  void replace_module(const std::string& name, std::shared_ptr<Module> module);

 protected:
  // The registered parameter / buffer `name` of this module (after to(), the moved tensor).
  Tensor parameter(const std::string& name) const;
  Tensor buffer(const std::string& name) const;
  // Called by to() once this module's parameters and buffers moved: subclasses holding handles
  // refresh them here.
  virtual void parameters_moved() {}
  // Replaces the whole list of children (ModuleList renumbers after an insert); names checked as
  // register_module's.
  void reset_children(std::vector<std::pair<std::string, std::shared_ptr<Module>>> children);

 private:
  struct Buffer {
    std::string name;
    Tensor tensor;
    bool persistent;
  };
  void check_new_name(const std::string& name, const char* what) const;
  void collect_parameters(const std::string& prefix, bool recurse, std::vector<std::pair<std::string, Tensor>>& out) const;
  void collect_buffers(const std::string& prefix, bool recurse, std::vector<std::pair<std::string, Tensor>>& out) const;
  void collect_state(const std::string& prefix, StateDict& out) const;
  // Live handles of what state_dict() lists, so load_state_dict can write them.
  void collect_state_targets(const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& out) const;
  template <class F> void convert_tensors(F&& convert);

  std::vector<std::pair<std::string, Tensor>> parameters_;
  std::vector<Buffer> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

// Python's repr of a float (1.0, 0.5, 1e-05): what PyTorch's reprs print for float arguments.
std::string python_float(double v);
// Python's repr of a tuple of ints: "(4,)", "(2, 3)".
std::string python_tuple(const std::vector<int64_t>& values);

// y = x W^T + b, W of shape [out_features, in_features], b of shape [out_features]. Initialised
// as PyTorch does: W and b uniform in [-1/sqrt(in_features), 1/sqrt(in_features)] (for W, this is
// kaiming_uniform_ with a = sqrt(5)), drawn from `gen` (W first, then b).
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true, Generator& gen = ops::default_generator());
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::string type_name() const override { return "Linear"; }

  int64_t in_features, out_features;
  Tensor weight;
  Tensor bias;  // undefined without bias

 protected:
  void parameters_moved() override;
};

class ReLU : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "ReLU"; }
};

// torch.nn.LayerNorm: normalises over the trailing dims normalized_shape; with
// elementwise_affine, a weight (ones) and a bias (zeros) of that shape.
class LayerNorm : public Module {
 public:
  // bias=false: a weight without a bias (PyTorch's LayerNorm(bias=False)).
  explicit LayerNorm(std::vector<int64_t> normalized_shape, double eps = 1e-5, bool elementwise_affine = true,
                     bool bias = true);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::string type_name() const override { return "LayerNorm"; }

  std::vector<int64_t> normalized_shape;
  double eps;
  Tensor weight, bias;  // undefined without elementwise_affine

 protected:
  void parameters_moved() override;
};

// Zeroes elements with probability p in training mode (scaling the rest by 1/(1-p)); the
// identity in eval mode. The mask is drawn from `gen`, which must outlive the module.
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5, Generator& gen = ops::default_generator());
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::string type_name() const override { return "Dropout"; }

  double p;

 private:
  Generator* gen_;
};

}  // namespace tritium::nn

// The containers (Sequential, ModuleList, ModuleDict) and the simple modules (activations,
// Identity, Flatten, ...), so that including nn/module.h gives the whole module set.
#include "nn/containers.h"
#include "nn/activation_modules.h"
#include "nn/simple_modules.h"
