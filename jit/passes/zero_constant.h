// Whether a value is a zero constant (a scalar 0 or a block of zeros, splat or not): the
// accumulator patterns of combine_dot_add and accumulator_init look for it.
#pragma once
#include "ir/ir.h"

namespace tritium::jit {

inline bool is_zero_constant(const ir::Value* v) {
  const ir::Op* d = v->def;
  if (!d) return false;
  if (d->kind == ir::OpKind::Splat) return is_zero_constant(d->operand(0));
  return d->kind == ir::OpKind::Constant && d->attrs.ival == 0 && d->attrs.fval == 0.0;
}

}  // namespace tritium::jit
