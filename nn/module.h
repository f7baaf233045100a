// Modules, as torch.nn: a Module owns named parameters (leaf tensors that require grad) and
// named child modules; parameters() walks the tree, train()/eval() set the training flag of the
// whole tree, forward() computes with the differentiable API of nn/functional.h.
//
//   auto model = std::make_shared<nn::Sequential>(nn::Linear(784, 512, true, gen), nn::ReLU(),
//                                                 nn::Linear(512, 10, true, gen));
//   Tensor logits = (*model)(x);
//   for (auto& [name, p] : model->named_parameters()) ...   // "0.weight", "0.bias", "2.weight", ...
//
// Parameters are Tensor handles: the copy a module registers shares storage and autograd state
// with the member a subclass keeps (Linear::weight), so optimisers that update the storage in
// place and gradients accumulated by backward() are seen through both. Modules can be moved, not
// copied (a copy would share parameters silently).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nn/functional.h"

namespace tritium::nn {

using runtime::Tensor;

class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  Module(Module&&) = default;
  Module& operator=(Module&&) = default;

  // The computation. The base class has none (a tritium::Error names the module).
  virtual Tensor forward(const Tensor& x);
  Tensor operator()(const Tensor& x) { return forward(x); }

  // "Linear(in_features=784, out_features=512, bias=true)"; the base prints its type name.
  virtual std::string str() const;

  // This module's parameters and those of its descendants, depth first, in registration order.
  std::vector<Tensor> parameters() const;
  // The same with dotted names: "weight", "0.weight", "encoder.0.bias".
  std::vector<std::pair<std::string, Tensor>> named_parameters() const;
  // Direct children, in registration order.
  std::vector<std::shared_ptr<Module>> children() const;
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& named_children() const { return children_; }

  // Sets the training flag of this module and every descendant (Dropout reads it).
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // Drops the accumulated .grad of every parameter.
  void zero_grad();

  // Moves every parameter (and those of the descendants) to `device`: each becomes a new leaf
  // there with the same requires_grad. Build optimisers after moving: they hold the tensors.
  Module& to(Device device);

 protected:
  // The registered parameter `name` of this module (after to(), the moved tensor).
  Tensor parameter(const std::string& name) const;
  // Called by to() once this module's parameters moved: subclasses holding parameter handles
  // refresh them here.
  virtual void parameters_moved() {}

  // Registers a parameter and returns it; the tensor is made a leaf that requires grad.
  // Errors: an empty or dotted name, a name already used, an undefined tensor.
  Tensor register_parameter(const std::string& name, Tensor tensor);
  // Registers a child; errors as above, or a null module.
  std::shared_ptr<Module> register_module(const std::string& name, std::shared_ptr<Module> module);
  virtual std::string type_name() const { return "Module"; }

 private:
  void check_new_name(const std::string& name, const char* what) const;
  void collect(const std::string& prefix, std::vector<std::pair<std::string, Tensor>>& out) const;

  std::vector<std::pair<std::string, Tensor>> parameters_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

// y = x W^T + b, W of shape [out_features, in_features], b of shape [out_features]. Initialised
// as PyTorch does: W and b uniform in [-1/sqrt(in_features), 1/sqrt(in_features)] (for W, this is
// kaiming_uniform_ with a = sqrt(5)), drawn from `gen` (W first, then b).
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true, Generator& gen = ops::default_generator());
  Tensor forward(const Tensor& x) override;
  std::string str() const override;

  int64_t in_features, out_features;
  Tensor weight;
  Tensor bias;  // undefined without bias

 protected:
  std::string type_name() const override { return "Linear"; }
  void parameters_moved() override;
};

class ReLU : public Module {
 public:
  Tensor forward(const Tensor& x) override;

 protected:
  std::string type_name() const override { return "ReLU"; }
};

// torch.nn.LayerNorm: normalises over the trailing dims normalized_shape; with
// elementwise_affine, a weight (ones) and a bias (zeros) of that shape.
class LayerNorm : public Module {
 public:
  explicit LayerNorm(std::vector<int64_t> normalized_shape, double eps = 1e-5, bool elementwise_affine = true);
  Tensor forward(const Tensor& x) override;
  std::string str() const override;

  std::vector<int64_t> normalized_shape;
  double eps;
  Tensor weight, bias;  // undefined without elementwise_affine

 protected:
  std::string type_name() const override { return "LayerNorm"; }
  void parameters_moved() override;
};

// Zeroes elements with probability p in training mode (scaling the rest by 1/(1-p)); the
// identity in eval mode. The mask is drawn from `gen`, which must outlive the module.
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5, Generator& gen = ops::default_generator());
  Tensor forward(const Tensor& x) override;
  std::string str() const override;

  double p;

 protected:
  std::string type_name() const override { return "Dropout"; }

 private:
  Generator* gen_;
};

// Applies its modules in order; children are named "0", "1", ...
class Sequential : public Module {
 public:
  Sequential() = default;
  explicit Sequential(std::vector<std::shared_ptr<Module>> modules);
  // Sequential(Linear(...), ReLU(), ...): each module is moved into a shared_ptr.
  template <class... Ms>
    requires(sizeof...(Ms) > 0 && (std::is_base_of_v<Module, std::remove_cvref_t<Ms>> && ...) &&
             !(sizeof...(Ms) == 1 && (std::is_same_v<std::remove_cvref_t<Ms>, Sequential> && ...)))
  explicit Sequential(Ms&&... modules) {
    (push_back(std::make_shared<std::remove_cvref_t<Ms>>(std::forward<Ms>(modules))), ...);
  }

  void push_back(std::shared_ptr<Module> module);
  size_t size() const { return named_children().size(); }
  // The i-th module (errors when out of range).
  Module& operator[](size_t i) const;

  Tensor forward(const Tensor& x) override;
  std::string str() const override;

 protected:
  std::string type_name() const override { return "Sequential"; }
};

}  // namespace tritium::nn
