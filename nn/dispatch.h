// The one generic dispatch of differentiable ops: checks the call against its declaration
// (ops/decl/op_decl.h), runs the forward, and, when grad mode is on and an input requires grad,
// records a node whose backward applies the declared derivatives. Every differentiable function
// of nn/functional.h is a call of this.
#pragma once
#include <string_view>
#include <vector>

#include "ops/decl/op_decl.h"

namespace tritium::nn {

// All outputs of the op (the first is the differentiable one; the others carry no history).
std::vector<Tensor> call(const ops::OpDecl& op, std::vector<Tensor> inputs, ops::Attrs attrs = {});

// The first output of the op declared as `name`.
Tensor call(std::string_view name, std::vector<Tensor> inputs, ops::Attrs attrs = {});

}  // namespace tritium::nn
