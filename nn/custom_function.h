// Custom autograd functions with a context, as libtorch's torch::autograd::Function<T>:
//
//   struct MulConstant : autograd::Function<MulConstant> {
//     static Tensor forward(autograd::AutogradContext* ctx, Tensor x, double c) {
//       ctx->saved_data["c"] = c;
//       return x * c;                     // runs with grad mode off
//     }
//     static autograd::tensor_list backward(autograd::AutogradContext* ctx, autograd::tensor_list g) {
//       double c = std::any_cast<double>(ctx->saved_data["c"]);
//       return {g[0] * c, Tensor()};      // one entry per forward argument (undefined: none)
//     }
//   };
//   Tensor y = MulConstant::apply(x, 2.0);
//
// apply() runs forward under no-grad and, when grad mode is on and a tensor argument requires
// grad, records a node named "<T>Backward" whose backward calls T::backward (with grad mode on
// under create_graph, so a backward written in recorded ops can be differentiated again).
// Differences from libtorch: forward returns one Tensor (not a tensor list); saved_data holds
// std::any (libtorch's IValue), read with std::any_cast.
#pragma once
#include <any>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <unordered_map>
#include <utility>
#include <vector>

#include "nn/autograd.h"

namespace tritium::autograd {

class AutogradContext {
 public:
  // Tensors the backward needs (inputs or the output); get_saved_variables returns them, checking
  // that none was modified in place since (PyTorch's version-counter error).
  void save_for_backward(tensor_list to_save);
  tensor_list get_saved_variables() const;
  // Inputs the forward modified in place: the output that is such an input becomes this node's
  // output (its history is rewritten). A leaf that requires grad cannot be dirty.
  void mark_dirty(const tensor_list& inputs);
  // Outputs that get no gradient (indices, masks): returned without history.
  void mark_non_differentiable(const tensor_list& outputs);
  void set_materialize_grads(bool value) { materialize_grads_ = value; }
  // Whether forward argument `index` needs a gradient (false for non-tensor arguments).
  bool needs_input_grad(size_t index) const;
  // Non-tensor values for the backward (libtorch's saved_data).
  std::unordered_map<std::string, std::any> saved_data;

  // ---- used by Function<T>::apply ----
  struct Saved {
    Tensor tensor;     // an input with its history, or the output detached
    uint64_t version;  // its storage's version when forward returned
    bool is_output;
  };
  // After forward: resolves what was saved and marked against the inputs and the output, and
  // records the node (see Function<T>::apply). Returns the output to hand to the caller.
  static Tensor finish(const std::shared_ptr<AutogradContext>& ctx, const std::type_info& type, tensor_list inputs,
                       Tensor output, std::function<tensor_list(AutogradContext*, tensor_list)> backward);

 private:
  tensor_list to_save_, dirty_, non_differentiable_;
  std::vector<Saved> saved_;
  std::vector<bool> needs_input_grad_;
  std::string name_;  // the node's name, for errors
  bool materialize_grads_ = true;
};

namespace detail {
template <class A>
void collect_tensor(tensor_list& inputs, const A& arg) {
  if constexpr (std::is_convertible_v<const A&, const Tensor&>) inputs.push_back(arg);
  else inputs.emplace_back();  // a non-tensor argument: no gradient
}
}  // namespace detail

template <class T>
struct Function {
  template <class... Args>
  static Tensor apply(Args&&... args) {
    using Result = decltype(T::forward(static_cast<AutogradContext*>(nullptr), std::forward<Args>(args)...));
    static_assert(std::is_convertible_v<Result, Tensor>,
                  "autograd::Function<T>: T::forward must return one Tensor (several outputs are not supported)");
    auto ctx = std::make_shared<AutogradContext>();
    tensor_list inputs;
    (detail::collect_tensor(inputs, args), ...);
    Tensor output;
    {
      nn::NoGradGuard no_grad;  // the forward's own ops record nothing, as libtorch's
      output = T::forward(ctx.get(), std::forward<Args>(args)...);
    }
    return AutogradContext::finish(ctx, typeid(T), std::move(inputs), std::move(output),
                                   [](AutogradContext* c, tensor_list g) { return T::backward(c, std::move(g)); });
  }
};

}  // namespace tritium::autograd
