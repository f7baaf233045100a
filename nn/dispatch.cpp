// The generic dispatch of a declared op (see nn/dispatch.h): dtype check, forward, and a recorded
// node that applies the declared derivative of each input that needs a gradient. Only what those
// derivatives read is saved (detached handles, so a node never keeps its own output's autograd
// state alive); nn::record reduces broadcast gradients (sum_to) and restores input dtypes.
#include "nn/dispatch.h"

#include <memory>
#include <utility>

#include "nn/autocast.h"
#include "nn/autograd.h"
#include "profiler/op_scope.h"

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

// Gradients from a backward that is not written in recorded ops (a fused kernel): under
// create_graph each is given a node whose own backward is PyTorch's "not implemented" error, so a
// double backward through it fails instead of silently missing a term.
std::vector<Tensor> not_differentiable_again(const OpDecl& op, const Tensor& grad, const ops::DerivativeContext& ctx,
                                             std::vector<Tensor> grads) {
  std::vector<Tensor> sources = ctx.saved_inputs();  // what the gradients depend on
  sources.push_back(grad);
  for (Tensor& g : grads) {
    if (!g.defined() || g.requires_grad()) continue;
    g = record(g, sources, op.node_name() + "Backward", [&op](const Tensor&) -> std::vector<Tensor> {
      fail("{}: the derivative for {}'s backward is not implemented (double backward through {} is not "
           "supported; its backward is a fused kernel)",
           op.name, op.name, op.name);
    });
  }
  return grads;
}

}  // namespace

std::vector<Tensor> call(const OpDecl& op, std::vector<Tensor> inputs, ops::Attrs attrs) {
  profiler::OpScope profiled(op.name, inputs);  // one flag check when no profile records
  inputs = autocast_inputs(op, std::move(inputs));  // AMP: the op's autocast class (nn/autocast.h)
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

  // Save what the derivatives of the needed inputs read: inputs with their history (a derivative
  // run under create_graph differentiates through them), outputs detached (no cycle).
  std::vector<Tensor> saved_in(inputs.size()), saved_out(outputs.size());
  auto save = [&](const std::string& name) {
    Tensor t;
    if (int i = op.input_index(name); i >= 0) t = saved_in[static_cast<size_t>(i)] = inputs[static_cast<size_t>(i)];
    else t = saved_out[static_cast<size_t>(op.output_index(name))] = outputs[static_cast<size_t>(op.output_index(name))].detach();
    check_savable(t, op.name);
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
    if (!grad_enabled()) return apply_derivatives(op, grad, *ctx);
    // create_graph: the formulas record, and a saved output differentiates through this node.
    ops::DerivativeContext recording = *ctx;
    auto meta = std::make_shared<AutogradMeta>();
    meta->requires_grad = true;
    meta->grad_fn = current_backward_node();
    recording.attach_output_history(std::move(meta));
    std::vector<Tensor> grads = apply_derivatives(op, grad, recording);
    if (!op.twice_differentiable) grads = not_differentiable_again(op, grad, recording, std::move(grads));
    return grads;
  });
  return outputs;
}

Tensor call(std::string_view name, std::vector<Tensor> inputs, ops::Attrs attrs) {
  return call(ops::op_decl(name), std::move(inputs), std::move(attrs)).front();
}

}  // namespace tritium::nn
