// The generic dispatch of a declared op (see nn/dispatch.h): dtype check, forward, and a recorded
// node that applies the declared derivative of each input that needs a gradient. Only what those
// derivatives read is saved (detached handles, so a node never keeps its own output's autograd
// state alive); nn::record reduces broadcast gradients (sum_to) and restores input dtypes.
#include "nn/dispatch.h"

#include <memory>
#include <utility>

#include "nn/autograd.h"

namespace tritium::nn {
namespace {

using ops::OpDecl;

std::vector<Tensor> apply_derivatives(const OpDecl& op, const Tensor& grad, const ops::DerivativeContext& ctx) {
  if (op.fused_backward) {
    std::vector<Tensor> grads = op.fused_backward(grad, ctx);
    if (grads.size() != ctx.input_shapes().size())
      fail("{} backward: the fused backward returned {} gradients for {} inputs", op.name, grads.size(),
           ctx.input_shapes().size());
    return grads;
  }
  std::vector<Tensor> grads(op.inputs.size());
  for (const ops::Derivative& d : op.derivatives) {
    auto i = static_cast<size_t>(op.input_index(d.input));
    if (ctx.needs_input_grad(d.input)) grads[i] = d.formula(grad, ctx);
  }
  return grads;
}

}  // namespace

std::vector<Tensor> call(const OpDecl& op, std::vector<Tensor> inputs, ops::Attrs attrs) {
  const DType declared = op.check_dtypes(inputs, attrs);

  // Which gradients will be wanted, decided at forward time so that the backward skips the
  // inputs that do not require grad (a model's input batch).
  std::vector<bool> needs(inputs.size(), false);
  bool any = false;
  if (grad_enabled() && op.differentiable())
    for (size_t i = 0; i < inputs.size(); ++i) {
      needs[i] = op.arg_of(i).differentiable && inputs[i].defined() && inputs[i].requires_grad();
      any = any || needs[i];
    }

  std::vector<Tensor> outputs = op.forward(inputs, attrs);
  if (outputs.size() != op.outputs.size())
    fail("{}: the forward returned {} outputs, its declaration names {}", op.name, outputs.size(), op.outputs.size());
  if (outputs[0].dtype() != declared)
    fail("{}: the forward returned dtype {} but the declared dtype rule gives {} (fix the declaration in ops/decl/)",
         op.name, dtype_name(outputs[0].dtype()), dtype_name(declared));
  for (Tensor& out : outputs) out.set_autograd(nullptr);  // outputs after the first never get history
  if (!any) return outputs;

  // Save what the derivatives of the needed inputs read.
  std::vector<Tensor> saved_in(inputs.size()), saved_out(outputs.size());
  auto save = [&](const std::string& name) {
    if (int i = op.input_index(name); i >= 0) saved_in[static_cast<size_t>(i)] = inputs[static_cast<size_t>(i)].detach();
    else saved_out[static_cast<size_t>(op.output_index(name))] = outputs[static_cast<size_t>(op.output_index(name))].detach();
  };
  if (op.fused_backward) {
    for (const std::string& s : op.fused_saves) save(s);
  } else {
    for (const ops::Derivative& d : op.derivatives)
      if (needs[static_cast<size_t>(op.input_index(d.input))])
        for (const std::string& s : d.saves) save(s);
  }
  std::vector<ops::Shape> shapes(inputs.size());
  std::vector<Tensor> edges(inputs.size());  // only the inputs that need a gradient get an edge
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].defined()) shapes[i] = inputs[i].shape();
    if (needs[i]) edges[i] = inputs[i];
  }
  auto ctx = std::make_shared<const ops::DerivativeContext>(op, std::move(saved_in), std::move(saved_out),
                                                            std::move(shapes), needs, std::move(attrs));
  outputs[0] = record(std::move(outputs[0]), edges, op.node_name(), [&op, ctx](const Tensor& grad) {
    return apply_derivatives(op, grad, *ctx);
  });
  return outputs;
}

Tensor call(std::string_view name, std::vector<Tensor> inputs, ops::Attrs attrs) {
  return call(ops::op_decl(name), std::move(inputs), std::move(attrs)).front();
}

}  // namespace tritium::nn
